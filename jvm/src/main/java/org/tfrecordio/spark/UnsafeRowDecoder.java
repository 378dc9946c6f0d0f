package org.tfrecordio.spark;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeArrayWriter;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.tfrecordio.example.ByteKeyMap;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.FeatureValues;
import org.tfrecordio.example.FeatureView;
import org.tfrecordio.example.RecordScanner;
import org.tfrecordio.example.SchemaException;

/**
 * Decodes Example (or ByteArray) records straight into Spark's {@link UnsafeRow}s of the data
 * columns followed by the partition columns: the rows a file scan hands to Spark, written once,
 * with no intermediate row, no boxing and no projection. Same conversions, checks and errors as
 * {@link RowDecoder}, for the schemas {@link #supports} accepts (scalar and array fields of any
 * leaf type except arrays of decimals or nulls; partition columns of atomic types); the others
 * (ML vectors, SequenceExample, ...) go through {@link RowDecoder} and a projection.
 *
 * <p>Not thread-safe, and the returned row is reused by the next call (as Spark's readers do).
 */
public final class UnsafeRowDecoder implements Serializable {
  private static final long serialVersionUID = 1L;

  private static final boolean LITTLE_ENDIAN =
      java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;

  private final DecodedField[] fields;
  private final boolean byteArray;
  private final int dataWidth;
  private final DataType[] partition;
  private long decodedFeatures;

  private transient RecordScanner scanner;
  private transient int[] ids;
  private transient FeatureView view;
  private transient FeatureValues values;
  private transient UnsafeRowWriter writer;
  private transient UnsafeArrayWriter[] arrays;

  private UnsafeRowDecoder(RowDecoder plan, StructType data, StructType partitionSchema) {
    this.fields = plan.contextFields();
    this.byteArray = plan.isByteArray();
    this.dataWidth = data.fields().length;
    this.partition = new DataType[partitionSchema.fields().length];
    for (int j = 0; j < partition.length; j++) {
      partition[j] = partitionSchema.fields()[j].dataType();
    }
  }

  /** Whether rows of {@code data ++ partition} can be decoded by this class. */
  public static boolean supports(StructType data, StructType partition, String recordType) {
    return !RowEncoder.SEQUENCE_EXAMPLE.equals(recordType)
        && supports(RowDecoder.plan(data, recordType), partition);
  }

  private static boolean supports(RowDecoder plan, StructType partition) {
    for (DecodedField f : plan.contextFields()) {
      int shape = f.plan.shape;
      int leaf = f.plan.leaf;
      boolean ok = shape == SparkFeatureTypes.SCALAR || (shape == SparkFeatureTypes.LIST
          && leaf != SparkFeatureTypes.DECIMAL && leaf != SparkFeatureTypes.NULL);
      if (!ok) {
        return false;
      }
    }
    for (int j = 0; j < partition.fields().length; j++) {
      if (!UnsafeValues.atomic(partition.fields()[j].dataType())) {
        return false;
      }
    }
    return true;
  }

  /**
   * Plans decoding into rows of {@code data ++ partition}.
   *
   * @throws SchemaException a field type that no feature converts to
   * @throws IllegalArgumentException a schema that {@link #supports} rejects
   */
  public static UnsafeRowDecoder plan(StructType data, StructType partition, String recordType) {
    RowDecoder plan = RowDecoder.plan(data, recordType);
    if (RowEncoder.SEQUENCE_EXAMPLE.equals(recordType) || !supports(plan, partition)) {
      throw new IllegalArgumentException("not decodable straight into UnsafeRows: "
          + data.simpleString() + " + " + partition.simpleString() + " as " + recordType);
    }
    return new UnsafeRowDecoder(plan, data, partition);
  }

  /** The number of features this decoder has decoded. */
  public long decodedFeatures() {
    return decodedFeatures;
  }

  private void init() {
    writer = new UnsafeRowWriter(dataWidth + partition.length);
    arrays = new UnsafeArrayWriter[9];
    for (int size : new int[] {1, 2, 4, 8}) {
      arrays[size] = new UnsafeArrayWriter(writer, size);
    }
    if (!byteArray) {
      ByteKeyMap keys = new ByteKeyMap();
      ids = RowDecoder.ids(fields, keys);
      scanner = new RecordScanner(false, keys, null, false);
      view = new FeatureView();
      values = new FeatureValues();
    }
  }

