package org.tfrecordio.mapreduce;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.hadoop.TFRecordConfig;
import org.tfrecordio.testutil.HadoopApi;
import org.tfrecordio.testutil.Records;

/** Details of the {@code mapreduce} InputFormat and RecordReader. */
public class TFRecordInputFormatTest {
  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  private final Configuration conf = new Configuration();

  private Path dir() {
    return new Path(tmp.getRoot().toURI().toString(), "in");
  }

  @Test
  public void numInputFilesIsTheNumberOfFilesNotOfSplits() throws IOException {
    HadoopApi.MAPREDUCE.write(conf, dir(), Records.random(1, 50, 100),
        Records.random(2, 50, 100));
    Job job = Job.getInstance(conf);
    FileInputFormat.setInputPaths(job, dir());
    FileInputFormat.setMaxInputSplitSize(job, 200);
    List<InputSplit> splits = new TFRecordInputFormat().getSplits(job);
    assertTrue(splits.size() > 2);
    assertEquals(2, job.getConfiguration().getLong(FileInputFormat.NUM_INPUT_FILES, -1));
  }

  @Test
  public void progressRisesFromZeroToOneOverTheSplit() throws Exception {
    List<byte[]> records = Records.random(3, 100, 100);
    HadoopApi.MAPREDUCE.write(conf, dir(), records);
    Job job = Job.getInstance(conf);
    FileInputFormat.setInputPaths(job, dir());
    TFRecordInputFormat format = new TFRecordInputFormat();
    InputSplit split = format.getSplits(job).get(0);
    TaskAttemptContext context = new TaskAttemptContextImpl(job.getConfiguration(),
        new TaskAttemptID("test", 1, TaskType.MAP, 0, 0));
    try (RecordReader<BytesWritable, NullWritable> reader =
        format.createRecordReader(split, context)) {
      reader.initialize(split, context);
      assertEquals(0f, reader.getProgress(), 0f);
      float last = 0f;
      int n = 0;
      while (reader.nextKeyValue()) {
        float p = reader.getProgress();
        assertTrue("progress never goes back", p >= last);
        assertTrue(p <= 1f);
        assertEquals(NullWritable.get(), reader.getCurrentValue());
        last = p;
        n++;
      }
      assertEquals(records.size(), n);
      assertEquals(1f, reader.getProgress(), 0f);
    }
  }

  @Test
  public void skipPolicyWorksWithAContextThatHasNoCounters() throws Exception {
    List<byte[]> records = Records.random(4, 10, 50);
    records.set(2, Records.randomBytes(5, 20));
    HadoopApi.MAPREDUCE.write(conf, dir(), records);
    File data = new File(tmp.getRoot(), "in/" + HadoopApi.MAPREDUCE.partName(0, ".tfrecord"));
    byte[] bytes = Records.readLocal(data);
    bytes[(int) Records.boundaries(records)[2] + 12] ^= 1;
    Records.writeLocal(data, bytes);

    Job job = Job.getInstance(conf);
    job.getConfiguration().set(TFRecordConfig.CORRUPT_POLICY, "skip");
    FileInputFormat.setInputPaths(job, dir());
    TFRecordInputFormat format = new TFRecordInputFormat();
    InputSplit split = format.getSplits(job).get(0);
    // The two-argument context has a reporter without counters (getCounter gives null).
    TaskAttemptContext context = new TaskAttemptContextImpl(job.getConfiguration(),
        new TaskAttemptID("test", 1, TaskType.MAP, 0, 0));
    int n = 0;
    try (RecordReader<BytesWritable, NullWritable> reader =
        format.createRecordReader(split, context)) {
      reader.initialize(split, context);
      while (reader.nextKeyValue()) {
        n++;
      }
      assertFalse(reader.nextKeyValue());
    }
    assertEquals(records.size() - 1, n);
  }
}
