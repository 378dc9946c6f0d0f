package org.tfrecordio.example;

import static org.tfrecordio.example.ExampleWire.*;

import java.util.Arrays;

/** A growable byte buffer with the protobuf primitives the encoder needs. */
public final class WireSink {
  public byte[] buf;
  public int pos;

  public WireSink(int capacity) {
    buf = new byte[Math.max(16, capacity)];
  }

  public void reset() {
    pos = 0;
  }

  public void ensure(int extra) {
    if (pos + extra > buf.length) {
      grow(extra);
    }
  }

  private void grow(int extra) {
    long want = Math.max(2L * buf.length, (long) pos + extra);
    if (want > Integer.MAX_VALUE - 16) {
      if ((long) pos + extra > Integer.MAX_VALUE - 16) {
        throw new SchemaException(
            "a record would be larger than 2 GiB, more than protobuf allows");
      }
      want = Integer.MAX_VALUE - 16;
    }
    buf = Arrays.copyOf(buf, (int) want);
  }

  public void rawByte(int b) {
    ensure(1);
    buf[pos++] = (byte) b;
  }

  public void varint(long v) {
    ensure(10);
    byte[] b = buf;
    int p = pos;
    while ((v & ~0x7FL) != 0) {
      b[p++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    b[p++] = (byte) v;
    pos = p;
  }

  /** A float as protobuf's fixed32: its IEEE bits, little-endian (NaN payloads kept). */
  public void float32(float f) {
    ensure(4);
    INT_LE.set(buf, pos, Float.floatToRawIntBits(f));
    pos += 4;
  }

  public void bytes(byte[] src, int off, int len) {
    ensure(len);
    System.arraycopy(src, off, buf, pos, len);
    pos += len;
  }

  /** A length-delimited value of known length: tag, varint length, then the caller's bytes. */
  public void header(int tag, int length) {
    ensure(11);
    buf[pos++] = (byte) tag;
    varint(length);
  }

  /**
   * Starts a length-delimited field whose length is not known yet: writes the tag and one
   * byte for the length. Returns the mark to pass to {@link #end}.
   */
  public int begin(int tag) {
    ensure(2);
    buf[pos] = (byte) tag;
    buf[pos + 1] = 0;
    pos += 2;
    return pos;
  }

  /** Ends the field {@link #begin} started: writes its length, moving the content if needed. */
  public void end(int mark) {
    int len = pos - mark;
    if (len < 0x80) {
      buf[mark - 1] = (byte) len;
      return;
    }
    int n = varintSize(len);
    ensure(n - 1);
    System.arraycopy(buf, mark, buf, mark + n - 1, len);
    int p = mark - 1;
    long v = len;
    while ((v & ~0x7FL) != 0) {
      buf[p++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    buf[p] = (byte) v;
    pos += n - 1;
  }
}
