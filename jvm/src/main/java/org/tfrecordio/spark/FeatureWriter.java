package org.tfrecordio.spark;

import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.example.WireSink;

/**
 * Writes the body of one {@code Feature} message (its kind's list) in protobuf's deterministic
 * serialization: scalars, packed int64 and float lists, bytes lists, for
 * {@link InternalRowEncoder}; and the errors for nulls where a record cannot have one.
 */
final class FeatureWriter {
  private FeatureWriter() {}

  /** A feature of one int64. */
  static void int64(WireSink s, int kindTag, long x) {
    int vs = ExampleWire.varintSize(x);
    s.header(kindTag, vs + 2);
    s.header(ExampleWire.TAG1_LEN, vs);
    s.varint(x);
  }

  /** A feature of one float. */
  static void float32(WireSink s, int kindTag, float x) {
    s.header(kindTag, 6);
    s.header(ExampleWire.TAG1_LEN, 4);
    s.float32(x);
  }

  /** A feature of one bytes value. */
  static void bytes(WireSink s, int kindTag, byte[] b, int off, int len) {
    int inner = 1 + ExampleWire.varintSize(len) + len;
    s.header(kindTag, inner);
    s.header(ExampleWire.TAG1_LEN, len);
    s.bytes(b, off, len);
  }

  /** A float_list feature of a vector's values. */
  static void floats(WireSink s, double[] values) {
    s.rawByte((ExampleWire.FLOAT << 3) | ExampleWire.WT_LEN);
    int n = values.length;
    if (n == 0) {
      s.rawByte(0);
      return;
    }
    int bytes = 4 * n;
    s.varint(bytes + 1 + ExampleWire.varintSize(bytes));
    s.header(ExampleWire.TAG1_LEN, bytes);
    for (double d : values) {
      s.float32((float) d);
    }
  }

  static SchemaException nullInside(String column, String where) {
    return new SchemaException("column " + SchemaException.q(column) + ": a null " + where
        + " has no TFRecord form: drop the nulls (array_compact) or replace them first");
  }

  static SchemaException nullStep(String column) {
    return new SchemaException("column " + SchemaException.q(column)
        + ": a null step of a feature list has no TFRecord form");
  }

  static SchemaException nullRecord(String column) {
    return new SchemaException("column " + SchemaException.q(column)
        + " is null in a row, and a ByteArray record can't be null");
  }
}
