package org.tfrecordio.testutil;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.JobContext;
import org.apache.hadoop.mapred.JobContextImpl;
import org.apache.hadoop.mapred.JobID;
import org.apache.hadoop.mapred.OutputCommitter;
import org.apache.hadoop.mapred.RecordWriter;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapred.TaskAttemptContext;
import org.apache.hadoop.mapred.TaskAttemptContextImpl;
import org.apache.hadoop.mapred.TaskAttemptID;
import org.apache.hadoop.mapred.TaskID;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskType;
import org.tfrecordio.mapred.TFRecordOutputFormat;

/**
 * The output commit protocol of the {@code mapred} API around {@link TFRecordOutputFormat}, as
 * the old API's task runs it: the job's FileOutputCommitter, and the task attempt id in the
 * task's JobConf (from which {@code FileOutputFormat.getTaskOutputPath} finds the work dir).
 */
final class MapredOutputJob implements HadoopApi.OutputJob {
  private final JobConf conf;
  private final JobID jobId = new JobID("20240101", 7);
  private final JobContext jobContext;
  private final OutputCommitter committer;

  MapredOutputJob(Configuration base, Path outDir) throws IOException {
    conf = new JobConf(base);
    FileOutputFormat.setOutputPath(conf, outDir);
    jobContext = new JobContextImpl(conf, jobId);
    new TFRecordOutputFormat().checkOutputSpecs(outDir.getFileSystem(conf), conf);
    committer = conf.getOutputCommitter();
    committer.setupJob(jobContext);
  }

  @Override
  public HadoopApi.TaskAttempt task(int task, int attempt) throws IOException {
    TaskAttemptID id = new TaskAttemptID(new TaskID(jobId, TaskType.MAP, task), attempt);
    JobConf taskConf = new JobConf(conf);
    taskConf.set(MRJobConfig.TASK_ATTEMPT_ID, id.toString());
    TaskAttemptContext context = new TaskAttemptContextImpl(taskConf, id);
    committer.setupTask(context);
    TFRecordOutputFormat format = new TFRecordOutputFormat();
    return new HadoopApi.TaskAttempt() {
      @Override
      public void write(List<byte[]> records) throws IOException {
        String name = HadoopApi.MAPRED.partName(task, "");
        RecordWriter<BytesWritable, NullWritable> writer = format.getRecordWriter(
            new Path(".").getFileSystem(taskConf), taskConf, name, Reporter.NULL);
        for (byte[] r : records) {
          writer.write(new BytesWritable(r), NullWritable.get());
        }
        writer.close(Reporter.NULL);
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
    committer.commitJob(jobContext);
  }
}
