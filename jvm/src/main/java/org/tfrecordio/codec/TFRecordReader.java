package org.tfrecordio.codec;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads TFRecord framing from a stream, checking both CRCs of every record.
 *
 * <p>Damage (a CRC mismatch, an impossible length, a truncated record, a stream that throws
 * {@link CorruptStreamException}) raises a {@link CorruptRecordException} naming the source and
 * the byte offset of the first record that could not be read whole, unless the reader was told
 * to skip damaged records: then it scans forward, from the byte after the damaged record's
 * first byte, to the next whole record whose two CRCs match, and counts what it skipped.
 *
 * <p>Memory: a length is checked against the maximum and, where the stream's length is known
 * ({@link #setStreamLength}), against the bytes that can still follow, before anything is read
 * for it; otherwise the buffer grows by doubling only as the stream actually delivers the bytes,
 * so a header announcing more than the stream holds costs no allocation. The buffer moves its
 * content back only once half of it has been consumed, so resynchronisation is linear in the
 * bytes scanned (plus the CRC of each candidate record whose header checksum matches).
 *
 * <p>The array returned by {@link #getData()} is owned by the reader and valid only until the
 * next call to {@link #next()}.
 */
public final class TFRecordReader implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(TFRecordReader.class);
  private static final int HEADER = 12;
  private static final int FRAMING = 16;
  private static final int MAX_ARRAY = Integer.MAX_VALUE - 16;
  private static final String DATA_CHECKSUM_MISMATCH = "data checksum mismatch";
  /**
   * What to do about a header that is not valid exactly where a range after byte 0 begins:
   * most often the range did not come from this file's records (an index written for an
   * earlier version of the file). The Python readers say the same.
   */
  private static final String RANGE_START_ADVICE = "A byte range must begin where a record "
      + "begins. If the range came from the file's split index (_NAME.tfindex), the index does "
      + "not describe this file: `tfrecord-io verify` checks both; delete the index and write "
      + "it again with `tfrecord-io index`";

  private final InputStream in;
  private final String source;
  private final ReaderOptions options;
  private final TFRecordCrc crc = new TFRecordCrc();
  private final int maxCapacity;
  // Where the range begins: a record must begin there.
  private final long rangeStart;

  private byte[] buf;
  private int pos;
  private int limit;
  private long bufStart;
  private boolean eof;
  private long end = Long.MAX_VALUE;
  private boolean checkAfterEnd;
  // Data bytes that the scan after damage may still check against CRCs; -1 when not scanning.
  private long crcBudget = -1;
  private boolean crcBudgetSpent;
  private long streamLength = -1;
  // Why the stream ended early (CorruptStreamException), and whether that has been reported.
  private String streamDamage;
  private boolean streamDamageReported;

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
  public TFRecordReader(InputStream in, String source, long startOffset, ReaderOptions options) {
    this.in = in;
    this.source = source;
    this.options = options;
    this.buf = new byte[options.bufferBytes];
    this.bufStart = startOffset;
    this.rangeStart = startOffset;
    this.maxCapacity = (int) Math.min(MAX_ARRAY,
        Math.max(options.bufferBytes, 2 * (options.maxRecordBytes + FRAMING)));
  }

  public TFRecordReader(InputStream in, String source) {
    this(in, source, 0, new ReaderOptions());
  }

  /** Stops reading at the first record that starts at or after {@code end}. */
  public void setEnd(long end) {
    this.end = end;
  }

  /**
   * Makes the end of the range check the record that starts there, the first after the range,
   * as {@link #next} would read it (its damage thrown under the fail policy, counted under
   * skip), without returning it. For a range followed by one that begins at an arbitrary
   * offset and finds its first record by scanning ({@link #sync}): that scan passes over a
   * damaged record as over the tail of the record before it, so only this range can tell.
   * Checked only after a record of this range was read, whose end is a record boundary.
   */
  public void checkRecordAfterEnd() {
    this.checkAfterEnd = true;
  }

  /**
   * Declares the length of the whole stream (offset 0 to its end), where it is known (an
   * uncompressed file): records announced to extend past it are damaged without being read.
   */
  public void setStreamLength(long length) {
    this.streamLength = length;
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
    return scanWithinBudget();
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
        // Only where a record of this range ended: elsewhere the position is no boundary.
        if (checkAfterEnd && recordOffset >= 0) {
          checkAfterEnd = false;
          long rangeEnd = end;
          end = Long.MAX_VALUE;
          try {
            next(); // damage there is reported; a record is not returned
          } finally {
            end = rangeEnd;
          }
        }
        return false;
      }
      int avail = ensure(HEADER);
      if (avail == 0) {
        if (streamDamage != null && !streamDamageReported) {
          streamDamageReported = true;
          damaged(off, streamDamage);
        }
        return false;
      }
      if (avail < HEADER) {
        if (damaged(off, truncated("truncated record header: the file ends " + avail
            + " bytes into the " + HEADER + "-byte header"))) {
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
            + options.maxRecordBytesName + "; if the file holds records this large, raise it: "
            + "skipping drops them)")) {
          return false;
        }
        continue;
      }
      int n = (int) len;
      if (streamLength >= 0 && off + FRAMING + n > streamLength) {
        // Decided from the header and the file's size: nothing is read or allocated for it.
        if (damaged(off, truncatedMessage(n, streamLength - off - HEADER))) {
          return false;
        }
        continue;
      }
      avail = ensure(n + FRAMING);
      if (avail < n + FRAMING) {
        if (damaged(off, truncated(truncatedMessage(n, avail - HEADER)))) {
          return false;
        }
        continue;
      }
      if (options.verify
          && crc.masked(buf, pos + HEADER, n) != TFRecordCrc.getIntLE(buf, pos + HEADER + n)) {
        if (damaged(off, DATA_CHECKSUM_MISMATCH)) {
          return false;
        }
        continue;
      }
      data = buf;
      dataOffset = pos + HEADER;
      dataLength = n;
      pos += n + FRAMING;
      recordOffset = off;
      return true;
    }
  }

  private static String truncatedMessage(int n, long have) {
    if (have < n) {
      return "truncated record: " + n + " data bytes announced, the file ends " + have
          + " bytes into them";
    }
    return "truncated record: the file ends inside the data checksum";
  }

  /** The reason for a record cut short by the end of the stream, or by its damage. */
  private String truncated(String reason) {
    if (streamDamage == null) {
      return reason;
    }
    streamDamageReported = true;
    return streamDamage + " (the readable data ends inside this record)";
  }

  /** Whether the length field at {@code pos} (holding {@code len}) matches its checksum. */
  private boolean lengthCrcMatches(long len) {
    if (len != lastLength) {
      lastLengthCrc = crc.masked(buf, pos, 8);
      lastLength = len;
    }
    return lastLengthCrc == TFRecordCrc.getIntLE(buf, pos + 8);
  }

  /**
   * Handles damage at {@code off} (the current position): throws under the fail policy,
   * otherwise counts it and scans forward from {@code off + 1} to the next valid record. A
   * header that is not valid exactly where a range after byte 0 begins is said to be where no
   * record may begin (an index that does not describe the file), not only damage.
   *
   * @return true if the stream has nothing more to read
   */
  private boolean damaged(long off, String reason) throws IOException {
    String advice = options.skipAdvice;
    if (off == rangeStart && rangeStart > 0 && !reason.equals(DATA_CHECKSUM_MISMATCH)) {
      reason = "no valid record header where the byte range begins (" + reason + "): no record "
          + "begins here, or its header is damaged";
      advice = RANGE_START_ADVICE + "; or " + options.skipAdvice;
    }
    if (!options.skipCorrupt) {
      throw new CorruptRecordException(source, off, reason + " (" + advice + ")");
    }
    skippedRecords++;
    LOG.warn("Skipping damaged data in {} at byte offset {}: {}", source, off, reason);
    if (bufStart + pos == off && pos < limit) {
      pos++;
    }
    boolean found = scanWithinBudget();
    skippedBytes += (bufStart + pos) - off;
    return !found;
  }

  /**
   * The data bytes that a scan for the next record after damage may check against CRCs:
   * twice the longest record allowed, at least 64 MiB. Each header whose own CRC matches costs
   * a data CRC over the length it announces: enough for the next record and the rare header
   * that looks valid by chance, while a crafted file of back-to-back such headers would
   * otherwise cost time quadratic in its size.
   */
  static long crcBudget(long maxRecordBytes) {
    return Math.max(2 * maxRecordBytes, 64L << 20);
  }

  /** {@link #scan} paying each data CRC from a fresh {@link #crcBudget}. */
  private boolean scanWithinBudget() throws IOException {
    crcBudget = crcBudget(options.maxRecordBytes);
    crcBudgetSpent = false;
    try {
      return scan();
    } finally {
      crcBudget = -1;
    }
  }

  /**
   * Advances to the next offset holding a valid record; false (all consumed) if none.
   *
   * @throws CorruptRecordException whatever the policy, once the CRC budget is spent
   */
  private boolean scan() throws IOException {
    long from = bufStart + pos;
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
      if (crcBudgetSpent) {
        throw new CorruptRecordException(source, bufStart + pos, "looking for a record from "
            + "byte offset " + from + ", so many record headers look valid but hold damaged "
            + "data that resynchronising was given up (more than "
            + (crcBudget(options.maxRecordBytes) >> 20) + " MiB of checksums): the file is "
            + "crafted or damaged beyond skipping (rewrite it from its source, or leave it out)");
      }
      pos++;
    }
  }

  /**
   * Whether {@code b[off, off + 12)} is a record's header (its length and the length's masked
   * CRC32C) that announces a record of {@code framedLength} bytes, framing included; any length
   * when {@code framedLength} is negative. Checks a record boundary that an index states
   * without reading the record.
   */
  public static boolean isHeader(byte[] b, int off, long framedLength) {
    if (new TFRecordCrc().masked(b, off, 8) != TFRecordCrc.getIntLE(b, off + 8)) {
      return false;
    }
    long len = TFRecordCrc.getLongLE(b, off);
    return len >= 0 && (framedLength < 0 || len == framedLength - FRAMING);
  }

  /**
   * Whether a valid record starts at the current position: its length checksum matches, its
   * length is allowed, the whole record is there and its data checksum matches. Does not move.
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
    if (streamLength >= 0 && bufStart + pos + FRAMING + n > streamLength) {
      return false;
    }
    if (ensure(n + FRAMING) < n + FRAMING) {
      return false;
    }
    if (crcBudget >= 0) { // scanning past damage: each data CRC is paid from the budget
      if (n > crcBudget) {
        crcBudgetSpent = true;
        return false;
      }
      crcBudget -= n;
    }
    return crc.masked(buf, pos + HEADER, n) == TFRecordCrc.getIntLE(buf, pos + HEADER + n);
  }

  /**
   * Makes at least {@code n} bytes available from {@code pos}, unless the stream ends first.
   * Never allocates ahead of the data: the buffer grows only once it is full of unread bytes.
   */
  private int ensure(int n) throws IOException {
    if (limit - pos >= n || eof) {
      return limit - pos;
    }
    while (limit - pos < n && !eof) {
      if (limit == buf.length) {
        makeRoom();
      }
      int r;
      try {
        r = in.read(buf, limit, buf.length - limit);
      } catch (CorruptStreamException e) {
        streamDamage = e.getMessage();
        eof = true;
        break;
      }
      if (r < 0) {
        eof = true;
        break;
      }
      limit += r;
    }
    return limit - pos;
  }

  /**
   * Frees space at the end of a full buffer: moves the unread bytes to the front if at least
   * half the buffer has been consumed (so each byte is moved O(1) times), else doubles it.
   */
  private void makeRoom() {
    int avail = limit - pos;
    byte[] target = buf;
    if (pos < buf.length / 2 || pos == 0) {
      if (buf.length >= maxCapacity) {
        if (pos == 0) {
          throw new IllegalStateException("read buffer cannot grow past " + maxCapacity);
        }
      } else {
        target = new byte[(int) Math.min(maxCapacity, 2L * buf.length)];
      }
    }
    System.arraycopy(buf, pos, target, 0, avail);
    buf = target;
    bufStart += pos;
    pos = 0;
    limit = avail;
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

  /** Size of the read buffer now (it grows with the records read, up to twice the maximum). */
  public int getBufferCapacity() {
    return buf.length;
  }

  public String getSource() {
    return source;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
