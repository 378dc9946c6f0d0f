package org.tfrecordio.hadoop;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a failed write job leaves in the output directory it created, and its removal. Output
 * committers create the directory when the job is set up, before any task runs, and remove only
 * their staging area when the job aborts: a failed write to a new path leaves that path behind,
 * and writers that require a new path then refuse to run again.
 *
 * <p>The leftovers are entries that only committers and Spark write: {@code _temporary}
 * (Hadoop's {@code FileOutputCommitter}, the manifest committer of ABFS and GCS),
 * {@code _SUCCESS}, {@code .spark-staging-*} (Spark's commit protocol), {@code __magic} and
 * {@code __magic_job-*} (S3A's magic committer), and checksum files {@code .NAME.crc} of those
 * or of no file beside them. A directory holding anything else (a data file, whoever wrote it,
 * at any depth) is kept whole. Only Hadoop's {@link FileSystem} API is used (list, delete), so
 * object stores, whose directories may be marker objects or only prefixes, are handled as HDFS.
 */
public final class JobLeftovers {
  private static final Logger LOG = LoggerFactory.getLogger(JobLeftovers.class);
  private static final String CRC_PREFIX = ".";
  private static final String CRC_SUFFIX = ".crc";

  private JobLeftovers() {}

  /** Whether {@code name} is an entry that output committers or Spark's commit protocols make. */
  public static boolean isCommitterEntry(String name) {
    return name.equals("_temporary") || name.equals("_SUCCESS")
        || name.startsWith(".spark-staging-") || name.equals("__magic")
        || name.startsWith("__magic_job-");
  }

  /**
   * Whether the entry {@code name} of a directory whose entries are {@code siblings} is a
   * leftover: a committer's entry, or the checksum file of one or of no sibling.
   */
  static boolean isLeftover(String name, Set<String> siblings) {
    if (isCommitterEntry(name)) {
      return true;
    }
    if (name.length() > CRC_PREFIX.length() + CRC_SUFFIX.length()
        && name.startsWith(CRC_PREFIX) && name.endsWith(CRC_SUFFIX)) {
      String of = name.substring(CRC_PREFIX.length(), name.length() - CRC_SUFFIX.length());
      return isCommitterEntry(of) || !siblings.contains(of);
    }
    return false;
  }

  /**
   * Removes {@code dir} if it holds leftovers only (subdirectories holding leftovers only
   * included); keeps it, untouched, if it holds anything else or is a file.
   *
   * <p>Leftovers are deleted first, then the directories, deepest first and non-recursively,
   * so that a file written into one of them in the meantime makes that delete fail rather than
   * go with it.
   *
   * @return true if {@code dir} is gone (or was never there); false if it was kept
   * @throws IOException if listing or deleting fails (some leftovers may be gone then)
   */
  public static boolean removeIfOnlyLeftovers(FileSystem fs, Path dir) throws IOException {
    FileStatus status;
    try {
      status = fs.getFileStatus(dir);
    } catch (FileNotFoundException e) {
      return true;
    }
    if (!status.isDirectory()) {
      LOG.warn("Keeping {}: a file, not the directory of a failed job", dir);
      return false;
    }
    List<Path> leftovers = new ArrayList<>();
    List<Path> dirs = new ArrayList<>();
    Path other = plan(fs, dir, leftovers, dirs);
    if (other != null) {
      LOG.warn("Keeping {} after the failed job: it holds {}, which no committer leaves", dir,
          other);
      return false;
    }
    for (Path p : leftovers) {
      LOG.debug("Deleting the leftover {}", p);
      fs.delete(p, true);
    }
    for (int i = dirs.size() - 1; i >= 0; i--) {
      fs.delete(dirs.get(i), false);
    }
    boolean gone = !fs.exists(dir);
    if (gone) {
      LOG.info("Removed {}, which the failed job created, and the committer's leftovers in it",
          dir);
    } else {
      LOG.warn("Could not remove {}, which the failed job created", dir);
    }
    return gone;
  }

  /**
   * Adds the leftovers under {@code dir} to {@code leftovers} and it and its other
   * subdirectories to {@code dirs} (parents before children); returns the first entry that is
   * neither, or null.
   */
  private static Path plan(FileSystem fs, Path dir, List<Path> leftovers, List<Path> dirs)
      throws IOException {
    FileStatus[] entries;
    try {
      entries = fs.listStatus(dir);
    } catch (FileNotFoundException e) { // gone meanwhile
      return null;
    }
    dirs.add(dir);
    Set<String> names = new HashSet<>();
    for (FileStatus e : entries) {
      names.add(e.getPath().getName());
    }
    for (FileStatus e : entries) {
      Path p = e.getPath();
      if (isLeftover(p.getName(), names)) {
        leftovers.add(p);
      } else if (e.isDirectory()) {
        Path other = plan(fs, p, leftovers, dirs);
        if (other != null) {
          return other;
        }
      } else {
        return p;
      }
    }
    return null;
  }
}
