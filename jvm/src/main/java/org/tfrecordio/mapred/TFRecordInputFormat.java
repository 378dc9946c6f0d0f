package org.tfrecordio.mapred;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;
import org.tfrecordio.hadoop.SplitPlanner;
import org.tfrecordio.hadoop.SplitReader;
import org.tfrecordio.hadoop.TFRecordCounter;

/**
 * Reads TFRecord files ({@code org.apache.hadoop.mapred} API, as used by Hive and
 * {@code SparkContext.hadoopFile}). Same behaviour as
 * {@link org.tfrecordio.mapreduce.TFRecordInputFormat}.
 */
public class TFRecordInputFormat extends FileInputFormat<BytesWritable, NullWritable> {

  @Override
  public InputSplit[] getSplits(JobConf job, int numSplits) throws IOException {
    List<FileStatus> files = SplitPlanner.inputFiles(job, Arrays.asList(listStatus(job)));
    job.setLong(NUM_INPUT_FILES, files.size());
    long total = 0;
    for (FileStatus file : files) {
      total += file.getLen();
    }
    long goalSize = total / Math.max(numSplits, 1);
    long minSize = Math.max(job.getLong(
        org.apache.hadoop.mapreduce.lib.input.FileInputFormat.SPLIT_MINSIZE, 1), 1);
    List<InputSplit> splits = new ArrayList<>();
    for (FileStatus file : files) {
      long splitSize = computeSplitSize(goalSize, minSize, file.getBlockSize());
      for (SplitPlanner.Range r : SplitPlanner.plan(job, file, splitSize)) {
        splits.add(makeSplit(file.getPath(), r.start, r.length, r.hosts));
      }
    }
    return splits.toArray(new InputSplit[0]);
  }

  @Override
  public RecordReader<BytesWritable, NullWritable> getRecordReader(
      InputSplit genericSplit, JobConf job, Reporter reporter) throws IOException {
    FileSplit split = (FileSplit) genericSplit;
    reporter.setStatus(split.toString());
    SplitReader reader = new SplitReader(job, split.getPath(), split.getStart(),
        split.getLength());
    return new RecordReader<BytesWritable, NullWritable>() {
      @Override
      public boolean next(BytesWritable key, NullWritable value) throws IOException {
        boolean more = reader.next(key);
        long records = reader.takeSkippedRecords();
        if (records > 0 || !more) {
          reporter.incrCounter(TFRecordCounter.CORRUPT_RECORDS_SKIPPED, records);
          reporter.incrCounter(TFRecordCounter.CORRUPT_BYTES_SKIPPED, reader.takeSkippedBytes());
        }
        return more;
      }

      @Override
      public BytesWritable createKey() {
        return new BytesWritable();
      }

      @Override
      public NullWritable createValue() {
        return NullWritable.get();
      }

      @Override
      public long getPos() {
        return reader.getPos();
      }

      @Override
      public float getProgress() throws IOException {
        return reader.getProgress();
      }

      @Override
      public void close() throws IOException {
        reader.close();
      }
    };
  }
}
