package org.tfrecordio.spark.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.util.ReflectionUtils;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.types.StructType;
import org.tfrecordio.hadoop.FileRecordWriter;
import org.tfrecordio.spark.InternalRowEncoder;

/** Makes the {@link TFRecordOutputWriter}s of a write job, in the executors. */
final class TFRecordOutputWriterFactory extends OutputWriterFactory {
  private static final long serialVersionUID = 1L;
  private final String recordType;
  /** The output codec class, or null for uncompressed output. */
  private final String codecClass;

  TFRecordOutputWriterFactory(String recordType, String codecClass) {
    this.recordType = recordType;
    this.codecClass = codecClass;
  }

  private CompressionCodec codec(Configuration conf) {
    if (codecClass == null) {
      return null;
    }
    try {
      return (CompressionCodec) ReflectionUtils.newInstance(conf.getClassByName(codecClass),
          conf);
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException("no codec class " + codecClass, e);
    }
  }

  @Override
  public String getFileExtension(TaskAttemptContext context) {
    Configuration conf = context.getConfiguration();
    return FileRecordWriter.extension(conf, codec(conf));
  }

  @Override
  public OutputWriter newInstance(String path, StructType dataSchema,
      TaskAttemptContext context) {
    Configuration conf = context.getConfiguration();
    try {
      return new TFRecordOutputWriter(path, InternalRowEncoder.plan(dataSchema, recordType),
          conf, codec(conf));
    } catch (IOException e) {
      throw new UncheckedIOException("creating " + path + ": " + e.getMessage(), e);
    }
  }
}
