package org.tfrecordio.mapreduce;

import java.io.IOException;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.tfrecordio.hadoop.SplitReader;
import org.tfrecordio.hadoop.TFRecordCounter;

/** Reads the records of one {@link FileSplit} of a TFRecord file. */
public class TFRecordRecordReader extends RecordReader<BytesWritable, NullWritable> {
  private SplitReader reader;
  private Counter skippedRecords;
  private Counter skippedBytes;
  private final BytesWritable key = new BytesWritable();

  @Override
  public void initialize(InputSplit genericSplit, TaskAttemptContext context) throws IOException {
    FileSplit split = (FileSplit) genericSplit;
    reader = new SplitReader(context.getConfiguration(), split.getPath(), split.getStart(),
        split.getLength());
    skippedRecords = counter(context, TFRecordCounter.CORRUPT_RECORDS_SKIPPED);
    skippedBytes = counter(context, TFRecordCounter.CORRUPT_BYTES_SKIPPED);
  }

  private static Counter counter(TaskAttemptContext context, TFRecordCounter name) {
    try {
      return context.getCounter(name);
    } catch (RuntimeException e) {
      return null; // some frameworks' contexts have no counters
    }
  }

  @Override
  public boolean nextKeyValue() throws IOException {
    boolean more = reader.next(key);
    long records = reader.takeSkippedRecords();
    if (records > 0 || !more) {
      long bytes = reader.takeSkippedBytes();
      if (skippedRecords != null) {
        skippedRecords.increment(records);
        skippedBytes.increment(bytes);
      }
    }
    return more;
  }

  @Override
  public BytesWritable getCurrentKey() {
    return key;
  }

  @Override
  public NullWritable getCurrentValue() {
    return NullWritable.get();
  }

  @Override
  public float getProgress() throws IOException {
    return reader == null ? 0f : reader.getProgress();
  }

  @Override
  public void close() throws IOException {
    if (reader != null) {
      reader.close();
    }
  }
}