  /**
   * Decodes one record, with {@code partitionValues} (a row of the partition columns) after
   * its columns, into the reused output row.
   *
   * @throws SchemaException naming the feature, or a record that does not parse
   */
  public UnsafeRow decode(byte[] buf, int off, int len, InternalRow partitionValues) {
    if (writer == null) {
      init();
    }
    writer.reset();
    writer.zeroOutNullBytes();
    if (byteArray) {
      if (fields.length > 0) {
        writer.write(fields[0].out, buf, off, len);
        decodedFeatures++;
      }
    } else {
      try {
        scanner.scan(buf, off, len);
      } catch (SchemaException e) {
        throw new SchemaException("not a valid Example record: " + e.getMessage(), e);
      }
      RecordScanner.Entries ce = scanner.context;
      for (int i = 0; i < fields.length; i++) {
        DecodedField f = fields[i];
        boolean written = false;
        if (ce.has(ids[i], scanner.record)) {
          scanner.feature(ce, ids[i], view);
          decodedFeatures++;
          written = f.plan.shape == SparkFeatureTypes.SCALAR ? scalar(f) : list(f);
        }
        if (!written) {
          if (!f.nullable) {
            throw LeafValues.missing(f);
          }
          UnsafeValues.setNull(writer, f.out, f.type);
        }
      }
    }
    writePartition(partitionValues);
    return writer.getRow();
  }

  /** A row of no data columns and {@code partitionValues} (for counts and partition-only reads). */
  public UnsafeRow partitionOnly(InternalRow partitionValues) {
    if (writer == null) {
      init();
    }
    writer.reset();
    writer.zeroOutNullBytes();
    writePartition(partitionValues);
    return writer.getRow();
  }

  private void writePartition(InternalRow row) {
    for (int j = 0; j < partition.length; j++) {
      UnsafeValues.write(writer, dataWidth + j, partition[j], row, j);
    }
  }

  /** Writes the current {@link #view} as a scalar; false if it has no kind (a null). */
  private boolean scalar(DecodedField f) {
    int kind = view.kind;
    if (kind == ExampleWire.NO_KIND) {
      return false;
    }
    if (f.plan.leaf == SparkFeatureTypes.NULL) {
      throw LeafValues.mismatch(f, kind);
    }
    int o = f.out;
    int leaf = f.plan.leaf;
    if ((leaf == SparkFeatureTypes.LONG || leaf == SparkFeatureTypes.TIMESTAMP
        || leaf == SparkFeatureTypes.TIMESTAMP_NTZ) && view.oneVarint()) {
      writer.write(o, view.single);
      return true;
    } else if (leaf == SparkFeatureTypes.DOUBLE && view.oneFloat()) {
      writer.write(o, (double) Float.intBitsToFloat((int) view.single));
      return true;
    } else if (leaf == SparkFeatureTypes.FLOAT && view.oneFloat()) {
      writer.write(o, Float.intBitsToFloat((int) view.single));
      return true;
    } else if (leaf == SparkFeatureTypes.STRING && kind == ExampleWire.BYTES
        && view.onePacked()) {
      int n = view.packedEnd - view.packedStart;
      LeafValues.checkUtf8(f, view.buf, view.packedStart, n);
      writer.write(o, view.buf, view.packedStart, n);
      return true;
    }
    FeatureValues v = values;
    view.read(v);
    if (v.n != 1) {
      throw LeafValues.notOneValue(f, v.n);
    }
    if (kind == ExampleWire.INT64 && (leaf == SparkFeatureTypes.LONG
        || leaf == SparkFeatureTypes.TIMESTAMP || leaf == SparkFeatureTypes.TIMESTAMP_NTZ)) {
      writer.write(o, v.longs[0]);
    } else if (kind == ExampleWire.FLOAT && leaf == SparkFeatureTypes.DOUBLE) {
      writer.write(o, (double) v.floats[0]);
    } else if (kind == ExampleWire.FLOAT && leaf == SparkFeatureTypes.FLOAT) {
      writer.write(o, v.floats[0]);
    } else if (kind == ExampleWire.BYTES && leaf == SparkFeatureTypes.STRING) {
      LeafValues.checkUtf8(f, v.buf, v.starts[0], v.lens[0]);
      writer.write(o, v.buf, v.starts[0], v.lens[0]);
    } else if (kind == ExampleWire.BYTES && leaf == SparkFeatureTypes.BINARY) {
      writer.write(o, v.buf, v.starts[0], v.lens[0]);
    } else {
      Object x = kind == ExampleWire.INT64 ? LeafValues.fromLong(f, v.longs[0])
          : kind == ExampleWire.FLOAT ? LeafValues.fromFloat(f, v.floats[0])
          : LeafValues.fromBytes(f, v.buf, v.starts[0], v.lens[0]);
      writeBoxed(o, f, x);
    }
    return true;
  }

  /** A value from {@link LeafValues} for the leaves without a fast path above. */
  private void writeBoxed(int o, DecodedField f, Object x) {
    if (x instanceof Decimal) {
      writer.write(o, (Decimal) x, f.plan.precision, f.plan.scale);
    } else if (x instanceof Long) {
      writer.write(o, (long) (Long) x);
    } else if (x instanceof Integer) {
      writer.write(o, (int) (Integer) x);
    } else if (x instanceof Short) {
      writer.write(o, (short) (Short) x);
    } else if (x instanceof Byte) {
      writer.write(o, (byte) (Byte) x);
    } else if (x instanceof Boolean) {
      writer.write(o, (boolean) (Boolean) x);
    } else if (x instanceof Float) {
      writer.write(o, (float) (Float) x);
    } else {
      writer.write(o, (double) (Double) x);
    }
  }

