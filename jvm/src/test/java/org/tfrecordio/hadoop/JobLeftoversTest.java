package org.tfrecordio.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.Before;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@link JobLeftovers}: a directory holding only what committers leave is removed; one holding
 * any other file, at any depth, is kept untouched.
 */
public class JobLeftoversTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  private FileSystem raw;
  private File out;

  @Before
  public void setUp() throws IOException {
    raw = FileSystem.getLocal(new Configuration()).getRawFileSystem();
    out = new File(tmp.getRoot(), "out");
  }

  private void touch(String relative) throws IOException {
    File f = new File(out, relative);
    f.getParentFile().mkdirs();
    Files.write(f.toPath(), new byte[] {1, 2, 3});
  }

  private void mkdir(String relative) {
    assertTrue(new File(out, relative).mkdirs());
  }

  private Path outPath() {
    return new Path(out.toURI());
  }

  private List<String> tree() throws IOException {
    try (Stream<java.nio.file.Path> walk = Files.walk(out.toPath())) {
      return walk.map(p -> out.toPath().relativize(p).toString()).sorted()
          .collect(Collectors.toList());
    }
  }

  @Test
  public void committerEntriesAreLeftovers() {
    for (String name : new String[] {"_temporary", "_SUCCESS", ".spark-staging-0a1b",
        "__magic", "__magic_job-0a1b", "._SUCCESS.crc", ".part-0.crc"}) {
      assertTrue(name, JobLeftovers.isLeftover(name, Set.of(name)));
    }
    for (String name : new String[] {"part-00000.tfrecord", "_part-0.tfindex", "data",
        ".hidden", "_temporary2", "__magicx", "k=1", ".crc", "..crc"}) {
      assertFalse(name, JobLeftovers.isLeftover(name, Set.of(name)));
    }
    // The checksum of a file beside it is that file's: not a leftover.
    assertFalse(JobLeftovers.isLeftover(".part-0.crc", Set.of(".part-0.crc", "part-0")));
  }

  @Test
  public void aDirectoryOfLeftoversOnlyIsRemoved() throws IOException {
    touch("_temporary/0/_temporary/attempt_1/part-r-00000.tfrecord");
    touch("_SUCCESS");
    touch("._SUCCESS.crc");
    touch(".spark-staging-0a1b/k=1/part-00000.tfrecord");
    touch("__magic_job-0a1b/x.pending");
    mkdir("__magic");
    mkdir("k=1/j=2"); // an empty partition directory
    touch("k=2/_temporary/0/x");
    touch(".orphan.crc");
    assertTrue(JobLeftovers.removeIfOnlyLeftovers(raw, outPath()));
    assertFalse(out.exists());
    assertTrue(tmp.getRoot().exists());
  }

  @Test
  public void anEmptyDirectoryIsRemoved() throws IOException {
    mkdir("");
    assertTrue(JobLeftovers.removeIfOnlyLeftovers(raw, outPath()));
    assertFalse(out.exists());
  }

  @Test
  public void aMissingDirectoryIsNothingToRemove() throws IOException {
    assertTrue(JobLeftovers.removeIfOnlyLeftovers(raw, outPath()));
    assertFalse(out.exists());
  }

  @Test
  public void aDirectoryHoldingAnyOtherFileIsKeptWhole() throws IOException {
    for (String other : new String[] {"part-r-00000.tfrecord", "k=1/part-00000.tfrecord",
        "k=1/j=2/notes.txt", ".hidden", "_part-r-00000.tfrecord.tfindex", "x.crc"}) {
      touch("_temporary/0/x");
      touch("_SUCCESS");
      mkdir("k=3");
      touch(other);
      List<String> before = tree();
      assertFalse(other, JobLeftovers.removeIfOnlyLeftovers(raw, outPath()));
      assertEquals(other, before, tree());
      org.apache.hadoop.fs.FileUtil.fullyDelete(out);
    }
  }

  @Test
  public void aFileWithItsChecksumIsKept() throws IOException {
    touch("part-0");
    touch(".part-0.crc");
    assertFalse(JobLeftovers.removeIfOnlyLeftovers(raw, outPath()));
    assertTrue(new File(out, "part-0").exists());
    assertTrue(new File(out, ".part-0.crc").exists());
  }

  @Test
  public void aFileIsKept() throws IOException {
    assertTrue(out.getParentFile().exists());
    Files.write(out.toPath(), new byte[] {1});
    assertFalse(JobLeftovers.removeIfOnlyLeftovers(raw, outPath()));
    assertTrue(out.isFile());
  }

  @Test
  public void theChecksummedLocalFileSystemRemovesLeftoversWithTheirChecksums()
      throws IOException {
    FileSystem local = FileSystem.getLocal(new Configuration());
    Path success = new Path(outPath(), "_SUCCESS");
    local.create(success).close(); // writes ._SUCCESS.crc beside it, which it does not list
    local.mkdirs(new Path(outPath(), "_temporary/0"));
    assertTrue(new File(out, "._SUCCESS.crc").exists());
    assertTrue(JobLeftovers.removeIfOnlyLeftovers(local, outPath()));
    assertFalse(out.exists());
  }
}
