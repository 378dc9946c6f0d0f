package org.tfrecordio.spark;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.FileAlreadyExistsException;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@link FailedWriteCleanup}: the directory a failed write created goes when it holds committer
 * leftovers only, and the write's own error is rethrown; a path that existed before the write,
 * or one that the write refused as existing, is left alone.
 */
public class FailedWriteCleanupTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  private final Configuration conf = new Configuration();

  /** A write that creates {@code dir/_temporary/0} and {@code dir/extra} (if given), then fails. */
  private static Runnable failing(File dir, String extra, RuntimeException error) {
    return () -> {
      try {
        Files.createDirectories(new File(dir, "_temporary/0").toPath());
        if (extra != null) {
          Files.write(new File(dir, extra).toPath(), new byte[] {1});
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      throw error;
    };
  }

  private static RuntimeException thrownBy(String path, Configuration conf, Runnable write) {
    try {
      FailedWriteCleanup.run(path, conf, write);
    } catch (RuntimeException e) {
      return e;
    }
    fail("the write should have failed");
    return null;
  }

  @Test
  public void aFailedWriteToANewPathLeavesNothing() {
    File out = new File(tmp.getRoot(), "a/out");
    RuntimeException error = new IllegalStateException("job aborted");
    assertSame(error, thrownBy(out.toURI().toString(), conf, failing(out, null, error)));
    assertFalse(out.exists());
    assertEquals(0, error.getSuppressed().length);
  }

  @Test
  public void aPathWithoutSchemeIsResolvedAsTheWriteResolvesIt() {
    File out = new File(tmp.getRoot(), "out");
    RuntimeException error = new IllegalStateException("job aborted");
    assertSame(error, thrownBy(out.getPath(), conf, failing(out, null, error)));
    assertFalse(out.exists());
  }

  @Test
  public void aFailedWriteThatLeftDataKeepsIt() {
    File out = new File(tmp.getRoot(), "out");
    RuntimeException error = new IllegalStateException("job commit failed");
    assertSame(error, thrownBy(out.toURI().toString(), conf,
        failing(out, "part-r-00000.tfrecord", error)));
    assertTrue(new File(out, "part-r-00000.tfrecord").exists());
    assertTrue(new File(out, "_temporary/0").exists());
  }

  @Test
  public void aPathThatExistedBeforeIsNeverTouched() throws IOException {
    File out = tmp.newFolder("out");
    RuntimeException error = new IllegalStateException("job aborted");
    assertSame(error, thrownBy(out.toURI().toString(), conf, failing(out, null, error)));
    assertTrue(new File(out, "_temporary/0").exists());
  }

  @Test
  public void theRefusalOfAnExistingPathRemovesNothing() {
    // Another writer created the path between the check and the write's own check.
    File out = new File(tmp.getRoot(), "out");
    RuntimeException error = new RuntimeException(
        new FileAlreadyExistsException("Output directory " + out + " already exists"));
    assertSame(error, thrownBy(out.toURI().toString(), conf, failing(out, null, error)));
    assertTrue(new File(out, "_temporary/0").exists());
  }

  @Test
  public void aSucceedingWriteKeepsItsOutput() {
    File out = new File(tmp.getRoot(), "out");
    FailedWriteCleanup.run(out.toURI().toString(), conf,
        () -> assertTrue(new File(out, "_temporary").mkdirs()));
    assertTrue(new File(out, "_temporary").exists());
  }

  @Test
  public void anUncachedFileSystemIsClosedAndCleansUpToo() {
    Configuration uncached = new Configuration(conf);
    uncached.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
    uncached.setBoolean("fs.file.impl.disable.cache", true);
    File out = new File(tmp.getRoot(), "out");
    RuntimeException error = new IllegalStateException("job aborted");
    assertSame(error, thrownBy(out.toURI().toString(), uncached, failing(out, "_SUCCESS",
        error)));
    assertFalse(out.exists());
  }
}
