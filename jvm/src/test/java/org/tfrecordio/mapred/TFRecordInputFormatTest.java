package org.tfrecordio.mapred;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.testutil.HadoopApi;
import org.tfrecordio.testutil.Records;

/** Details of the {@code mapred} InputFormat and RecordReader. */
public class TFRecordInputFormatTest {
  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  private final Configuration conf = new Configuration();

  private Path dir() {
    return new Path(tmp.getRoot().toURI().toString(), "in");
  }

  @Test
  public void numInputFilesIsTheNumberOfFilesNotOfSplits() throws IOException {
    HadoopApi.MAPRED.write(conf, dir(), Records.random(1, 50, 100), Records.random(2, 50, 100));
    JobConf job = new JobConf(conf);
    FileInputFormat.setInputPaths(job, dir());
    InputSplit[] splits = new TFRecordInputFormat().getSplits(job, 10);
    assertTrue(splits.length > 2);
    assertEquals(2, job.getLong(FileInputFormat.NUM_INPUT_FILES, -1));
  }

  @Test
  public void numSplitsHintSetsTheTargetSplitSize() throws IOException {
    List<byte[]> records = Records.random(3, 200, 100);
    HadoopApi.MAPRED.write(conf, dir(), records);
    JobConf job = new JobConf(conf);
    FileInputFormat.setInputPaths(job, dir());
    TFRecordInputFormat format = new TFRecordInputFormat();
    assertEquals(1, format.getSplits(job, 1).length);
    InputSplit[] splits = format.getSplits(job, 5);
    assertTrue(splits.length >= 4 && splits.length <= 6);
  }

  @Test
  public void positionIsTheEndOfTheLastRecordRead() throws IOException {
    List<byte[]> records = Records.random(4, 30, 100);
    HadoopApi.MAPRED.write(conf, dir(), records);
    long[] bounds = Records.boundaries(records);
    JobConf job = new JobConf(conf);
    FileInputFormat.setInputPaths(job, dir());
    TFRecordInputFormat format = new TFRecordInputFormat();
    FileSplit split = (FileSplit) format.getSplits(job, 1)[0];
    RecordReader<BytesWritable, NullWritable> reader =
        format.getRecordReader(split, job, Reporter.NULL);
    try {
      assertEquals(0, reader.getPos());
      assertEquals(0f, reader.getProgress(), 0f);
      BytesWritable key = reader.createKey();
      NullWritable value = reader.createValue();
      for (int i = 0; i < records.size(); i++) {
        assertTrue(reader.next(key, value));
        assertEquals(bounds[i + 1], reader.getPos());
        assertEquals(records.get(i).length, key.getLength());
      }
      assertEquals(1f, reader.getProgress(), 0f);
    } finally {
      reader.close();
    }
  }
}
