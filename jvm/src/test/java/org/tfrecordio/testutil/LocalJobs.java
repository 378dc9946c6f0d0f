package org.tfrecordio.testutil;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.tfrecordio.codec.TFRecordIndex;
import org.tfrecordio.codec.TFRecordReader;

/** Settings and checks for real MapReduce jobs run by the LocalJobRunner. */
public final class LocalJobs {
  private LocalJobs() {}

  /** A configuration for local jobs that keeps every directory inside {@code dir}. */
  public static Configuration conf(File dir) {
    Configuration conf = new Configuration();
    conf.set("mapreduce.framework.name", "local");
    conf.set("fs.defaultFS", "file:///");
    conf.set("hadoop.tmp.dir", new File(dir, "hadoop-tmp").getAbsolutePath());
    conf.set("mapreduce.jobtracker.staging.root.dir", new File(dir, "staging").getAbsolutePath());
    conf.set("mapreduce.cluster.local.dir", new File(dir, "local").getAbsolutePath());
    // Job.waitForCompletion polls every 5 s by default.
    conf.setInt("mapreduce.client.completion.pollinterval", 50);
    conf.setInt("mapreduce.client.progressmonitor.pollinterval", 50);
    return conf;
  }

  /** The local path of a {@code file:} directory. */
  public static File local(Path dir) {
    return new File(dir.toUri());
  }

  /** Names of the visible files of a directory ending with {@code suffix}, sorted. */
  public static List<String> files(File dir, String suffix) {
    List<String> names = new ArrayList<>();
    for (String name : dir.list()) {
      if (name.endsWith(suffix) && !name.startsWith("_") && !name.startsWith(".")) {
        names.add(name);
      }
    }
    names.sort(null);
    return names;
  }

  /** Reads a TFRecord file with the codec, checking that its index matches it. */
  public static List<byte[]> readIndexedFile(File file) throws IOException {
    byte[] bytes = Records.readLocal(file);
    File index = new File(file.getParentFile(), TFRecordIndex.indexName(file.getName()));
    long[] bounds;
    try (java.io.InputStream in = new java.io.FileInputStream(index)) {
      bounds = TFRecordIndex.read(in, bytes.length);
    }
    if (bounds == null) {
      throw new AssertionError("index " + index + " does not match " + file);
    }
    List<byte[]> records = new ArrayList<>();
    try (TFRecordReader r = new TFRecordReader(new java.io.ByteArrayInputStream(bytes),
        file.getName())) {
      while (r.next()) {
        if (r.getRecordOffset() != bounds[records.size()]) {
          throw new AssertionError("index of " + file + " is off at record " + records.size());
        }
        records.add(Arrays.copyOfRange(r.getData(), r.getDataOffset(),
            r.getDataOffset() + r.getLength()));
      }
    }
    return records;
  }

  /** Records sorted by content: job output order across map tasks is not the input order. */
  public static List<byte[]> sorted(List<byte[]> records) {
    List<byte[]> s = new ArrayList<>(records);
    s.sort((a, b) -> new BytesWritable(a).compareTo(new BytesWritable(b)));
    return s;
  }
}
