package org.tfrecordio.spark;

import java.io.IOException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkThrowable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tfrecordio.hadoop.JobLeftovers;

/**
 * Runs, on the driver, a write that must create its output path, and takes back what it
 * created if it fails: the job's committer makes the directory before any task runs, and a
 * failed job would leave it (empty, or with the committer's staging area), so that running
 * the same write again is refused because the path exists.
 *
 * <p>When the write throws, the path did not exist before it, and the failure is not the
 * refusal of an existing path (which another writer may have created meanwhile),
 * {@link JobLeftovers#removeIfOnlyLeftovers} removes the directory if it holds committer
 * leftovers only; then the write's own error is rethrown, with any error of the cleanup added
 * as suppressed. A path that existed before the write is never touched.
 */
public final class FailedWriteCleanup {
  private static final Logger LOG = LoggerFactory.getLogger(FailedWriteCleanup.class);
  /** Spark's error condition for a save mode {@code errorifexists} write to an existing path. */
  private static final String PATH_ALREADY_EXISTS = "PATH_ALREADY_EXISTS";

  private FailedWriteCleanup() {}

  /**
   * Runs {@code write}, which writes to {@code path} (resolved with {@code conf}, as the write
   * resolves it), cleaning up as the class says if it throws.
   */
  public static void run(String path, Configuration conf, Runnable write) {
    Path out = new Path(path);
    FileSystem fs;
    boolean existed;
    try {
      fs = out.getFileSystem(conf);
      out = fs.makeQualified(out);
      existed = fs.exists(out);
    } catch (IOException | RuntimeException e) {
      // The write will meet the same problem and report it; there is nothing to clean up.
      LOG.debug("Cannot check {} before the write; no cleanup if it fails", path, e);
      write.run();
      return;
    }
    try {
      write.run();
    } catch (Throwable t) {
      if (!existed && !refusesExistingPath(t)) {
        try {
          JobLeftovers.removeIfOnlyLeftovers(fs, out);
        } catch (IOException | RuntimeException e) {
          LOG.warn("Could not remove what the failed write left in {}", out, e);
          t.addSuppressed(e);
        }
      }
      throw t;
    } finally {
      closeIfUncached(fs, out, conf);
    }
  }

  /** Whether {@code t}, or one of its causes, is a writer's refusal of an existing path. */
  @SuppressWarnings("deprecation") // getErrorClass: Spark 3.5 has no getCondition
  static boolean refusesExistingPath(Throwable t) {
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Throwable e = t; e != null && seen.add(e); e = e.getCause()) {
      if (e instanceof org.apache.hadoop.mapred.FileAlreadyExistsException
          || e instanceof org.apache.hadoop.fs.FileAlreadyExistsException
          || (e instanceof SparkThrowable
              && PATH_ALREADY_EXISTS.equals(((SparkThrowable) e).getErrorClass()))) {
        return true;
      }
    }
    return false;
  }

  /** Closes {@code fs} if {@code conf} has its scheme's cache off: then no one else holds it. */
  private static void closeIfUncached(FileSystem fs, Path out, Configuration conf) {
    String scheme = out.toUri().getScheme();
    if (scheme != null && conf.getBoolean("fs." + scheme + ".impl.disable.cache", false)) {
      try {
        fs.close();
      } catch (IOException e) {
        LOG.debug("Closing the file system of {}", out, e);
      }
    }
  }
}
