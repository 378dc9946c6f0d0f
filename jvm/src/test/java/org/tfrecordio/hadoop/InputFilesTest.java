package org.tfrecordio.hadoop;

import static org.junit.Assert.assertEquals;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
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

/** Which files of an input directory both InputFormats read. */
public class InputFilesTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  /** A whole file, and one that {@code hadoop fs -put} is still copying (half of it). */
  private void directoryWithAFileBeingCopied() throws IOException {
    byte[] whole = Records.frameAll(Records.random(1, 4, 20));
    Records.writeLocal(new File(tmp.getRoot(), "part-0.tfrecord"), whole);
    Records.writeLocal(new File(tmp.getRoot(), "part-1.tfrecord._COPYING_"),
        java.util.Arrays.copyOf(whole, whole.length / 2));
  }

  @Test
  public void theNewApiLeavesOutAFileBeingCopied() throws IOException {
    directoryWithAFileBeingCopied();
    Job job = Job.getInstance(new Configuration());
    FileInputFormat.setInputPaths(job, new Path(tmp.getRoot().toURI()));
    List<String> planned = new ArrayList<>();
    for (InputSplit split : new org.tfrecordio.mapreduce.TFRecordInputFormat().getSplits(job)) {
      planned.add(((FileSplit) split).getPath().getName());
    }
    assertEquals(List.of("part-0.tfrecord"), planned);
  }

  @Test
  public void theOldApiLeavesOutAFileBeingCopied() throws IOException {
    directoryWithAFileBeingCopied();
    JobConf job = new JobConf(new Configuration());
    org.apache.hadoop.mapred.FileInputFormat.setInputPaths(job, new Path(tmp.getRoot().toURI()));
    List<String> planned = new ArrayList<>();
    for (org.apache.hadoop.mapred.InputSplit split
        : new org.tfrecordio.mapred.TFRecordInputFormat().getSplits(job, 1)) {
      planned.add(((org.apache.hadoop.mapred.FileSplit) split).getPath().getName());
    }
    assertEquals(List.of("part-0.tfrecord"), planned);
  }
}
