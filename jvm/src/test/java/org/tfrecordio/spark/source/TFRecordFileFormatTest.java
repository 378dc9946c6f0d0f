package org.tfrecordio.spark.source;

import static org.junit.Assert.assertEquals;

import java.io.File;
import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.mapreduce.TFRecordInputFormat;
import org.tfrecordio.testutil.Records;

/** Details of the {@code format("tfrecord")} file format. */
public class TFRecordFileFormatTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  /**
   * Schema inference reads the files Spark listed through a Hadoop job: each must be the job's
   * input as it is named, whatever glob characters its name holds.
   */
  @Test
  public void inferenceJobInputIsEachListedFileWhateverItsNameHolds() throws IOException {
    Configuration conf = new Configuration();
    String[] names = {"part[1].tfrecord", "a{b,c}.tfrecord", "x*.tfrecord", "q?.tfrecord",
        "back\\slash.tfrecord", "plain.tfrecord"};
    for (String name : names) {
      Records.writeLocal(new File(tmp.getRoot(), name),
          Records.frameAll(Records.random(1, 3, 10)));
    }
    // Files that the names, read as globs, would match.
    for (String other : new String[] {"part1.tfrecord", "ab.tfrecord", "xy.tfrecord",
        "qq.tfrecord"}) {
      Records.writeLocal(new File(tmp.getRoot(), other), Records.frameAll(Records.random(2, 3,
          10)));
    }
    FileSystem fs = FileSystem.getLocal(conf);
    for (FileStatus listed : fs.listStatus(new Path(tmp.getRoot().getAbsolutePath()))) {
      Path path = listed.getPath();
      Job job = Job.getInstance(conf);
      FileInputFormat.setInputPaths(job, TFRecordFileFormat.literal(path));
      List<InputSplit> splits = new TFRecordInputFormat().getSplits(job);
      assertEquals(path.toString(), 1, splits.size());
      assertEquals(path, ((FileSplit) splits.get(0)).getPath());
    }
  }
}
