package org.tfrecordio.spark;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitterFactory;
import org.apache.hadoop.mapreduce.task.JobContextImpl;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.internal.io.FileNameSpec;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@link PathOutputCommitProtocol} driven as Spark drives a commit protocol (job setup, tasks,
 * job commit), on local files: each task's file goes where the destination's Hadoop committer
 * stages it, and reaches the destination only through that committer's commits.
 */
public class PathOutputCommitProtocolTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  /** A committer that stages a task's files in {@code OUT/_staging/ATTEMPT} and moves them. */
  public static final class StagingCommitter extends PathOutputCommitter {
    private final Path out;
    private final Path work;

    StagingCommitter(Path out, TaskAttemptContext context) throws IOException {
      super(out, context);
      this.out = out;
      this.work = new Path(out, "_staging/" + context.getTaskAttemptID());
    }

    @Override
    public Path getOutputPath() {
      return out;
    }

    @Override
    public Path getWorkPath() {
      return work;
    }

    @Override
    public void setupJob(JobContext context) {}

    @Override
    public void setupTask(TaskAttemptContext context) {}

    @Override
    public boolean needsTaskCommit(TaskAttemptContext context) {
      return true;
    }

    @Override
    public void commitTask(TaskAttemptContext context) throws IOException {
      FileSystem fs = work.getFileSystem(context.getConfiguration());
      for (org.apache.hadoop.fs.FileStatus f : fs.listStatus(work)) {
        fs.rename(f.getPath(), new Path(out, f.getPath().getName()));
      }
      fs.delete(work, true);
    }

    @Override
    public void abortTask(TaskAttemptContext context) throws IOException {
      work.getFileSystem(context.getConfiguration()).delete(work, true);
    }
  }

  /** Names {@link StagingCommitter} for a scheme. */
  public static final class StagingFactory extends PathOutputCommitterFactory {
    @Override
    public PathOutputCommitter createOutputCommitter(Path out, TaskAttemptContext context)
        throws IOException {
      return new StagingCommitter(out, context);
    }
  }

  private static final class Job {
    final Configuration conf = new Configuration(false);
    final PathOutputCommitProtocol protocol;
    final JobContext context;

    Job(File out, boolean stagingCommitter) {
      conf.set("fs.file.impl.disable.cache", "true");
      conf.set("mapreduce.fileoutputcommitter.algorithm.version", "1"); // Spark's default
      if (stagingCommitter) {
        conf.set("mapreduce.outputcommitter.factory.scheme.file", StagingFactory.class.getName());
      }
      protocol = new PathOutputCommitProtocol("job-1", out.toURI().toString(), false);
      context = new JobContextImpl(conf, new JobID("20261202", 1));
      protocol.setupJob(context);
    }

    TaskAttemptContext task(int task, int attempt) {
      Configuration jobConf = context.getConfiguration(); // what setupJob set up
      JobID job = JobID.forName(jobConf.get("mapreduce.job.id"));
      TaskAttemptContext task0 = new TaskAttemptContextImpl(
          jobConf, new TaskAttemptID(new TaskID(job, TaskType.MAP, task), attempt));
      protocol.setupTask(task0);
      return task0;
    }

    String write(TaskAttemptContext task, String text) throws IOException {
      String file = protocol.newTaskTempFile(task, Option.empty(), new FileNameSpec("", ".txt"));
      Path path = new Path(file);
      try (FSDataOutputStream s = path.getFileSystem(conf).create(path, false)) {
        s.write(text.getBytes(StandardCharsets.UTF_8));
      }
      return file;
    }

    /** A task's commit, as Spark's makes it once its coordinator allows (no SparkEnv here). */
    void commitTask(TaskAttemptContext task) throws IOException {
      protocol.committer().commitTask(task);
    }

    void commitJob() {
      List<FileCommitProtocol.TaskCommitMessage> none = new ArrayList<>();
      protocol.commitJob(context, CollectionConverters.asScala(none).toList());
    }
  }

  private static List<String> dataFiles(File dir) throws IOException {
    try (Stream<java.nio.file.Path> files = Files.walk(dir.toPath())) {
      return files.filter(Files::isRegularFile)
          .map(p -> dir.toPath().relativize(p).toString())
          .filter(n -> !n.startsWith("_") && !n.startsWith("."))
          .sorted()
          .collect(Collectors.toList());
    }
  }

  @Test
  public void aTasksFileIsWrittenWhereTheSchemesCommitterStagesIt() throws IOException {
    File out = new File(tmp.getRoot(), "out");
    Job job = new Job(out, true);
    TaskAttemptContext task = job.task(0, 0);
    String file = job.write(task, "a");
    Path work = job.protocol.committer().getWorkPath();
    assertEquals(work.toString(), new Path(file).getParent().toString());
    assertTrue(work.toString().contains("/_staging/attempt_"));
    assertEquals(List.of(), dataFiles(out)); // nothing at the destination before the commit
    job.commitTask(task);
    job.commitJob();
    assertEquals(List.of(new Path(file).getName()), dataFiles(out));
  }

  @Test
  public void anAbortedTaskLeavesNothingAndTheOthersAreCommitted() throws IOException {
    File out = new File(tmp.getRoot(), "out");
    Job job = new Job(out, false); // the file scheme's own: FileOutputCommitter
    TaskAttemptContext failed = job.task(0, 0);
    job.write(failed, "lost");
    job.protocol.abortTask(failed);
    TaskAttemptContext retried = job.task(0, 1);
    String kept = job.write(retried, "kept");
    assertTrue(kept.contains("/_temporary/"));
    job.commitTask(retried);
    job.commitJob();
    List<String> files = dataFiles(out);
    assertEquals(List.of(new Path(kept).getName()), files);
    assertEquals("kept", Files.readString(new File(out, files.get(0)).toPath()));
    assertFalse(new File(out, "_temporary").exists());
  }

  @Test
  public void anAbortedJobLeavesNothingAtTheDestination() throws IOException {
    File out = new File(tmp.getRoot(), "out");
    Job job = new Job(out, false);
    TaskAttemptContext task = job.task(0, 0);
    job.write(task, "a");
    job.commitTask(task);
    job.protocol.abortJob(job.context);
    assertEquals(List.of(), dataFiles(out));
  }
}
