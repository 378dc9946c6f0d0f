package org.tfrecordio.codec;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The sidecar split index of a TFRecord file (see docs/index-format.md): text lines
 * {@code "<offset> <length>\n"}, one per record, the layout of DALI's and the PyPI
 * {@code tfrecord} package's indexes, then a trailer line {@code "# <count> records\n"} (which
 * indexes written before it lack: they are read too). The index of {@code DIR/NAME} is
 * {@code DIR/_NAME.tfindex}.
 */
public final class TFRecordIndex {
  /** Suffix of index file names. */
  public static final String SUFFIX = ".tfindex";

  /** What {@link #countFromTail} returns for an index without a trailer (an older index). */
  public static final long NO_TRAILER = -2;

  /** Enough bytes at the end of an index to hold its trailer and its last entry line. */
  public static final int TAIL_BYTES = 128;

  private static final byte[] TRAILER_START = {'#', ' '};
  private static final byte[] TRAILER_END = " records\n".getBytes(StandardCharsets.US_ASCII);

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
    byte[] trailer = null; // the trailer line, once it has begun
    int trailerLength = 0;
    int r;
    while ((r = in.read(chunk)) >= 0) {
      for (int i = 0; i < r; i++) {
        byte b = chunk[i];
        if (trailer != null) {
          if (trailerLength == trailer.length
              || (trailerLength > 0 && trailer[trailerLength - 1] == '\n')) {
            return null; // too long, or bytes after the trailer
          }
          trailer[trailerLength++] = b;
        } else if (b == '#' && digits == 0 && first < 0) {
          trailer = new byte[TAIL_BYTES];
          trailer[trailerLength++] = b;
        } else if (b >= '0' && b <= '9') {
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
          if (expected > dataLength) {
            return null; // describes more than the file holds: read no further
          }
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
    if (trailer != null && trailerCount(trailer, 0, trailerLength) != count) {
      return null;
    }
    long[] result = Arrays.copyOf(offsets, count + 1);
    result[count] = dataLength;
    return result;
  }

  /**
   * Counts the records of a whole data file from its index without parsing every line: the
   * number of entry lines, provided the last entry line is well formed and its record ends
   * exactly at {@code dataLength} (an index that is stale after an append, truncated or cut
   * mid-line fails this), and equals the trailer's count if there is one. Lines before the last
   * are not checked one by one; {@link #read} does that. {@link #countFromTail} does the same
   * without reading the entries, for an index with a trailer.
   *
   * @return the number of records, or -1 if the index does not match the file
   */
  public static long count(InputStream in, long dataLength) throws IOException {
    byte[] chunk = new byte[64 * 1024];
    byte[] tail = new byte[TAIL_BYTES]; // the last bytes seen: the trailer and the last entry
    int tailLength = 0;
    long lines = 0;
    long total = 0;
    int r;
    while ((r = in.read(chunk)) >= 0) {
      lines += newlines(chunk, r);
      total += r;
      if (r >= tail.length) {
        System.arraycopy(chunk, r - tail.length, tail, 0, tail.length);
        tailLength = tail.length;
      } else if (r > 0) {
        int keep = Math.min(tailLength, tail.length - r);
        System.arraycopy(tail, tailLength - keep, tail, 0, keep);
        System.arraycopy(chunk, 0, tail, keep, r);
        tailLength = keep + r;
      }
    }
    long stated = countFromTail(Arrays.copyOf(tail, tailLength), total == tailLength, dataLength);
    if (stated != NO_TRAILER) {
      return stated >= 0 && stated == lines - 1 ? stated : -1;
    }
    if (lines == 0) {
      return dataLength == 0 && tailLength == 0 ? 0 : -1;
    }
    if (tail[tailLength - 1] != '\n') {
      return -1;
    }
    int start = tailLength - 1;
    while (start > 0 && tail[start - 1] != '\n') {
      start--;
    }
    if (start == 0 && lines > 1) {
      return -1; // a last line longer than two longs: malformed
    }
    long[] line = parseLine(tail, start, tailLength - 1);
    if (line == null || (lines == 1 && line[0] != 0)) {
      return -1;
    }
    return line[0] + line[1] == dataLength ? lines : -1;
  }

  /**
   * Counts the records of a whole data file from the last bytes of its index alone: the count
   * its trailer states, provided the entry line before the trailer is well formed and its record
   * ends exactly at {@code dataLength} (an index that is stale after an append to, or a
   * truncation of, the data file fails this; a truncated index has lost its trailer). The cost
   * does not grow with the number of records.
   *
   * @param tail the last {@code min(TAIL_BYTES, index length)} bytes of the index
   * @param whole whether {@code tail} is the whole index
   * @return the number of records; -1 if the index does not match the file; {@link #NO_TRAILER}
   *     if the index has no trailer (then {@link #count} counts its lines)
   */
  public static long countFromTail(byte[] tail, boolean whole, long dataLength) {
    return parseTail(tail, whole, dataLength)[0];
  }

  /**
   * The last entry of an index whose last bytes {@link #countFromTail} finds a positive count
   * in: {@code {offset, length}} of the file's last record (its framing included), for a check
   * that the data file holds that record there.
   *
   * @return the entry; null when {@link #countFromTail} gives no positive count
   */
  public static long[] lastEntryFromTail(byte[] tail, boolean whole, long dataLength) {
    long[] found = parseTail(tail, whole, dataLength);
    return found[0] > 0 ? new long[] {found[1], found[2]} : null;
  }

  /** {@code {count, last offset, last length}} for {@link #countFromTail}'s answer (-1s). */
  private static long[] parseTail(byte[] tail, boolean whole, long dataLength) {
    long[] none = {-1, -1, -1};
    int n = tail.length;
    if (n == 0 || tail[n - 1] != '\n') {
      none[0] = NO_TRAILER;
      return none;
    }
    int start = n - 1;
    while (start > 0 && tail[start - 1] != '\n') {
      start--;
    }
    if (tail[start] != '#') {
      none[0] = NO_TRAILER;
      return none;
    }
    long records = trailerCount(tail, start, n);
    if (records < 0 || (start == 0 && !whole)) {
      return none;
    }
    if (records == 0) {
      none[0] = start == 0 && dataLength == 0 ? 0 : -1;
      return none;
    }
    int from = start - 1;
    while (from > 0 && tail[from - 1] != '\n') {
      from--;
    }
    if (from == 0 && !whole) {
      return none; // an entry line longer than two longs: malformed
    }
    long[] line = parseLine(tail, from, start - 1);
    if (line == null || (records == 1) != (from == 0 && whole) || (records == 1 && line[0] != 0)
        || line[0] + line[1] != dataLength) {
      return none;
    }
    return new long[] {records, line[0], line[1]};
  }

  /** The count of the trailer line {@code b[from, to)} ("# N records\n"), or -1. */
  private static long trailerCount(byte[] b, int from, int to) {
    int digitsFrom = from + TRAILER_START.length;
    int digitsTo = to - TRAILER_END.length;
    if (digitsTo <= digitsFrom || digitsTo - digitsFrom > 18
        || !Arrays.equals(b, from, digitsFrom, TRAILER_START, 0, TRAILER_START.length)
        || !Arrays.equals(b, digitsTo, to, TRAILER_END, 0, TRAILER_END.length)) {
      return -1;
    }
    long value = 0;
    for (int i = digitsFrom; i < digitsTo; i++) {
      if (b[i] < '0' || b[i] > '9') {
        return -1;
      }
      value = value * 10 + (b[i] - '0');
    }
    return value;
  }

  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long LOW7 = 0x7F7F7F7F7F7F7F7FL;
  private static final long NEWLINES = 0x0A0A0A0A0A0A0A0AL;

  /** The number of '\n' bytes in {@code b[0, n)}, eight bytes at a time. */
  private static long newlines(byte[] b, int n) {
    long count = 0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      long y = (long) LONG_LE.get(b, i) ^ NEWLINES; // a zero byte where there was a '\n'
      long t = ~(((y & LOW7) + LOW7) | y | LOW7); // the high bit of each zero byte, exactly
      count += Long.bitCount(t);
    }
    for (; i < n; i++) {
      if (b[i] == '\n') {
        count++;
      }
    }
    return count;
  }

  /** {offset, length} of the line {@code b[from, to)} ("offset length"), or null. */
  private static long[] parseLine(byte[] b, int from, int to) {
    long[] out = new long[2];
    int field = 0;
    int digits = 0;
    for (int i = from; i < to; i++) {
      byte c = b[i];
      if (c >= '0' && c <= '9' && digits < 18) {
        out[field] = out[field] * 10 + (c - '0');
        digits++;
      } else if (c == ' ' && field == 0 && digits > 0) {
        field = 1;
        digits = 0;
      } else {
        return null;
      }
    }
    return field == 1 && digits > 0 && out[1] >= 16 ? out : null;
  }

  /** Writes index lines as records are written. */
  public static final class Writer implements Closeable {
    private final OutputStream out;
    private final byte[] buf = new byte[64 * 1024];
    private int count;
    private long records;
    private boolean closed;

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
      records++;
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

    /** Writes the trailer ("# N records") and closes the stream. */
    @Override
    public void close() throws IOException {
      if (closed) {
        return;
      }
      closed = true;
      try {
        if (count + 42 > buf.length) {
          out.write(buf, 0, count);
          count = 0;
        }
        System.arraycopy(TRAILER_START, 0, buf, count, TRAILER_START.length);
        count = putDecimal(records, count + TRAILER_START.length);
        System.arraycopy(TRAILER_END, 0, buf, count, TRAILER_END.length);
        count += TRAILER_END.length;
        out.write(buf, 0, count);
        count = 0;
      } finally {
        out.close();
      }
    }
  }
}
