package org.tfrecordio.mapreduce;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.tfrecordio.hadoop.SplitPlanner;

/**
 * Reads TFRecord files ({@code org.apache.hadoop.mapreduce} API). Keys are the records, values
 * are {@link NullWritable}. Compressed files are read whole, with the codec chosen from the file
 * name; uncompressed files with a valid sidecar index are cut into exact splits.
 */
public class TFRecordInputFormat extends FileInputFormat<BytesWritable, NullWritable> {

  @Override
  public RecordReader<BytesWritable, NullWritable> createRecordReader(
      InputSplit split, TaskAttemptContext context) {
    return new TFRecordRecordReader();
  }

  @Override
  public List<InputSplit> getSplits(JobContext job) throws IOException {
    Configuration conf = job.getConfiguration();
    long minSize = Math.max(getFormatMinSplitSize(), getMinSplitSize(job));
    long maxSize = getMaxSplitSize(job);
    List<InputSplit> splits = new ArrayList<>();
    List<FileStatus> files = SplitPlanner.inputFiles(conf, listStatus(job));
    for (FileStatus file : files) {
      long splitSize = computeSplitSize(file.getBlockSize(), minSize, maxSize);
      for (SplitPlanner.Range r : SplitPlanner.plan(conf, file, splitSize)) {
        splits.add(makeSplit(file.getPath(), r.start, r.length, r.hosts));
      }
    }
    job.getConfiguration().setLong(NUM_INPUT_FILES, files.size());
    return splits;
  }
}
