package org.tfrecordio.hadoop;

import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.compress.CodecPool;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.Compressor;
import org.tfrecordio.codec.TFRecordIndex;
import org.tfrecordio.codec.TFRecordWriter;

/**
 * Writes one TFRecord output file and, when it is uncompressed, its sidecar index. Both are
 * created in the task attempt's work directory, so the output committer publishes both or
 * neither. On the local file system, no {@code .crc} checksum files are written. Shared by both
 * Hadoop APIs.
 */
public final class FileRecordWriter implements Closeable {
  private final TFRecordWriter writer;
  private final TFRecordIndex.Writer index;
  private final Compressor compressor;
  private boolean closed;

  /**
   * @param file the data file to create (its name should end with {@link #extension})
   * @param codec the compression codec, or null
   */
  public FileRecordWriter(Configuration conf, Path file, CompressionCodec codec)
      throws IOException {
    FileSystem fs = withoutChecksumFiles(file.getFileSystem(conf));
    OutputStream out = fs.create(file, false);
    Compressor comp = null;
    TFRecordIndex.Writer idx = null;
    try {
      if (codec != null) {
        comp = CodecPool.getCompressor(codec, conf);
        out = codec.createOutputStream(out, comp);
      } else if (conf.getBoolean(TFRecordConfig.WRITE_INDEX, true)) {
        Path indexFile = new Path(file.getParent(), TFRecordIndex.indexName(file.getName()));
        idx = new TFRecordIndex.Writer(fs.create(indexFile, false));
      }
    } catch (IOException | RuntimeException e) {
      out.close();
      if (comp != null) {
        CodecPool.returnCompressor(comp);
      }
      throw e;
    }
    this.writer = new TFRecordWriter(out);
    this.index = idx;
    this.compressor = comp;
  }

  /**
   * The local file system without its checksum side files: TFRecords carry CRCs of their own,
   * and a {@code .NAME.crc} next to each output file is clutter (TensorFlow would list it).
   */
  private static FileSystem withoutChecksumFiles(FileSystem fs) {
    return fs instanceof LocalFileSystem ? ((LocalFileSystem) fs).getRawFileSystem() : fs;
  }

  /** The output file extension: {@code tfrecord.output.extension} plus the codec's. */
  public static String extension(Configuration conf, CompressionCodec codec) {
    String ext = conf.get(TFRecordConfig.OUTPUT_EXTENSION, ".tfrecord");
    return codec == null ? ext : ext + codec.getDefaultExtension();
  }

  /** Appends one record. */
  public void write(BytesWritable record) throws IOException {
    long offset = writer.write(record.getBytes(), 0, record.getLength());
    if (index != null) {
      index.add(offset, record.getLength());
    }
  }

  /**
   * Closes the data file and its index, and returns the compressor to Hadoop's pool. Only the
   * first call does anything, whether or not it failed: frameworks close again on their failure
   * paths (Spark's Hadoop writer does), and a compressor returned twice would be handed to two
   * writers at once, each resetting the other's stream.
   */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      writer.close();
    } finally {
      try {
        if (index != null) {
          index.close();
        }
      } finally {
        if (compressor != null) {
          CodecPool.returnCompressor(compressor);
        }
      }
    }
  }
}
