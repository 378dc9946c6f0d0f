package org.tfrecordio.testutil;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskType;
import org.tfrecordio.hadoop.TFRecordCounter;

/**
 * The two Hadoop APIs, driven the way a framework drives them: splits from the InputFormat,
 * one RecordReader per split with real counters; output through the OutputFormat and its
 * FileOutputCommitter (setupJob, setupTask, write, commitTask or abortTask, commitJob).
 */
public enum HadoopApi {
  /** {@code org.apache.hadoop.mapreduce}: {@code newAPIHadoopFile}, MapReduce jobs. */
  MAPREDUCE {
    @Override
    public String partName(int task, String extension) {
      return String.format("part-r-%05d%s", task, extension);
    }

    @Override
    public OutputJob outputJob(Configuration conf, Path outDir) throws IOException {
      return new MapreduceOutputJob(conf, outDir);
    }

    @Override
    public Read read(Configuration conf, Path input, long splitSize) throws IOException {
      Job job = Job.getInstance(conf);
      org.apache.hadoop.mapreduce.lib.input.FileInputFormat.setInputPaths(job, input);
      if (splitSize > 0) {
        org.apache.hadoop.mapreduce.lib.input.FileInputFormat.setMinInputSplitSize(job, 1);
        org.apache.hadoop.mapreduce.lib.input.FileInputFormat.setMaxInputSplitSize(job, splitSize);
      }
      org.tfrecordio.mapreduce.TFRecordInputFormat format =
          new org.tfrecordio.mapreduce.TFRecordInputFormat();
      List<org.apache.hadoop.mapreduce.InputSplit> splits = format.getSplits(job);
      CountingStatusReporter reporter = new CountingStatusReporter();
      List<SplitRead> result = new ArrayList<>();
      for (int i = 0; i < splits.size(); i++) {
        org.apache.hadoop.mapreduce.lib.input.FileSplit split =
            (org.apache.hadoop.mapreduce.lib.input.FileSplit) splits.get(i);
        org.apache.hadoop.mapreduce.TaskAttemptContext context =
            new org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl(job.getConfiguration(),
                new org.apache.hadoop.mapreduce.TaskAttemptID("test", 1, TaskType.MAP, i, 0),
                reporter);
        List<byte[]> records = new ArrayList<>();
        try (org.apache.hadoop.mapreduce.RecordReader<BytesWritable, NullWritable> reader =
            format.createRecordReader(split, context)) {
          reader.initialize(split, context);
          while (reader.nextKeyValue()) {
            records.add(reader.getCurrentKey().copyBytes());
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new java.io.InterruptedIOException(e.toString());
        }
        result.add(new SplitRead(split.getPath(), split.getStart(), split.getLength(), records));
      }
      return new Read(result, reporter.value(TFRecordCounter.CORRUPT_RECORDS_SKIPPED),
          reporter.value(TFRecordCounter.CORRUPT_BYTES_SKIPPED));
    }
  },

  /** {@code org.apache.hadoop.mapred}: {@code hadoopFile}, Hive. */
  MAPRED {
    @Override
    public String partName(int task, String extension) {
      return String.format("part-%05d%s", task, extension);
    }

    @Override
    public OutputJob outputJob(Configuration conf, Path outDir) throws IOException {
      return new MapredOutputJob(conf, outDir);
    }

    @Override
    public Read read(Configuration conf, Path input, long splitSize) throws IOException {
      JobConf job = new JobConf(conf);
      org.apache.hadoop.mapred.FileInputFormat.setInputPaths(job, input);
      // The old API's split size is max(minsize, min(total / numSplits, blockSize)).
      int numSplits = 1;
      if (splitSize > 0) {
        job.setLong(org.apache.hadoop.mapreduce.lib.input.FileInputFormat.SPLIT_MINSIZE,
            splitSize);
        numSplits = Integer.MAX_VALUE;
      }
      org.tfrecordio.mapred.TFRecordInputFormat format =
          new org.tfrecordio.mapred.TFRecordInputFormat();
      org.apache.hadoop.mapred.InputSplit[] splits = format.getSplits(job, numSplits);
      CountingReporter reporter = new CountingReporter();
      List<SplitRead> result = new ArrayList<>();
      for (org.apache.hadoop.mapred.InputSplit generic : splits) {
        org.apache.hadoop.mapred.FileSplit split = (org.apache.hadoop.mapred.FileSplit) generic;
        List<byte[]> records = new ArrayList<>();
        org.apache.hadoop.mapred.RecordReader<BytesWritable, NullWritable> reader =
            format.getRecordReader(split, job, reporter);
        try {
          BytesWritable key = reader.createKey();
          NullWritable value = reader.createValue();
          while (reader.next(key, value)) {
            records.add(key.copyBytes());
          }
        } finally {
          reader.close();
        }
        result.add(new SplitRead(split.getPath(), split.getStart(), split.getLength(), records));
      }
      return new Read(result, reporter.value(TFRecordCounter.CORRUPT_RECORDS_SKIPPED),
          reporter.value(TFRecordCounter.CORRUPT_BYTES_SKIPPED));
    }
  };

  /** The name the OutputFormat gives the output of task {@code task}. */
  public abstract String partName(int task, String extension);

  /** Starts an output job writing to {@code outDir} (setupJob already done). */
  public abstract OutputJob outputJob(Configuration conf, Path outDir) throws IOException;

  /**
   * Plans the splits of {@code input} and reads every split.
   *
   * @param splitSize the target split size in bytes, or 0 for the defaults
   */
  public abstract Read read(Configuration conf, Path input, long splitSize) throws IOException;

  /** Reads {@code input} with the default split settings. */
  public Read read(Configuration conf, Path input) throws IOException {
    return read(conf, input, 0);
  }

  /**
   * Writes one output file per list of records, each by its own task (task i writes
   * {@code files[i]}), commits all tasks and the job.
   */
  @SafeVarargs
  public final void write(Configuration conf, Path outDir, List<byte[]>... files)
      throws IOException {
    OutputJob job = outputJob(conf, outDir);
    for (int i = 0; i < files.length; i++) {
      TaskAttempt attempt = job.task(i, 0);
      attempt.write(files[i]);
      attempt.commit();
    }
    job.commitJob();
  }

  /** An output job in progress. */
  public interface OutputJob {
    /** Sets up attempt {@code attempt} of task {@code task}. */
    TaskAttempt task(int task, int attempt) throws IOException;

    void commitJob() throws IOException;
  }

  /** A task attempt of an output job. */
  public interface TaskAttempt {
    /** Opens the attempt's RecordWriter, writes the records and closes it. */
    void write(List<byte[]> records) throws IOException;

    void commit() throws IOException;

    void abort() throws IOException;
  }

  /** The records read from one split. */
  public static final class SplitRead {
    public final Path path;
    public final long start;
    public final long length;
    public final List<byte[]> records;

    SplitRead(Path path, long start, long length, List<byte[]> records) {
      this.path = path;
      this.start = start;
      this.length = length;
      this.records = Collections.unmodifiableList(records);
    }

    @Override
    public String toString() {
      return path.getName() + "[" + start + ", " + (start + length) + "): "
          + records.size() + " records";
    }
  }

  /** What reading all splits gave: the splits in order, and the skip counters. */
  public static final class Read {
    public final List<SplitRead> splits;
    public final long skippedRecords;
    public final long skippedBytes;

    Read(List<SplitRead> splits, long skippedRecords, long skippedBytes) {
      // Hadoop lists a directory's files in no particular order (the local file system gives
      // them in directory order): order the splits by file, then by offset.
      List<SplitRead> sorted = new ArrayList<>(splits);
      sorted.sort(Comparator.comparing((SplitRead s) -> s.path.toString())
          .thenComparingLong(s -> s.start));
      this.splits = Collections.unmodifiableList(sorted);
      this.skippedRecords = skippedRecords;
      this.skippedBytes = skippedBytes;
    }

    /** The records of all splits, concatenated in order of file and offset. */
    public List<byte[]> records() {
      List<byte[]> all = new ArrayList<>();
      for (SplitRead s : splits) {
        all.addAll(s.records);
      }
      return all;
    }
  }
}
