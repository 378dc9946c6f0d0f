package org.tfrecordio.testutil;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.task.JobContextImpl;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.tfrecordio.mapreduce.TFRecordOutputFormat;

/** The output commit protocol of the {@code mapreduce} API around {@link TFRecordOutputFormat}. */
final class MapreduceOutputJob implements HadoopApi.OutputJob {
  private final Configuration conf;
  private final JobID jobId = new JobID("20240101", 7);
  private final JobContext jobContext;
  private final OutputCommitter jobCommitter;

  MapreduceOutputJob(Configuration base, Path outDir) throws IOException {
    Job job = Job.getInstance(base);
    FileOutputFormat.setOutputPath(job, outDir);
    conf = job.getConfiguration();
    jobContext = new JobContextImpl(conf, jobId);
    TFRecordOutputFormat format = new TFRecordOutputFormat();
    format.checkOutputSpecs(jobContext);
    jobCommitter = format.getOutputCommitter(context(0, 0));
    jobCommitter.setupJob(jobContext);
  }

  private TaskAttemptContext context(int task, int attempt) {
    return new TaskAttemptContextImpl(conf,
        new TaskAttemptID(new TaskID(jobId, TaskType.REDUCE, task), attempt));
  }

  @Override
  public HadoopApi.TaskAttempt task(int task, int attempt) throws IOException {
    TaskAttemptContext context = context(task, attempt);
    // Like a real task: an OutputFormat of its own (FileOutputFormat keeps its committer).
    TFRecordOutputFormat format = new TFRecordOutputFormat();
    OutputCommitter committer = format.getOutputCommitter(context);
    committer.setupTask(context);
    return new HadoopApi.TaskAttempt() {
      @Override
      public void write(List<byte[]> records) throws IOException {
        try {
          RecordWriter<BytesWritable, NullWritable> writer = format.getRecordWriter(context);
          for (byte[] r : records) {
            writer.write(new BytesWritable(r), NullWritable.get());
          }
          writer.close(context);
        } catch (InterruptedException e) {
          throw new IOException(e);
        }
      }

      @Override
      public void commit() throws IOException {
        if (committer.needsTaskCommit(context)) {
          committer.commitTask(context);
        }
      }

      @Override
      public void abort() throws IOException {
        committer.abortTask(context);
      }
    };
  }

  @Override
  public void commitJob() throws IOException {
    jobCommitter.commitJob(jobContext);
  }
}
