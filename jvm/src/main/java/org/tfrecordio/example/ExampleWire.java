package org.tfrecordio.example;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

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

  public static final int WT_VARINT = 0;
  public static final int WT_FIXED64 = 1;
  public static final int WT_LEN = 2;
  public static final int WT_START_GROUP = 3;
  public static final int WT_END_GROUP = 4;
  public static final int WT_FIXED32 = 5;

  /** Tags (field number and wire type) of fields 1, 2 and 3 with wire type 2 (length-delimited). */
  public static final int TAG1_LEN = 0x0a;
  public static final int TAG2_LEN = 0x12;
  public static final int TAG3_LEN = 0x1a;
  public static final int TAG1_VARINT = 0x08;
  public static final int TAG1_FIXED32 = 0x0d;

  static final VarHandle INT_LE =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private ExampleWire() {}

  /** "bytes", "float", "int64" or "no", as the Python codec names kinds in messages. */
  public static String kindLabel(int kind) {
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
  public static int varintSize(long v) {
    int n = 1;
    while ((v & ~0x7FL) != 0) {
      v >>>= 7;
      n++;
    }
    return n;
  }

  /** {@code 0x0a, varint(len), key}: the key field of a map entry. */
  public static byte[] keyField(byte[] key) {
    byte[] out = new byte[1 + varintSize(key.length) + key.length];
    out[0] = (byte) TAG1_LEN;
    int p = 1;
    long v = key.length;
    while ((v & ~0x7FL) != 0) {
      out[p++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    out[p++] = (byte) v;
    System.arraycopy(key, 0, out, p, key.length);
    return out;
  }

  public static SchemaException malformed(String why) {
    return new SchemaException("not a valid protobuf message: " + why);
  }


  /** True if {@code b[off, off + len)} is well-formed UTF-8 (no surrogates, no overlongs). */
  public static boolean validUtf8(byte[] b, int off, int len) {
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
  public static int compareUtf8(byte[] a, byte[] b) {
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
