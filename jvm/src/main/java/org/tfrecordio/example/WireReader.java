package org.tfrecordio.example;

import static org.tfrecordio.example.ExampleWire.*;

/** A cursor over one message's bytes {@code [pos, limit)}. */
public final class WireReader {
  public byte[] buf;
  public int pos;
  public int limit;
  /** Start of the last length-delimited value read by {@link #len}. */
  public int valueStart;

  public WireReader reset(byte[] b, int start, int end) {
    buf = b;
    pos = start;
    limit = end;
    return this;
  }

  public boolean more() {
    return pos < limit;
  }

  /** Reads a tag; malformed if it is zero. */
  public int tag() {
    int p = pos;
    if (p < limit) {
      int b = buf[p];
      if (b > 0) {
        pos = p + 1;
        return b;
      }
    }
    long t = varint();
    if (t == 0 || t > 0xFFFFFFFFL) {
      throw malformed("invalid tag " + t);
    }
    return (int) t;
  }

  public long varint() {
    byte[] b = buf;
    int p = pos;
    if (p < limit && b[p] >= 0) {
      pos = p + 1;
      return b[p];
    }
    return varintSlow();
  }

  private long varintSlow() {
    byte[] b = buf;
    int p = pos;
    long result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= limit) {
        throw malformed("truncated varint");
      }
      int x = b[p++];
      result |= (long) (x & 0x7F) << shift;
      if (x >= 0) {
        pos = p;
        return result;
      }
    }
    throw malformed("varint longer than 10 bytes");
  }

  public int fixed32() {
    if (limit - pos < 4) {
      throw malformed("truncated fixed32");
    }
    byte[] b = buf;
    int p = pos;
    pos = p + 4;
    return (b[p] & 0xff) | (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff) << 16
        | (b[p + 3] & 0xff) << 24;
  }

  /**
   * Reads a length-delimited value: sets {@link #valueStart}, moves past it, returns its end.
   */
  public int len() {
    int p = pos;
    long n;
    if (p < limit && buf[p] >= 0) {
      n = buf[p];
      p++;
    } else {
      n = varintSlow();
      p = pos;
    }
    if (n < 0 || n > limit - p) {
      throw malformed("length " + n + " runs past the end of its message");
    }
    valueStart = p;
    pos = p + (int) n;
    return pos;
  }

  /** Skips the value of a field with wire type {@code wt} (the tag already read). */
  public void skip(int tag) {
    switch (tag & 7) {
      case WT_VARINT:
        varint();
        return;
      case WT_FIXED64:
        if (limit - pos < 8) {
          throw malformed("truncated fixed64");
        }
        pos += 8;
        return;
      case WT_LEN:
        len();
        return;
      case WT_START_GROUP:
        skipGroup(tag >>> 3, 0);
        return;
      case WT_FIXED32:
        if (limit - pos < 4) {
          throw malformed("truncated fixed32");
        }
        pos += 4;
        return;
      default:
        throw malformed("invalid wire type " + (tag & 7));
    }
  }

  private void skipGroup(int field, int depth) {
    if (depth > 64) {
      throw malformed("groups nested too deeply");
    }
    while (true) {
      int t = tag();
      if ((t & 7) == WT_END_GROUP) {
        if ((t >>> 3) != field) {
          throw malformed("mismatched end group");
        }
        return;
      }
      if ((t & 7) == WT_START_GROUP) {
        skipGroup(t >>> 3, depth + 1);
      } else {
        skip(t);
      }
    }
  }
}
