package org.tfrecordio.spark;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A hand-written protobuf wire-format encoder and decoder for {@code tf.train.Example} and
 * {@code tf.train.SequenceExample} (no protobuf-java, so nothing can conflict with the
 * protobuf that Spark or Hadoop bring):
 *
 * <pre>
 * Example         { Features features = 1; }
 * SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }
 * Features        { map&lt;string, Feature&gt; feature = 1; }
 * FeatureLists    { map&lt;string, FeatureList&gt; feature_list = 1; }
 * FeatureList     { repeated Feature feature = 1; }
 * Feature         { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
 *                                Int64List int64_list = 3; } }
 * BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1 [packed]; }
 * Int64List { repeated int64 value = 1 [packed]; }
 * </pre>
 *
 * <p>Encoding writes what protobuf's deterministic serialization writes (map entries in the
 * order the caller gives, packed numbers, an empty packed list as nothing). Decoding follows
 * protobuf's parsing rules: unknown fields and fields of an unexpected wire type are skipped,
 * packed and non-packed repeated numbers are both accepted, a message field that occurs more
 * than once is merged, a oneof member replaces a different one set before it, and the last of
 * duplicate map keys wins.
 */
public final class ExampleWire {
  /** Feature kinds: the field numbers of Feature's oneof, 0 for none set. */
  public static final int NO_KIND = 0;
  public static final int BYTES = 1;
  public static final int FLOAT = 2;
  public static final int INT64 = 3;

  static final int WT_VARINT = 0;
  static final int WT_FIXED64 = 1;
  static final int WT_LEN = 2;
  static final int WT_START_GROUP = 3;
  static final int WT_END_GROUP = 4;
  static final int WT_FIXED32 = 5;

  /** Tags (field number and wire type) of fields 1, 2 and 3 with wire type 2 (length-delimited). */
  static final int TAG1_LEN = 0x0a;
  static final int TAG2_LEN = 0x12;
  static final int TAG3_LEN = 0x1a;
  static final int TAG1_VARINT = 0x08;
  static final int TAG1_FIXED32 = 0x0d;

  private static final VarHandle INT_LE =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private ExampleWire() {}

  /** "bytes", "float", "int64" or "no", as the Python codec names kinds in messages. */
  static String kindLabel(int kind) {
    switch (kind) {
      case BYTES:
        return "bytes";
      case FLOAT:
        return "float";
      case INT64:
        return "int64";
      default:
        return "no";
    }
  }

  /** The number of bytes of {@code v} as a varint. */
  static int varintSize(long v) {
    int n = 1;
    while ((v & ~0x7FL) != 0) {
      v >>>= 7;
      n++;
    }
    return n;
  }

  /** {@code 0x0a, varint(len), key}: the key field of a map entry. */
  static byte[] keyField(byte[] key) {
    Sink s = new Sink(key.length + 6);
    s.rawByte(TAG1_LEN);
    s.varint(key.length);
    s.bytes(key, 0, key.length);
    return Arrays.copyOf(s.buf, s.pos);
  }

  // ------------------------------------------------------------------------------------------
  // Writing
  // ------------------------------------------------------------------------------------------

  /** A growable byte buffer with the protobuf primitives the encoder needs. */
  static final class Sink {
    byte[] buf;
    int pos;

    Sink(int capacity) {
      buf = new byte[Math.max(16, capacity)];
    }

    void reset() {
      pos = 0;
    }

