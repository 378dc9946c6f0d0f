package org.tfrecordio.spark;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.example.WireSink;

/**
 * Encodes Spark's internal rows (what a data source's writer receives) as serialized Examples or
 * SequenceExamples, or passes ByteArray records through: the same records, byte for byte, as
 * {@link RowEncoder} makes of the equivalent external Rows. Values are read in their internal
 * form (dates as days, timestamps as microseconds, UTF8String, Decimal), so nothing is
 * converted on the way. Not thread-safe: one instance per task.
 */
public final class InternalRowEncoder implements Serializable {
  private static final long serialVersionUID = 1L;
  private final RowEncoder plan;
  private transient WireSink sink;

  private InternalRowEncoder(RowEncoder plan) {
    this.plan = plan;
  }

  /**
   * Checks the schema of the rows to write (partition columns excluded) and plans encoding.
   *
   * @throws SchemaException naming the first column whose type has no feature form
   */
  public static InternalRowEncoder plan(StructType schema, String recordType) {
    return new InternalRowEncoder(RowEncoder.plan(schema, recordType, null));
  }

  /** The buffer holding the last encoded record. */
  public byte[] buffer() {
    return sink.buf;
  }

  /**
   * Encodes a row. The record is {@code buffer()[0, length)}, valid until the next call.
   *
   * @return the record's length
   */
  public int encode(InternalRow row) {
    if (sink == null) {
      sink = new WireSink(4096);
    }
    WireSink s = sink;
    s.reset();
    if (plan.bytesIndex >= 0) {
      if (row.isNullAt(plan.bytesIndex)) {
        throw FeatureWriter.nullRecord(plan.bytesName);
      }
      byte[] b = row.getBinary(plan.bytesIndex);
      s.bytes(b, 0, b.length);
      return s.pos;
    }
    int features = s.begin(ExampleWire.TAG1_LEN);
    for (RowEncoder.Column c : plan.context) {
      if (row.isNullAt(c.index)) {
        continue;
      }
      int entry = s.begin(ExampleWire.TAG1_LEN);
      s.bytes(c.keyField, 0, c.keyField.length);
      int feature = s.begin(ExampleWire.TAG2_LEN);
      if (c.plan.shape == SparkFeatureTypes.SCALAR) {
        scalar(s, c, row);
      } else if (c.plan.shape == SparkFeatureTypes.VECTOR) {
        FeatureWriter.floats(s, vector(row.getStruct(c.index, 4)));
      } else {
        list(s, c, row.getArray(c.index), "inside a list");
      }
      s.end(feature);
      s.end(entry);
    }
    s.end(features);
    if (RowEncoder.SEQUENCE_EXAMPLE.equals(plan.recordType)) {
      int lists = s.begin(ExampleWire.TAG2_LEN);
      for (RowEncoder.Column c : plan.featureLists) {
        if (row.isNullAt(c.index)) {
          continue;
        }
        int entry = s.begin(ExampleWire.TAG1_LEN);
        s.bytes(c.keyField, 0, c.keyField.length);
        int featureList = s.begin(ExampleWire.TAG2_LEN);
        ArrayData steps = row.getArray(c.index);
        for (int k = 0; k < steps.numElements(); k++) {
          if (steps.isNullAt(k)) {
            throw FeatureWriter.nullStep(c.name);
          }
          int feature = s.begin(ExampleWire.TAG1_LEN);
          if (c.plan.shape == SparkFeatureTypes.VECTOR_STEPS) {
            FeatureWriter.floats(s, vector(steps.getStruct(k, 4)));
          } else {
            list(s, c, steps.getArray(k), "inside a step");
          }
          s.end(feature);
        }
        s.end(featureList);
        s.end(entry);
      }
      s.end(lists);
    }
    return s.pos;
  }

  /** The values of an ML (or mllib) vector in VectorUDT's form, densified. */
  private static double[] vector(InternalRow v) {
    double[] values = v.getArray(3).toDoubleArray();
    if (v.getByte(0) == 1) {
      return values;
    }
    double[] dense = new double[v.getInt(1)];
    int[] indices = v.getArray(2).toIntArray();
    for (int i = 0; i < indices.length; i++) {
      dense[indices[i]] = values[i];
    }
    return dense;
  }

