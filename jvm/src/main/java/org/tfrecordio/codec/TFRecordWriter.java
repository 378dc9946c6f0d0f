package org.tfrecordio.codec;

import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;

/**
 * Writes TFRecord framing: for each record, its length (uint64 LE), the masked CRC32C of the
 * length, the data, and the masked CRC32C of the data. Output is byte-identical to TensorFlow's
 * {@code tf.io.TFRecordWriter} for the same records.
 *
 * <p>The writer buffers; {@link #close()} flushes and closes the underlying stream.
 */
public final class TFRecordWriter implements Closeable {
  private static final int BUFFER_SIZE = 256 * 1024;

  private final OutputStream out;
  private final TFRecordCrc crc = new TFRecordCrc();
  private final byte[] buf = new byte[BUFFER_SIZE];
  private int count;
  private long position;
  private long records;
  private boolean closed;

  public TFRecordWriter(OutputStream out) {
    this.out = out;
  }

  /**
   * Appends one record.
   *
   * @return the byte offset at which the record starts in the (uncompressed) stream
   */
  public long write(byte[] data, int off, int len) throws IOException {
    if (closed) {
      throw new IOException("write to a closed TFRecord writer");
    }
    long start = position;
    if (count + 12 > buf.length) {
      flushBuffer();
    }
    TFRecordCrc.putLongLE(buf, count, len);
    TFRecordCrc.putIntLE(buf, count + 8, crc.masked(buf, count, 8));
    count += 12;
    if (len <= buf.length - count - 4) {
      System.arraycopy(data, off, buf, count, len);
      count += len;
    } else {
      flushBuffer();
      out.write(data, off, len);
    }
    if (count + 4 > buf.length) {
      flushBuffer();
    }
    TFRecordCrc.putIntLE(buf, count, crc.masked(data, off, len));
    count += 4;
    position += 16L + len;
    records++;
    return start;
  }

  /** Appends one record holding all of {@code data}. */
  public long write(byte[] data) throws IOException {
    return write(data, 0, data.length);
  }

  /** Bytes written so far (uncompressed, framing included). */
  public long getPosition() {
    return position;
  }

  /** Records written so far. */
  public long getRecordCount() {
    return records;
  }

  private void flushBuffer() throws IOException {
    if (count > 0) {
      out.write(buf, 0, count);
      count = 0;
    }
  }

  /** Writes out buffered bytes without closing the stream. */
  public void flush() throws IOException {
    flushBuffer();
    out.flush();
  }

  /** Flushes and closes the stream; only the first call does anything. */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      flushBuffer();
    } finally {
      out.close();
    }
  }
}
