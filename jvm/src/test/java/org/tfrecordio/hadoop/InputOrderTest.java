package org.tfrecordio.hadoop;

import static org.junit.Assert.assertEquals;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.testutil.Records;

/**
 * Both InputFormats plan the files of a directory in the order of their paths, whatever order
 * the file system lists them in: a local directory lists its files in no particular order.
 */
public class InputOrderTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  /** 40 files, made in a shuffled order; their names sorted. */
  private List<String> files() throws IOException {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      names.add(String.format("part-%05d.tfrecord", i));
    }
    List<String> made = new ArrayList<>(names);
    Collections.shuffle(made, new Random(7));
    for (String name : made) {
      Records.writeLocal(new File(tmp.getRoot(), name),
          Records.frameAll(List.of(name.getBytes(java.nio.charset.StandardCharsets.UTF_8))));
    }
    return names;
  }

  @Test
  public void theNewApiPlansFilesInTheOrderOfTheirPaths() throws IOException {
    List<String> names = files();
    Job job = Job.getInstance(new Configuration());
    FileInputFormat.setInputPaths(job, new Path(tmp.getRoot().toURI()));
    List<String> planned = new ArrayList<>();
    for (InputSplit split : new org.tfrecordio.mapreduce.TFRecordInputFormat().getSplits(job)) {
      planned.add(((FileSplit) split).getPath().getName());
    }
    assertEquals(names, planned);
  }

  @Test
  public void theOldApiPlansFilesInTheOrderOfTheirPaths() throws IOException {
    List<String> names = files();
    JobConf job = new JobConf(new Configuration());
    org.apache.hadoop.mapred.FileInputFormat.setInputPaths(job, new Path(tmp.getRoot().toURI()));
    List<String> planned = new ArrayList<>();
    for (org.apache.hadoop.mapred.InputSplit split
        : new org.tfrecordio.mapred.TFRecordInputFormat().getSplits(job, 1)) {
      planned.add(((org.apache.hadoop.mapred.FileSplit) split).getPath().getName());
    }
    assertEquals(names, planned);
  }
}