    void ensure(int extra) {
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

    void rawByte(int b) {
      ensure(1);
      buf[pos++] = (byte) b;
    }

    void varint(long v) {
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
    void float32(float f) {
      ensure(4);
      INT_LE.set(buf, pos, Float.floatToRawIntBits(f));
      pos += 4;
    }

    void bytes(byte[] src, int off, int len) {
      ensure(len);
      System.arraycopy(src, off, buf, pos, len);
      pos += len;
    }

    /** A length-delimited value of known length: tag, varint length, then the caller's bytes. */
    void header(int tag, int length) {
      ensure(11);
      buf[pos++] = (byte) tag;
      varint(length);
    }

    /**
     * Starts a length-delimited field whose length is not known yet: writes the tag and one
     * byte for the length. Returns the mark to pass to {@link #end}.
     */
    int begin(int tag) {
      ensure(2);
      buf[pos] = (byte) tag;
      buf[pos + 1] = 0;
      pos += 2;
      return pos;
    }

    /** Ends the field {@link #begin} started: writes its length, moving the content if needed. */
    void end(int mark) {
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

  // ------------------------------------------------------------------------------------------
  // Reading
  // ------------------------------------------------------------------------------------------

  /** A cursor over one message's bytes {@code [pos, limit)}. */
  static final class Reader {
    byte[] buf;
    int pos;
    int limit;
    /** Start of the last length-delimited value read by {@link #len}. */
    int valueStart;

    Reader reset(byte[] b, int start, int end) {
      buf = b;
      pos = start;
      limit = end;
      return this;
    }

    boolean more() {
      return pos < limit;
    }

    /** Reads a tag; malformed if it is zero. */
    int tag() {
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

    long varint() {
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

    int fixed32() {
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
    int len() {
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
    void skip(int tag) {
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

  static SchemaException malformed(String why) {
    return new SchemaException("not a valid protobuf message: " + why);
  }

  /** Decoded values of one Feature, in scratch arrays reused from record to record. */
  static final class Values {
    int n;
    long[] longs = new long[16];
    float[] floats = new float[16];
    /** BYTES: value i is {@code buf[starts[i], starts[i] + lens[i])}. */
    int[] starts = new int[16];
    int[] lens = new int[16];
    byte[] buf;

    void addLong(long v) {
      if (n == longs.length) {
        longs = Arrays.copyOf(longs, n * 2);
      }
      longs[n++] = v;
    }

    void addFloat(float v) {
      if (n == floats.length) {
        floats = Arrays.copyOf(floats, n * 2);
      }
      floats[n++] = v;
    }

    void ensureFloats(int extra) {
      if (n + extra > floats.length) {
        floats = Arrays.copyOf(floats, Math.max(floats.length * 2, n + extra));
      }
    }

    void addBytes(int start, int len) {
      if (n == starts.length) {
        starts = Arrays.copyOf(starts, n * 2);
        lens = Arrays.copyOf(lens, n * 2);
      }
      starts[n] = start;
      lens[n++] = len;
    }
  }

  /**
   * One Feature message, possibly merged from several occurrences: its kind and the byte ranges
   * of its list message(s) of that kind.
   */
  static final class FeatureView {
    byte[] buf;
    int kind;
    int segments;
    int[] segStart = new int[4];
    int[] segEnd = new int[4];
    private final Reader r = new Reader();
    private final Reader lr = new Reader();

    void reset(byte[] b) {
      buf = b;
      kind = NO_KIND;
      segments = 0;
    }

    /** Parses (merges in) the Feature message at {@code [start, end)}. */
    void merge(int start, int end) {
      Reader rd = r.reset(buf, start, end);
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

    /** The number of values, without decoding them. */
    int count() {
      int n = 0;
      for (int s = 0; s < segments; s++) {
        Reader rd = lr.reset(buf, segStart[s], segEnd[s]);
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
    void read(Values v) {
      v.n = 0;
      v.buf = buf;
      for (int s = 0; s < segments; s++) {
        Reader rd = lr.reset(buf, segStart[s], segEnd[s]);
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
    boolean allUtf8() {
      for (int s = 0; s < segments; s++) {
        Reader rd = lr.reset(buf, segStart[s], segEnd[s]);
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

  /** True if {@code b[off, off + len)} is well-formed UTF-8 (no surrogates, no overlongs). */
  static boolean validUtf8(byte[] b, int off, int len) {
    int i = off;
    int end = off + len;
    while (i + 8 <= end && ((long) LONG_LE.get(b, i) & 0x8080808080808080L) == 0) {
      i += 8;
    }
    while (i < end && b[i] >= 0) {
      i++;
    }
    while (i < end) {
      int c = b[i++] & 0xff;
      if (c < 0x80) {
        continue;
      }
      if (c < 0xC2) {
        return false;
      }
      if (c < 0xE0) {
        if (i >= end || (b[i] & 0xC0) != 0x80) {
          return false;
        }
        i++;
      } else if (c < 0xF0) {
        if (i + 1 >= end) {
          return false;
        }
        int c1 = b[i] & 0xff;
        if ((c1 & 0xC0) != 0x80 || (b[i + 1] & 0xC0) != 0x80
            || (c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) {
          return false;
        }
        i += 2;
      } else if (c < 0xF5) {
        if (i + 2 >= end) {
          return false;
        }
        int c1 = b[i] & 0xff;
        if ((c1 & 0xC0) != 0x80 || (b[i + 1] & 0xC0) != 0x80 || (b[i + 2] & 0xC0) != 0x80
            || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) {
          return false;
        }
        i += 3;
      } else {
        return false;
      }
    }
    return true;
  }

  /** Unsigned lexicographic order of UTF-8 bytes: code point order, as Python sorts names. */
  static int compareUtf8(byte[] a, byte[] b) {
    int n = Math.min(a.length, b.length);
    for (int i = 0; i < n; i++) {
      int d = (a[i] & 0xff) - (b[i] & 0xff);
      if (d != 0) {
        return d;
      }
    }
    return a.length - b.length;
  }
}
