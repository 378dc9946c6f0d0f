package org.tfrecordio.spark;

import java.io.IOException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitterFactory;
import org.apache.spark.internal.io.FileNameSpec;
import org.apache.spark.internal.io.HadoopMapReduceCommitProtocol;
import scala.Option;

/**
 * Spark's commit protocol for DataFrame writes, with the output committer that Hadoop's {@link
 * PathOutputCommitterFactory} names for the destination's scheme
 * ({@code mapreduce.outputcommitter.factory.scheme.SCHEME}), and every task's files written
 * where that committer stages them ({@link PathOutputCommitter#getWorkPath()}).
 *
 * <p>Spark's own {@link HadoopMapReduceCommitProtocol} stages files only for a {@code
 * FileOutputCommitter}; with any other committer (S3A's "magic" committer, the manifest
 * committer) its tasks write straight to the destination, so a failed task's files would stay
 * there. Spark's {@code spark-hadoop-cloud} module has a protocol like this one, but it is not
 * part of pyspark and is published only for some Spark releases; this one is in tfrecord-io's
 * jar. Set it with {@code spark.sql.sources.commitProtocolClass}; {@code
 * tfrecord_io.spark.s3a_conf()} does, with S3A's magic committer, so that a task's files are
 * uploaded once, as multipart uploads that only the job's commit completes: no copy, no
 * rename, nothing visible at the destination before the job commits, nothing after it fails.
 *
 * <p>A write with dynamic partition overwrite ({@code
 * spark.sql.sources.partitionOverwriteMode=dynamic}) is left to Spark's own protocol, which
 * stages it in a directory of its own whatever the committer.
 */
public class PathOutputCommitProtocol extends HadoopMapReduceCommitProtocol {
  private static final long serialVersionUID = 1L;

  private final String destination;
  private final boolean dynamicPartitionOverwrite;
  private transient PathOutputCommitter committer;

  public PathOutputCommitProtocol(String jobId, String path, boolean dynamicPartitionOverwrite) {
    super(jobId, path, dynamicPartitionOverwrite);
    this.destination = path;
    this.dynamicPartitionOverwrite = dynamicPartitionOverwrite;
  }

  public PathOutputCommitProtocol(String jobId, String path) {
    this(jobId, path, false);
  }

  @Override
  public OutputCommitter setupCommitter(TaskAttemptContext context) {
    if (dynamicPartitionOverwrite) {
      return super.setupCommitter(context);
    }
    try {
      committer = PathOutputCommitterFactory.createCommitter(new Path(destination), context);
    } catch (IOException e) {
      throw new IllegalStateException(
          "cannot create the output committer for " + destination + ": " + e, e);
    }
    return committer;
  }

  @Override
  public String newTaskTempFile(TaskAttemptContext context, Option<String> dir, FileNameSpec spec) {
    if (dynamicPartitionOverwrite || committer == null) {
      return super.newTaskTempFile(context, dir, spec);
    }
    Path work;
    try {
      work = committer.getWorkPath();
    } catch (IOException e) {
      throw new IllegalStateException(
          "cannot find where " + committer + " stages its files: " + e, e);
    }
    Path parent = dir.isDefined() ? new Path(work, dir.get()) : work;
    return new Path(parent, getFilename(context, spec)).toString();
  }

  /** The committer of this task or job (null before setup, or with dynamic overwrite). */
  public PathOutputCommitter committer() {
    return committer;
  }
}
