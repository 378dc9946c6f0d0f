package org.tfrecordio.example;

import static org.tfrecordio.example.ExampleWire.*;

import java.util.Arrays;

/**
 * One Feature message, possibly merged from several occurrences: its kind and the byte ranges
 * of its list message(s) of that kind.
 */
public final class FeatureView {
  public byte[] buf;
  public int kind;
  public int segments;
  public int[] segStart = new int[4];
  public int[] segEnd = new int[4];
  private final WireReader r = new WireReader();
  private final WireReader lr = new WireReader();

  public void reset(byte[] b) {
    buf = b;
    kind = NO_KIND;
    segments = 0;
  }

  /** Parses (merges in) the Feature message at {@code [start, end)}. */
  public void merge(int start, int end) {
    WireReader rd = r.reset(buf, start, end);
    while (rd.more()) {
      int tag = rd.tag();
      int field = tag >>> 3;
      if ((tag & 7) == WT_LEN && field >= BYTES && field <= INT64) {
        int e = rd.len();
        if (field != kind) {
          kind = field;
          segments = 0;
        }
        if (segments == segStart.length) {
          segStart = Arrays.copyOf(segStart, segments * 2);
          segEnd = Arrays.copyOf(segEnd, segments * 2);
        }
        segStart[segments] = rd.valueStart;
        segEnd[segments++] = e;
      } else {
        rd.skip(tag);
      }
    }
  }

  /** The values' bytes found by {@link #onePacked}: {@code buf[packedStart, packedEnd)}. */
  public int packedStart;
  public int packedEnd;
  /** The value found by {@link #oneVarint} or {@link #oneFloat} (a float's bits). */
  public long single;

  /**
   * Whether the values are one length-delimited field shorter than 128 bytes in one segment:
   * one packed list of numbers, or one bytes value (the usual encoding of a small feature),
   * whose bytes {@link #packedStart} and {@link #packedEnd} then bound. A fast path: when it
   * is false, {@link #read} decodes whatever the encoding.
   */
  public boolean onePacked() {
    if (segments != 1) {
      return false;
    }
    int s = segStart[0];
    int e = segEnd[0];
    if (e - s < 2 || buf[s] != TAG1_LEN || buf[s + 1] < 0 || s + 2 + buf[s + 1] != e) {
      return false;
    }
    packedStart = s + 2;
    packedEnd = e;
    return true;
  }

  /** Whether an INT64 feature holds exactly one value, packed; it is then {@link #single}. */
  public boolean oneVarint() {
    if (kind != INT64 || !onePacked()) {
      return false;
    }
    long value = 0;
    for (int p = packedStart, shift = 0; p < packedEnd && shift < 64; p++, shift += 7) {
      int x = buf[p];
      value |= (long) (x & 0x7F) << shift;
      if (x >= 0) {
        single = value;
        return p == packedEnd - 1;
      }
    }
    return false;
  }

  /** Whether a FLOAT feature holds exactly one value, packed; its bits are then {@link #single}. */
  public boolean oneFloat() {
    if (kind != FLOAT || !onePacked() || packedEnd - packedStart != 4) {
      return false;
    }
    single = (int) INT_LE.get(buf, packedStart);
    return true;
  }

  /** The number of values, without decoding them. */
  public int count() {
    int n = 0;
    for (int s = 0; s < segments; s++) {
      WireReader rd = lr.reset(buf, segStart[s], segEnd[s]);
      while (rd.more()) {
        int tag = rd.tag();
        if (tag == TAG1_LEN) {
          int e = rd.len();
          if (kind == BYTES) {
            n++;
          } else if (kind == FLOAT) {
            n += checkedFloats(e - rd.valueStart);
          } else {
            n += countVarints(buf, rd.valueStart, e);
          }
        } else if ((kind == INT64 && tag == TAG1_VARINT)
            || (kind == FLOAT && tag == TAG1_FIXED32)) {
          rd.skip(tag);
          n++;
        } else {
          rd.skip(tag);
        }
      }
    }
    return n;
  }

  /** Decodes the values into {@code v} (which is cleared first). */
  public void read(FeatureValues v) {
    v.n = 0;
    v.buf = buf;
    for (int s = 0; s < segments; s++) {
      WireReader rd = lr.reset(buf, segStart[s], segEnd[s]);
      while (rd.more()) {
        int tag = rd.tag();
        if (tag == TAG1_LEN) {
          int e = rd.len();
          int start = rd.valueStart;
          if (kind == BYTES) {
            v.addBytes(start, e - start);
          } else if (kind == FLOAT) {
            int k = checkedFloats(e - start);
            v.ensureFloats(k);
            float[] f = v.floats;
            byte[] b = buf;
            int n = v.n;
            for (int p = start; p < e; p += 4) {
              f[n++] = Float.intBitsToFloat((int) INT_LE.get(b, p));
            }
            v.n = n;
          } else {
            int saved = rd.limit;
            rd.pos = start;
            rd.limit = e;
            while (rd.pos < e) {
              v.addLong(rd.varint());
            }
            rd.limit = saved;
          }
        } else if (kind == INT64 && tag == TAG1_VARINT) {
          v.addLong(rd.varint());
        } else if (kind == FLOAT && tag == TAG1_FIXED32) {
          v.addFloat(Float.intBitsToFloat(rd.fixed32()));
        } else {
          rd.skip(tag);
        }
      }
    }
  }

  /** True if every BYTES value is valid UTF-8. */
  public boolean allUtf8() {
    for (int s = 0; s < segments; s++) {
      WireReader rd = lr.reset(buf, segStart[s], segEnd[s]);
      while (rd.more()) {
        int tag = rd.tag();
        if (tag == TAG1_LEN) {
          int e = rd.len();
          if (!validUtf8(buf, rd.valueStart, e - rd.valueStart)) {
            return false;
          }
        } else {
          rd.skip(tag);
        }
      }
    }
    return true;
  }

  private static int checkedFloats(int bytes) {
    if ((bytes & 3) != 0) {
      throw malformed("packed floats of " + bytes + " bytes");
    }
    return bytes >>> 2;
  }

  private static int countVarints(byte[] b, int start, int end) {
    int n = 0;
    for (int p = start; p < end; p++) {
      if (b[p] >= 0) {
        n++;
      }
    }
    if (end > start && b[end - 1] < 0) {
      throw malformed("truncated packed varint");
    }
    return n;
  }
}