  private static void scalar(WireSink s, RowEncoder.Column c, InternalRow row) {
    int i = c.index;
    switch (c.plan.leaf) {
      case SparkFeatureTypes.BOOLEAN:
        FeatureWriter.int64(s, c.kindTag, row.getBoolean(i) ? 1 : 0);
        return;
      case SparkFeatureTypes.BYTE:
        FeatureWriter.int64(s, c.kindTag, row.getByte(i));
        return;
      case SparkFeatureTypes.SHORT:
        FeatureWriter.int64(s, c.kindTag, row.getShort(i));
        return;
      case SparkFeatureTypes.INT:
      case SparkFeatureTypes.DATE:
        FeatureWriter.int64(s, c.kindTag, row.getInt(i));
        return;
      case SparkFeatureTypes.LONG:
      case SparkFeatureTypes.TIMESTAMP:
      case SparkFeatureTypes.TIMESTAMP_NTZ:
        FeatureWriter.int64(s, c.kindTag, row.getLong(i));
        return;
      case SparkFeatureTypes.FLOAT:
        FeatureWriter.float32(s, c.kindTag, row.getFloat(i));
        return;
      case SparkFeatureTypes.DOUBLE:
        FeatureWriter.float32(s, c.kindTag, (float) row.getDouble(i));
        return;
      case SparkFeatureTypes.STRING: {
        UTF8String u = row.getUTF8String(i);
        byte[] b = u.getBytes();
        FeatureWriter.bytes(s, c.kindTag, b, 0, b.length);
        return;
      }
      case SparkFeatureTypes.BINARY: {
        byte[] b = row.getBinary(i);
        FeatureWriter.bytes(s, c.kindTag, b, 0, b.length);
        return;
      }
      default: { // DECIMAL
        byte[] b = decimalText(row.getDecimal(i, c.plan.precision, c.plan.scale));
        FeatureWriter.bytes(s, c.kindTag, b, 0, b.length);
      }
    }
  }

  /**
   * A decimal's text as the Python encoder writes it (Arrow's decimal-to-string cast): the
   * general decimal arithmetic spec's, which is Java's {@code BigDecimal.toString}: plain, but
   * scientific below 1E-6 ({@code 1.000E-7}, {@code 0E-10}); {@code toPlainString} wrote other
   * bytes for those values than {@code from_arrow} did.
   */
  private static byte[] decimalText(org.apache.spark.sql.types.Decimal d) {
    return d.toJavaBigDecimal().toString().getBytes(StandardCharsets.UTF_8);
  }

  private static void list(WireSink s, RowEncoder.Column c, ArrayData a, String where) {
    int leaf = c.plan.leaf;
    int kind = SparkFeatureTypes.kind(leaf);
    int n = a.numElements();
    int list = s.begin(c.kindTag);
    for (int j = 0; j < n; j++) {
      if (a.isNullAt(j)) {
        throw FeatureWriter.nullInside(c.name, where);
      }
    }
    if (n > 0) {
      if (kind == ExampleWire.BYTES) {
        for (int j = 0; j < n; j++) {
          byte[] b;
          if (leaf == SparkFeatureTypes.BINARY) {
            b = a.getBinary(j);
          } else if (leaf == SparkFeatureTypes.DECIMAL) {
            b = decimalText(a.getDecimal(j, c.plan.precision, c.plan.scale));
          } else {
            b = a.getUTF8String(j).getBytes();
          }
          s.header(ExampleWire.TAG1_LEN, b.length);
          s.bytes(b, 0, b.length);
        }
      } else if (kind == ExampleWire.FLOAT) {
        s.header(ExampleWire.TAG1_LEN, 4 * n);
        for (int j = 0; j < n; j++) {
          s.float32(leaf == SparkFeatureTypes.FLOAT ? a.getFloat(j) : (float) a.getDouble(j));
        }
      } else {
        int packed = s.begin(ExampleWire.TAG1_LEN);
        for (int j = 0; j < n; j++) {
          s.varint(longAt(a, j, leaf));
        }
        s.end(packed);
      }
    }
    s.end(list);
  }

  private static long longAt(ArrayData a, int j, int leaf) {
    switch (leaf) {
      case SparkFeatureTypes.BOOLEAN:
        return a.getBoolean(j) ? 1 : 0;
      case SparkFeatureTypes.BYTE:
        return a.getByte(j);
      case SparkFeatureTypes.SHORT:
        return a.getShort(j);
      case SparkFeatureTypes.INT:
      case SparkFeatureTypes.DATE:
        return a.getInt(j);
      default:
        return a.getLong(j);
    }
  }
}
