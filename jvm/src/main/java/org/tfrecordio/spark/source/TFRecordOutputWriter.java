package org.tfrecordio.spark.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.hadoop.FileRecordWriter;
import org.tfrecordio.spark.InternalRowEncoder;

/**
 * Writes the rows of one output file of a task: each row encoded as a record, the file (and,
 * uncompressed, its sidecar index {@code _NAME.tfindex}) created in the task attempt's
 * directory, so Spark's commit protocol publishes both or neither.
 */
final class TFRecordOutputWriter extends OutputWriter {
  private final String path;
  private final InternalRowEncoder encoder;
  private final FileRecordWriter writer;
  private long rows;

  TFRecordOutputWriter(String path, InternalRowEncoder encoder, Configuration conf,
      CompressionCodec codec) throws IOException {
    this.path = path;
    this.encoder = encoder;
    this.writer = new FileRecordWriter(conf, new Path(path), codec);
  }

  @Override
  public void write(InternalRow row) {
    int n;
    try {
      n = encoder.encode(row);
    } catch (SchemaException e) {
      // The encoder knows the column; which of the task's rows it was, only this writer knows.
      throw new SchemaException(e.getMessage() + " (row " + (rows + 1) + " of the task's file "
          + shownName(new Path(path)) + ")", e);
    }
    rows++;
    try {
      // Wrapped, not copied: the writer is done with it before the next row is encoded.
      writer.write(new BytesWritable(encoder.buffer(), n));
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + path + ": " + e.getMessage(), e);
    }
  }

  /**
   * The file's name as an error shows it: after its partition directories ({@code col=value}
   * names, as Spark escaped them), for a task writes a file of the same name into each.
   */
  static String shownName(Path file) {
    String shown = file.getName();
    for (Path dir = file.getParent(); dir != null && dir.getName().indexOf('=') > 0;
        dir = dir.getParent()) {
      shown = dir.getName() + "/" + shown;
    }
    return shown;
  }

  @Override
  public void close() {
    try {
      writer.close();
    } catch (IOException e) {
      throw new UncheckedIOException("closing " + path + ": " + e.getMessage(), e);
    }
  }

  @Override
  public String path() {
    return path;
  }
}
