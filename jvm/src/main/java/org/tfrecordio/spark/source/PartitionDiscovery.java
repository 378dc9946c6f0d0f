package org.tfrecordio.spark.source;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.tfrecordio.hadoop.SplitPlanner;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.spark.PartitionPaths;

/**
 * Finds the data files under input paths and their Hive-style partition directories
 * ({@code col=value/}, decoded by {@link PartitionPaths}), on any Hadoop file system.
 */
final class PartitionDiscovery {
  private PartitionDiscovery() {}

  /**
   * Whether an entry listed under an input path is left out, as Spark's file index has it for
   * directories: a name that starts with {@code .}, or with {@code _} and holds no {@code =}
   * ({@code _SUCCESS/}, {@code _temporary/}; but {@code _split=train/} is a partition
   * directory). A file is left out when its name starts with {@code _} or {@code .}, as
   * Hadoop's FileInputFormat has it ({@code _SUCCESS}, the sidecar indexes {@code _NAME.tfindex},
   * checksum files). So is a file that {@code hadoop fs -put} is still copying
   * ({@link SplitPlanner#COPYING_SUFFIX}), as Spark's file index has it.
   */
  static boolean hidden(String name, boolean directory) {
    if (name.startsWith(".") || name.endsWith(SplitPlanner.COPYING_SUFFIX)) {
      return true;
    }
    return name.startsWith("_") && (!directory || name.indexOf('=') < 0);
  }

  /** What {@link #discover} found under the input paths. */
  static final class Layout {
    /** Partition column names, outermost first (empty: not partitioned). */
    final List<String> columns = new ArrayList<>();
    /** For each partition column, its distinct values (null for the default partition). */
    final List<Set<String>> values = new ArrayList<>();
    /** True if data files lie in subdirectories (read recursively). */
    boolean nested;
    /** Number of data files. */
    long files;
    /** The data files, in the order listed. */
    final List<FileStatus> found = new ArrayList<>();
  }

  /**
   * Lists the data files under a comma-separated list of paths or globs (leaving out what
   * {@link #hidden} says, below each path and among a glob's matches; a path given as it is,
   * without a glob, is never left out) and works out their partition directories.
   *
   * @throws FileNotFoundException a path that does not exist or a glob that matches nothing
   * @throws SchemaException partition directories that do not agree
   */
  static Layout discover(Configuration conf, String paths) throws IOException {
    Job job = Job.getInstance(conf);
    FileInputFormat.setInputPaths(job, paths);
    return discover(conf, FileInputFormat.getInputPaths(job), paths);
  }

  /** {@link #discover(Configuration, String)} of parsed input paths ({@code paths} names them). */
  static Layout discover(Configuration conf, Path[] inputs, String paths) throws IOException {
    Set<List<String>> dirs = new LinkedHashSet<>();
    Layout layout = new Layout();
    for (Path p : inputs) {
      FileSystem fs = p.getFileSystem(conf);
      Path given = fs.makeQualified(p);
      FileStatus[] all = fs.globStatus(p);
      if (all == null) {
        throw new FileNotFoundException("Input path does not exist: " + p);
      }
      List<FileStatus> matches = new ArrayList<>();
      for (FileStatus m : all) {
        if (m.getPath().equals(given) || !hidden(m.getPath().getName(), m.isDirectory())) {
          matches.add(m);
        }
      }
      if (matches.isEmpty()) {
        throw new FileNotFoundException("Input Pattern " + p + " matches 0 files");
      }
      for (FileStatus m : matches) {
        if (m.isDirectory()) {
          walk(fs, m.getPath(), new ArrayList<>(), dirs, layout);
        } else {
          dirs.add(new ArrayList<>());
          layout.files++;
          layout.found.add(m);
        }
      }
    }
    // Partitioned: every data directory is col=value segments of the same columns.
    // Not partitioned: no col=value segment anywhere. Anything else is a conflict.
    List<String> first = null;
    List<String> names = null;
    boolean anyPartitionSegment = false;
    boolean consistent = true;
    for (List<String> segs : dirs) {
      if (!segs.isEmpty()) {
        layout.nested = true;
      }
      List<String> segNames = new ArrayList<>();
      for (String seg : segs) {
        int eq = seg.indexOf('=');
        segNames.add(eq > 0 ? PartitionPaths.unescape(seg.substring(0, eq)) : null);
        anyPartitionSegment |= eq > 0;
      }
      if (first == null) {
        first = segs;
        names = segNames;
      }
      if (segNames.isEmpty() || segNames.contains(null) || !segNames.equals(names)) {
        consistent = false;
        if (anyPartitionSegment) {
          throw conflicting(paths, first, segs);
        }
      }
    }
    if (anyPartitionSegment && consistent) {
      if (new LinkedHashSet<>(names).size() != names.size()) {
        throw new SchemaException("partition directories under " + paths + " repeat a column: "
            + String.join("/", first));
      }
      layout.columns.addAll(names);
      for (int i = 0; i < names.size(); i++) {
        layout.values.add(new LinkedHashSet<>());
      }
      for (List<String> segs : dirs) {
        for (int i = 0; i < segs.size(); i++) {
          layout.values.get(i).add(PartitionPaths.value(segs.get(i)));
        }
      }
    }
    return layout;
  }

  private static SchemaException conflicting(String paths, List<String> a, List<String> b) {
    return new SchemaException("conflicting directory structure under " + paths + ": '"
        + String.join("/", a) + "' and '" + String.join("/", b) + "'; data files must all lie "
        + "in col=value directories of the same columns, or none of them may");
  }

  private static void walk(FileSystem fs, Path dir, List<String> segs, Set<List<String>> dirs,
      Layout layout) throws IOException {
    boolean hasFiles = false;
    for (FileStatus st : fs.listStatus(dir)) {
      if (hidden(st.getPath().getName(), st.isDirectory())) {
        continue;
      }
      if (st.isDirectory()) {
        List<String> sub = new ArrayList<>(segs);
        sub.add(st.getPath().getName());
        walk(fs, st.getPath(), sub, dirs, layout);
      } else {
        hasFiles = true;
        layout.files++;
        layout.found.add(st);
      }
    }
    if (hasFiles) {
      dirs.add(segs);
    }
  }
}
