package org.tfrecordio.mapreduce;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.GzipCodec;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.util.ReflectionUtils;
import org.tfrecordio.hadoop.FileRecordWriter;

/**
 * Writes TFRecord files ({@code org.apache.hadoop.mapreduce} API): each key is one record,
 * values are ignored. Honours {@code mapreduce.output.fileoutputformat.compress} and
 * {@code ...compress.codec} (set it: Hadoop's mapred-default.xml makes the default
 * {@code DefaultCodec}, zlib, {@code .deflate}; {@link GzipCodec} only applies where no default
 * configuration is loaded); writes a sidecar index next to each
 * uncompressed file unless {@code tfrecord.output.index=false}. Output goes through the job's
 * output committer.
 */
public class TFRecordOutputFormat extends FileOutputFormat<BytesWritable, NullWritable> {

  @Override
  public RecordWriter<BytesWritable, NullWritable> getRecordWriter(TaskAttemptContext job)
      throws IOException {
    Configuration conf = job.getConfiguration();
    CompressionCodec codec = null;
    if (getCompressOutput(job)) {
      codec = ReflectionUtils.newInstance(getOutputCompressorClass(job, GzipCodec.class), conf);
    }
    FileRecordWriter writer = new FileRecordWriter(conf,
        getDefaultWorkFile(job, FileRecordWriter.extension(conf, codec)), codec);
    return new RecordWriter<BytesWritable, NullWritable>() {
      @Override
      public void write(BytesWritable key, NullWritable value) throws IOException {
        writer.write(key);
      }

      @Override
      public void close(TaskAttemptContext context) throws IOException {
        writer.close();
      }
    };
  }
}
