package org.tfrecordio.hadoop;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * Decodes a damaged gzip or zlib file (members or streams one after another, as Hadoop's codecs
 * read them) up to the last byte that can be decoded before the damage, losing nothing to the
 * failing call. A decoder loses the output of the call that meets bad input, so input is fed in
 * chunks until the first failure; then the file is decoded again, the failing chunk one byte
 * per call, and the output stops where that byte's bits are bad.
 *
 * <p>Used only after a codec has failed on the file ({@link CompressedInput}): it returns the
 * bytes after the {@code skip} bytes the codec delivered, then reports the end of the stream
 * (the caller reports the codec's error).
 */
final class RecoveringInflater extends InputStream {
  /** Opens the compressed file from its first byte. */
  interface Opener {
    InputStream open() throws IOException;
  }

  private static final int CHUNK = 16 * 1024;

  private final Opener opener;
  private final boolean gzip;
  private final long skip;

  private InputStream raw;
  private final byte[] in = new byte[CHUNK];
  private int inPos;
  private int inLen;
  private long inOffset; // offset in the file of in[0]
  private long byteModeFrom = Long.MAX_VALUE;
  private Inflater inflater;
  private final CRC32 crc = new CRC32();
  private long produced; // decoded bytes of this pass
  private long delivered; // decoded bytes counted as delivered (from the codec and from here)
  private long feedStart; // file offset of the input given to the inflater in the current call
  private boolean done;
  private boolean memberOpen;

  RecoveringInflater(Opener opener, boolean gzip, long skip) throws IOException {
    this.opener = opener;
    this.gzip = gzip;
    this.skip = skip;
    this.delivered = skip;
    restart();
  }

  private void restart() throws IOException {
    close();
    raw = opener.open();
    inPos = 0;
    inLen = 0;
    inOffset = 0;
    produced = 0;
    memberOpen = false;
    inflater = null;
  }

  @Override
  public int read() throws IOException {
    byte[] one = new byte[1];
    return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    byte[] scratch = null;
    while (!done) {
      // Output not yet delivered is returned; output delivered before (in an earlier pass, or
      // by the codec) is decoded again into scratch and dropped.
      long toDrop = delivered - produced;
      int n;
      try {
        if (toDrop > 0) {
          if (scratch == null) {
            scratch = new byte[CHUNK];
          }
          n = decode(scratch, 0, (int) Math.min(scratch.length, toDrop));
        } else {
          n = decode(b, off, len);
        }
      } catch (DataFormatException e) {
        if (byteModeFrom == Long.MAX_VALUE) {
          // decode again, the failing chunk byte by byte (from a little before it: the decoder
          // may hold a few bytes of earlier input in its bit buffer)
          byteModeFrom = Math.max(0, feedStart - 16);
          restart();
          continue;
        }
        done = true;
        break;
      } catch (EOFException e) {
        done = true;
        break;
      }
      if (n < 0) {
        done = true;
        break;
      }
      produced += n;
      if (toDrop <= 0 && n > 0) {
        delivered += n;
        return n;
      }
    }
    return -1;
  }

  /** Decodes up to {@code len} bytes; -1 at the end; throws at damage. */
  private int decode(byte[] b, int off, int len) throws IOException, DataFormatException {
    while (true) {
      if (!memberOpen) {
        if (!fill(1)) {
          return -1; // a clean end between members
        }
        startMember();
      }
      if (inflater.needsInput()) {
        if (!fill(1)) {
          throw new EOFException("truncated stream");
        }
        feedStart = inOffset + inPos;
        int n = feedStart >= byteModeFrom ? 1 : inLen - inPos;
        inflater.setInput(in, inPos, n);
        inPos += n;
      }
      int n = inflater.inflate(b, off, len);
      // Whatever the inflater did not consume goes back to the buffer.
      inPos -= inflater.getRemaining();
      inflater.setInput(in, inPos, 0);
      if (n > 0) {
        if (gzip) {
          crc.update(b, off, n);
        }
        return n;
      }
      if (inflater.finished()) {
        endMember();
      } else if (inflater.needsDictionary()) {
        throw new DataFormatException("a preset dictionary is not supported");
      }
    }
  }

  private void startMember() throws IOException, DataFormatException {
    if (gzip) {
      readGzipHeader();
      crc.reset();
    }
    inflater = new Inflater(gzip);
    memberOpen = true;
  }

  private void endMember() throws IOException, DataFormatException {
    if (gzip) {
      long expectedCrc = readLE(4);
      long size = readLE(4);
      if (expectedCrc != crc.getValue() || size != (inflater.getBytesWritten() & 0xffffffffL)) {
        throw new EOFException("gzip trailer mismatch");
      }
    }
    inflater.end();
    inflater = null;
    memberOpen = false;
  }

  private void readGzipHeader() throws IOException, DataFormatException {
    if (rawByte() != 0x1f || rawByte() != 0x8b || rawByte() != 8) {
      throw new EOFException("not a gzip header");
    }
    int flags = rawByte();
    if ((flags & 0xE0) != 0) {
      throw new EOFException(GzipFlagCheck.RESERVED_FLAGS); // refused before any of its data
    }
    for (int i = 0; i < 6; i++) {
      rawByte(); // MTIME, XFL, OS
    }
    if ((flags & 4) != 0) {
      int xlen = rawByte() | (rawByte() << 8);
      for (int i = 0; i < xlen; i++) {
        rawByte();
      }
    }
    for (int bit : new int[] {8, 16}) { // FNAME, FCOMMENT: zero-terminated
      if ((flags & bit) != 0) {
        while (rawByte() != 0) {
          // skip
        }
      }
    }
    if ((flags & 2) != 0) {
      rawByte();
      rawByte();
    }
  }

  private long readLE(int n) throws IOException {
    long v = 0;
    for (int i = 0; i < n; i++) {
      v |= ((long) rawByte()) << (8 * i);
    }
    return v;
  }

  private int rawByte() throws IOException {
    if (!fill(1)) {
      throw new EOFException("truncated stream");
    }
    return in[inPos++] & 0xff;
  }

  /** Makes at least one unread raw byte available; false at the end of the file. */
  private boolean fill(int n) throws IOException {
    if (inLen - inPos >= n) {
      return true;
    }
    System.arraycopy(in, inPos, in, 0, inLen - inPos);
    inOffset += inPos;
    inLen -= inPos;
    inPos = 0;
    while (inLen < n) {
      int r = raw.read(in, inLen, in.length - inLen);
      if (r < 0) {
        return false;
      }
      inLen += r;
    }
    return true;
  }

  /** Decoded bytes returned so far, counting the {@code skip} bytes the codec delivered. */
  long delivered() {
    return delivered;
  }

  @Override
  public void close() throws IOException {
    if (inflater != null) {
      inflater.end();
      inflater = null;
    }
    if (raw != null) {
      raw.close();
      raw = null;
    }
  }
}
