package org.tfrecordio.codec;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * The sidecar split index of a TFRecord file (see docs/index-format.md): text lines
 * {@code "<offset> <length>\n"}, one per record, the layout of DALI's and the PyPI
 * {@code tfrecord} package's indexes. The index of {@code DIR/NAME} is {@code DIR/_NAME.tfindex}.
 */
public final class TFRecordIndex {
  /** Suffix of index file names. */
  public static final String SUFFIX = ".tfindex";

  private TFRecordIndex() {}

  /** The index file name for a data file name. */
  public static String indexName(String dataFileName) {
    return "_" + dataFileName + SUFFIX;
  }

  /**
   * Parses an index and checks it against its data file.
   *
   * @param dataLength length of the data file in bytes
   * @return the record start offsets followed by {@code dataLength} (so record {@code i} spans
   *     {@code [r[i], r[i+1])}), or null if the index is malformed or does not match the file
   */
  public static long[] read(InputStream in, long dataLength) throws IOException {
    long[] offsets = new long[1024];
    int count = 0;
    long expected = 0;
    long value = 0;
    long first = -1;
    int digits = 0;
    byte[] chunk = new byte[64 * 1024];
    int r;
    while ((r = in.read(chunk)) >= 0) {
      for (int i = 0; i < r; i++) {
        byte b = chunk[i];
        if (b >= '0' && b <= '9') {
          if (++digits > 18) {
            return null;
          }
          value = value * 10 + (b - '0');
        } else if (b == ' ' && first < 0 && digits > 0) {
          first = value;
          value = 0;
          digits = 0;
        } else if (b == '\n' && first >= 0 && digits > 0) {
          if (first != expected || value < 16) {
            return null;
          }
          if (count == offsets.length) {
            offsets = Arrays.copyOf(offsets, count * 2);
          }
          offsets[count++] = first;
          expected = first + value;
          first = -1;
          value = 0;
          digits = 0;
        } else {
          return null;
        }
      }
    }
    if (digits != 0 || first >= 0 || expected != dataLength) {
      return null;
    }
    long[] result = Arrays.copyOf(offsets, count + 1);
    result[count] = dataLength;
    return result;
  }

  /** Writes index lines as records are written. */
  public static final class Writer implements Closeable {
    private final OutputStream out;
    private final byte[] buf = new byte[64 * 1024];
    private int count;

    public Writer(OutputStream out) {
      this.out = out;
    }

    /** Adds the record starting at {@code offset} whose data is {@code dataLength} bytes. */
    public void add(long offset, long dataLength) throws IOException {
      if (count + 42 > buf.length) {
        out.write(buf, 0, count);
        count = 0;
      }
      count = putDecimal(offset, count);
      buf[count++] = ' ';
      count = putDecimal(dataLength + 16, count);
      buf[count++] = '\n';
    }

    private int putDecimal(long value, int at) {
      int digits = 1;
      for (long v = value; v >= 10; v /= 10) {
        digits++;
      }
      for (int i = at + digits - 1; i >= at; i--) {
        buf[i] = (byte) ('0' + value % 10);
        value /= 10;
      }
      return at + digits;
    }

    @Override
    public void close() throws IOException {
      try {
        out.write(buf, 0, count);
        count = 0;
      } finally {
        out.close();
      }
    }
  }
}
