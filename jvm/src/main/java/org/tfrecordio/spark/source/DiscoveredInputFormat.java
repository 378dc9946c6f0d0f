package org.tfrecordio.spark.source;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.tfrecordio.mapreduce.TFRecordInputFormat;

/**
 * {@link TFRecordInputFormat} over the data files that {@link PartitionDiscovery} finds under
 * the job's input paths, rather than those FileInputFormat lists: the schema inference job of
 * {@link TFRecordDataFrames#load} reads exactly the files its scan reads, partition directories
 * whose names start with {@code _} ({@code _split=train/}) included.
 */
public final class DiscoveredInputFormat extends TFRecordInputFormat {
  @Override
  protected List<FileStatus> listStatus(JobContext job) throws IOException {
    String paths = job.getConfiguration().get(FileInputFormat.INPUT_DIR, "");
    return PartitionDiscovery.discover(job.getConfiguration(), getInputPaths(job), paths).found;
  }
}
