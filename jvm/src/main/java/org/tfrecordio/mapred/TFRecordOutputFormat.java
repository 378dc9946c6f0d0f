package org.tfrecordio.mapred;

import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.GzipCodec;
import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordWriter;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.util.Progressable;
import org.apache.hadoop.util.ReflectionUtils;
import org.tfrecordio.hadoop.FileRecordWriter;

/**
 * Writes TFRecord files ({@code org.apache.hadoop.mapred} API, as used by Hive and
 * {@code saveAsHadoopFile}). Same behaviour as
 * {@link org.tfrecordio.mapreduce.TFRecordOutputFormat}.
 */
public class TFRecordOutputFormat extends FileOutputFormat<BytesWritable, NullWritable> {

  @Override
  public RecordWriter<BytesWritable, NullWritable> getRecordWriter(
      FileSystem ignored, JobConf job, String name, Progressable progress) throws IOException {
    CompressionCodec codec = null;
    if (getCompressOutput(job)) {
      codec = ReflectionUtils.newInstance(getOutputCompressorClass(job, GzipCodec.class), job);
    }
    FileRecordWriter writer = new FileRecordWriter(job,
        getTaskOutputPath(job, name + FileRecordWriter.extension(job, codec)), codec);
    return new RecordWriter<BytesWritable, NullWritable>() {
      @Override
      public void write(BytesWritable key, NullWritable value) throws IOException {
        writer.write(key);
      }

      @Override
      public void close(Reporter reporter) throws IOException {
        writer.close();
      }
    };
  }
}