  /**
   * Writes the current {@link #view} as an array of the field's leaf type (a feature with no
   * kind is an empty one); always true.
   */
  private boolean list(DecodedField f) {
    FeatureValues v = values;
    int kind = view.kind;
    int leaf = f.plan.leaf;
    int o = f.out;
    int before = writer.cursor();
    if (kind == ExampleWire.FLOAT && leaf == SparkFeatureTypes.FLOAT && LITTLE_ENDIAN
        && view.onePacked() && ((view.packedEnd - view.packedStart) & 3) == 0) {
      // Packed floats are little-endian, as an UnsafeArrayData's elements are here: copied.
      int n = (view.packedEnd - view.packedStart) >>> 2;
      array(4, n);
      Platform.copyMemory(view.buf, Platform.BYTE_ARRAY_OFFSET + view.packedStart,
          writer.getBuffer(), before + UnsafeArrayData.calculateHeaderPortionInBytes(n), 4L * n);
      writer.setOffsetAndSizeFromPreviousCursor(o, before);
      return true;
    }
    if (kind == ExampleWire.NO_KIND) {
      v.n = 0;
    } else {
      view.read(v);
    }
    int n = v.n;
    if (kind == ExampleWire.BYTES || (kind == ExampleWire.NO_KIND
        && (leaf == SparkFeatureTypes.STRING || leaf == SparkFeatureTypes.BINARY))) {
      if (leaf != SparkFeatureTypes.STRING && leaf != SparkFeatureTypes.BINARY) {
        throw LeafValues.mismatch(f, kind);
      }
      UnsafeArrayWriter a = array(8, n);
      for (int i = 0; i < n; i++) {
        if (leaf == SparkFeatureTypes.STRING) {
          LeafValues.checkUtf8(f, v.buf, v.starts[i], v.lens[i]);
        }
        a.write(i, v.buf, v.starts[i], v.lens[i]);
      }
    } else if (kind == ExampleWire.FLOAT) {
      if (leaf == SparkFeatureTypes.FLOAT) {
        UnsafeArrayWriter a = array(4, n);
        for (int i = 0; i < n; i++) {
          a.write(i, v.floats[i]);
        }
      } else if (leaf == SparkFeatureTypes.DOUBLE) {
        UnsafeArrayWriter a = array(8, n);
        for (int i = 0; i < n; i++) {
          a.write(i, (double) v.floats[i]);
        }
      } else {
        throw LeafValues.mismatch(f, kind);
      }
    } else { // INT64, or no kind: an empty array of any numeric leaf
      longs(f, v.longs, n);
    }
    writer.setOffsetAndSizeFromPreviousCursor(o, before);
    return true;
  }

  /** An array of {@code n} int64 values converted to the field's numeric leaf type. */
  private void longs(DecodedField f, long[] l, int n) {
    int leaf = f.plan.leaf;
    switch (leaf) {
      case SparkFeatureTypes.LONG:
      case SparkFeatureTypes.TIMESTAMP:
      case SparkFeatureTypes.TIMESTAMP_NTZ:
      case SparkFeatureTypes.DOUBLE: {
        UnsafeArrayWriter a = array(8, n);
        for (int i = 0; i < n; i++) {
          if (leaf == SparkFeatureTypes.DOUBLE) {
            a.write(i, (double) l[i]);
          } else {
            a.write(i, l[i]);
          }
        }
        return;
      }
      case SparkFeatureTypes.INT:
      case SparkFeatureTypes.DATE:
      case SparkFeatureTypes.FLOAT: {
        UnsafeArrayWriter a = array(4, n);
        for (int i = 0; i < n; i++) {
          if (leaf == SparkFeatureTypes.FLOAT) {
            a.write(i, (float) l[i]);
          } else if (l[i] == (int) l[i]) {
            a.write(i, (int) l[i]);
          } else {
            throw LeafValues.outOfRange(f, l[i]);
          }
        }
        return;
      }
      case SparkFeatureTypes.SHORT: {
        UnsafeArrayWriter a = array(2, n);
        for (int i = 0; i < n; i++) {
          if (l[i] != (short) l[i]) {
            throw LeafValues.outOfRange(f, l[i]);
          }
          a.write(i, (short) l[i]);
        }
        return;
      }
      case SparkFeatureTypes.BYTE:
      case SparkFeatureTypes.BOOLEAN: {
        UnsafeArrayWriter a = array(1, n);
        for (int i = 0; i < n; i++) {
          if (leaf == SparkFeatureTypes.BOOLEAN) {
            a.write(i, l[i] != 0);
          } else if (l[i] == (byte) l[i]) {
            a.write(i, (byte) l[i]);
          } else {
            throw LeafValues.outOfRange(f, l[i]);
          }
        }
        return;
      }
      default:
        throw LeafValues.mismatch(f, ExampleWire.INT64);
    }
  }

  private UnsafeArrayWriter array(int elementSize, int n) {
    UnsafeArrayWriter a = arrays[elementSize];
    a.initialize(n);
    return a;
  }
}
