package org.tfrecordio.codec;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tfrecordio.hadoop.TFRecordConfig;

/**
 * Reads TFRecord framing from a stream, checking both CRCs of every record.
 *
 * <p>Lengths are checked against a maximum before anything is allocated. Damage (a CRC
 * mismatch, an impossible length, a truncated record) raises a {@link CorruptRecordException}
 * naming the source and the byte offset, unless the reader was told to skip damaged records, in
 * which case it scans forward to the next valid record and counts what it skipped.
 *
 * <p>The array returned by {@link #getData()} is owned by the reader and valid only until the
 * next call to {@link #next()}.
 */
public final class TFRecordReader implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(TFRecordReader.class);
  private static final int HEADER = 12;
  private static final int FRAMING = 16;

  /** What the reader checks and how it reacts to damage. */
  public static final class Options {
    /** Default largest record: 256 MiB. */
    public static final long DEFAULT_MAX_RECORD_BYTES = 256L * 1024 * 1024;

    long maxRecordBytes = DEFAULT_MAX_RECORD_BYTES;
    boolean skipCorrupt;
    boolean verify = true;
    int bufferBytes = 1 << 20;

    public Options maxRecordBytes(long max) {
      if (max <= 0 || max > Integer.MAX_VALUE - 64) {
        throw new IllegalArgumentException(
            TFRecordConfig.MAX_RECORD_BYTES + " must be between 1 and " + (Integer.MAX_VALUE - 64));
      }
      this.maxRecordBytes = max;
      return this;
    }

    public Options skipCorrupt(boolean skip) {
      this.skipCorrupt = skip;
      return this;
    }

    public Options verify(boolean verify) {
      this.verify = verify;
      return this;
    }

    public Options bufferBytes(int bytes) {
      this.bufferBytes = Math.max(bytes, 64);
      return this;
    }

    /** Parses a policy name ({@code fail} or {@code skip}). */
    public Options corruptPolicy(String policy) {
      if ("skip".equalsIgnoreCase(policy)) {
        return skipCorrupt(true);
      }
      if ("fail".equalsIgnoreCase(policy)) {
        return skipCorrupt(false);
      }
      throw new IllegalArgumentException(
          TFRecordConfig.CORRUPT_POLICY + " must be 'fail' or 'skip', not '" + policy + "'");
    }
  }

  private final InputStream in;
  private final String source;
  private final Options options;
  private final TFRecordCrc crc = new TFRecordCrc();

  private byte[] buf;
  private int pos;
  private int limit;
  private long bufStart;
  private boolean eof;
  private long end = Long.MAX_VALUE;

  private byte[] data;
  private int dataOffset;
  private int dataLength;
  private long recordOffset = -1;
  private long skippedRecords;
  private long skippedBytes;
  // The length checksum is a function of the length alone: remember the last one computed, so
  // that runs of equal-length records (the common case) skip recomputing it. Invariant:
  // lastLengthCrc is the masked CRC of lastLength's 8 bytes (initially 0 and its CRC).
  private long lastLength;
  private int lastLengthCrc = crc.masked(new byte[8], 0, 8);

  /**
   * @param in the stream, positioned at {@code startOffset}
   * @param source name of the file, used in error messages
   * @param startOffset offset of the stream's first byte in the file (uncompressed)
   */
  public TFRecordReader(InputStream in, String source, long startOffset, Options options) {
    this.in = in;
    this.source = source;
    this.options = options;
    this.buf = new byte[options.bufferBytes];
    this.bufStart = startOffset;
  }

  public TFRecordReader(InputStream in, String source) {
    this(in, source, 0, new Options());
  }

  /** Stops reading at the first record that starts at or after {@code end}. */
  public void setEnd(long end) {
    this.end = end;
  }

  /** Offset of the next byte to be read. */
  public long getPosition() {
    return bufStart + pos;
  }

  /**
   * Moves to the first valid record that starts at or after the current position and before
   * the end. Used where a split starts at a byte offset that may be inside a record.
   *
   * @return false if there is no such record
   */
  public boolean sync() throws IOException {
    return scan();
  }

  /**
   * Reads the next record.
   *
   * @return false at the end of the stream or of the range
   */
  public boolean next() throws IOException {
    while (true) {
      long off = bufStart + pos;
      if (off >= end) {
        return false;
      }
      int avail = ensure(HEADER);
      if (avail == 0) {
        return false;
      }
      if (avail < HEADER) {
        if (damaged(off, "truncated record header: the file ends " + avail + " bytes after it")) {
          return false;
        }
        continue;
      }
      long len = TFRecordCrc.getLongLE(buf, pos);
      if (options.verify && !lengthCrcMatches(len)) {
        if (damaged(off, "length checksum mismatch")) {
          return false;
        }
        continue;
      }
      if (len < 0 || len > options.maxRecordBytes) {
        if (damaged(off, "record length " + Long.toUnsignedString(len)
            + " exceeds the maximum of " + options.maxRecordBytes + " bytes ("
            + TFRecordConfig.MAX_RECORD_BYTES + ")")) {
          return false;
        }
        continue;
      }
      int n = (int) len;
      if (n + FRAMING <= buf.length) {
        avail = ensure(n + FRAMING);
        if (avail < n + FRAMING) {
          if (damaged(off, "truncated record: " + n + " data bytes announced, the file ends "
              + (avail - HEADER) + " bytes into them")) {
            return false;
          }
          continue;
        }
        if (options.verify
            && crc.masked(buf, pos + HEADER, n) != TFRecordCrc.getIntLE(buf, pos + HEADER + n)) {
          if (damaged(off, "data checksum mismatch")) {
            return false;
          }
          continue;
        }
        data = buf;
        dataOffset = pos + HEADER;
        dataLength = n;
        pos += n + FRAMING;
      } else if (!readLarge(off, n)) {
        continue;
      }
      recordOffset = off;
      return true;
    }
  }

  /** Whether the length field at {@code pos} (holding {@code len}) matches its checksum. */
  private boolean lengthCrcMatches(long len) {
    if (len != lastLength) {
      lastLengthCrc = crc.masked(buf, pos, 8);
      lastLength = len;
    }
    return lastLengthCrc == TFRecordCrc.getIntLE(buf, pos + 8);
  }

  /** Reads a record too large for the buffer into an array of its own; false if damaged. */
  private boolean readLarge(long off, int n) throws IOException {
    byte[] big = new byte[n];
    int copied = Math.min(limit - pos - HEADER, n);
    System.arraycopy(buf, pos + HEADER, big, 0, copied);
    if (copied == n) {
      pos += HEADER + n;
    } else {
      int done = copied;
      while (done < n) {
        int r = in.read(big, done, n - done);
        if (r < 0) {
          break;
        }
        done += r;
      }
      bufStart += limit + (done - copied);
      pos = 0;
      limit = 0;
      if (done < n) {
        eof = true;
        damaged(off, "truncated record: " + n + " data bytes announced, the file ends " + done
            + " bytes into them");
        return false;
      }
    }
    int avail = ensure(4);
    if (avail < 4) {
      damaged(off, "truncated record: the data checksum is missing");
      return false;
    }
    if (options.verify && crc.masked(big, 0, n) != TFRecordCrc.getIntLE(buf, pos)) {
      pos += 4;
      // The length was valid, so the framing is intact: skip exactly this record.
      if (!options.skipCorrupt) {
        throw new CorruptRecordException(source, off, "data checksum mismatch");
      }
      skippedRecords++;
      skippedBytes += n + FRAMING;
      LOG.warn("Skipped damaged record in {} at byte offset {}: data checksum mismatch",
          source, off);
      return false;
    }
    pos += 4;
    data = big;
    dataOffset = 0;
    dataLength = n;
    return true;
  }

  /**
   * Handles damage at {@code off}: throws under the fail policy, otherwise counts it and scans
   * forward to the next valid record.
   *
   * @return true if the stream has nothing more to read
   */
  private boolean damaged(long off, String reason) throws IOException {
    if (!options.skipCorrupt) {
      throw new CorruptRecordException(source, off, reason);
    }
    skippedRecords++;
    LOG.warn("Skipping damaged data in {} at byte offset {}: {}", source, off, reason);
    long before = bufStart + pos;
    if (before == off) {
      pos++;
    }
    boolean found = scan();
    skippedBytes += (bufStart + pos) - off;
    return !found;
  }

  /** Advances to the next offset holding a valid record; false (all consumed) if none. */
  private boolean scan() throws IOException {
    while (true) {
      if (bufStart + pos >= end) {
        return false;
      }
      if (ensure(HEADER) < HEADER) {
        pos = limit;
        return false;
      }
      if (validAt()) {
        return true;
      }
      pos++;
    }
  }

  /**
   * Whether a valid record starts at the current position: its length checksum matches, its
   * length is allowed, and its data checksum matches (unless the record is too large for the
   * buffer, where the header alone decides). Does not move.
   */
  public boolean atValidRecord() throws IOException {
    return ensure(HEADER) >= HEADER && validAt();
  }

  private boolean validAt() throws IOException {
    if (crc.masked(buf, pos, 8) != TFRecordCrc.getIntLE(buf, pos + 8)) {
      return false;
    }
    long len = TFRecordCrc.getLongLE(buf, pos);
    if (len < 0 || len > options.maxRecordBytes) {
      return false;
    }
    int n = (int) len;
    if (n + FRAMING > buf.length) {
      return true; // header checks out; too large to pre-verify the data in the buffer
    }
    return ensure(n + FRAMING) >= n + FRAMING
        && crc.masked(buf, pos + HEADER, n) == TFRecordCrc.getIntLE(buf, pos + HEADER + n);
  }

  /** Makes at least {@code n} bytes available from {@code pos}, unless the stream ends first. */
  private int ensure(int n) throws IOException {
    int avail = limit - pos;
    if (avail >= n || eof) {
      return avail;
    }
    if (pos + n > buf.length) {
      System.arraycopy(buf, pos, buf, 0, avail);
      bufStart += pos;
      pos = 0;
      limit = avail;
    }
    while (limit - pos < n) {
      int r = in.read(buf, limit, buf.length - limit);
      if (r < 0) {
        eof = true;
        break;
      }
      limit += r;
    }
    return limit - pos;
  }

  /** The current record's bytes: {@link #getLength()} bytes from {@link #getDataOffset()}. */
  public byte[] getData() {
    return data;
  }

  public int getDataOffset() {
    return dataOffset;
  }

  public int getLength() {
    return dataLength;
  }

  /** Byte offset at which the current record starts. */
  public long getRecordOffset() {
    return recordOffset;
  }

  /** Records (or stretches of damaged bytes) skipped under the skip policy. */
  public long getSkippedRecords() {
    return skippedRecords;
  }

  /** Bytes skipped under the skip policy. */
  public long getSkippedBytes() {
    return skippedBytes;
  }

  public String getSource() {
    return source;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
