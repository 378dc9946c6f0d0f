package org.tfrecordio.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.RecordScanner;
import org.tfrecordio.example.ByteKeyMap;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.example.FeatureValues;
import org.tfrecordio.example.FeatureView;

/**
 * Decodes serialized Examples or SequenceExamples into Spark's internal rows of a given schema
 * (the rows a data source hands to Spark), converting each feature's values to its field's
 * type. Only the schema's features are decoded: the others are skipped by key, unparsed, and
 * {@link #decodedFeatures} counts what was decoded.
 *
 * <p>Conversions: {@code int64_list} to long, int, short, byte (range-checked), boolean
 * (nonzero is true), float, double, date (days since 1970-01-01), timestamp and timestamp_ntz
 * (microseconds since the epoch, UTC) and decimal (exactly); {@code float_list} to float and
 * double (and ML Vectors); {@code bytes_list} to string (must be UTF-8), binary and decimal
 * (from its decimal string). Scalar fields need exactly one value; arrays take any number; a
 * feature with no kind set reads as null in a scalar field and as an empty array in an array
 * field; an absent feature is null. Anything else throws a {@link SchemaException} naming the
 * feature. For SequenceExample, fields of type {@code array<array<T>>} (or
 * {@code array<vector>}) are read from the feature lists, the others from the context.
 *
 * <p>Not thread-safe: each task uses its own copy (it is Serializable).
 */
public final class RowDecoder implements Serializable {
  private static final long serialVersionUID = 1L;


  private final boolean sequence;
  private final boolean byteArray;
  private final DecodedField[] context;
  private final DecodedField[] featureLists;
  private final int width;
  /** Features (and feature lists) decoded so far: what column pruning saves is not counted. */
  private long decodedFeatures;

  private transient RecordScanner scanner;
  private transient FeatureView view;
  private transient FeatureValues values;
  private transient RecordScanner.Steps steps;
  private transient int[] contextIds;
  private transient int[] featureListIds;

  private RowDecoder(boolean sequence, boolean byteArray, DecodedField[] context, DecodedField[] featureLists,
      int width) {
    this.sequence = sequence;
    this.byteArray = byteArray;
    this.context = context;
    this.featureLists = featureLists;
    this.width = width;
  }

  /**
   * Plans decoding into rows of {@code schema}: the fields read from the records (for
   * ByteArray: one binary field, or none).
   *
   * @throws SchemaException a field type that no feature converts to
   */
  public static RowDecoder plan(StructType schema, String recordType) {
    RowEncoder.checkRecordType(recordType);
    List<StructField> data = java.util.Arrays.asList(schema.fields());
    int width = data.size();
    boolean sequence = RowEncoder.SEQUENCE_EXAMPLE.equals(recordType);
    boolean byteArray = RowEncoder.BYTE_ARRAY.equals(recordType);
    List<DecodedField> ctx = new ArrayList<>();
    List<DecodedField> fls = new ArrayList<>();
    for (int i = 0; i < data.size(); i++) {
      StructField f = data.get(i);
      if (byteArray) {
        SparkFeatureTypes.Plan p = SparkFeatureTypes.plan(f.name(), f.dataType(), false, "field", true);
        if (data.size() != 1 || p.shape != SparkFeatureTypes.SCALAR || p.leaf != SparkFeatureTypes.BINARY) {
          throw new SchemaException("record_type 'ByteArray' reads one binary field (besides "
              + "partition columns), not " + new StructType(data.toArray(new StructField[0]))
              .simpleString());
        }
        ctx.add(new DecodedField(f, p, i));
        continue;
      }
      SparkFeatureTypes.Plan p = SparkFeatureTypes.plan(f.name(), f.dataType(), sequence, "field", true);
      (p.featureList() ? fls : ctx).add(new DecodedField(f, p, i));
    }
    return new RowDecoder(sequence, byteArray, ctx.toArray(new DecodedField[0]),
        fls.toArray(new DecodedField[0]), width);
  }

  /** Ids of the fields' names, numbered in name order: the order records list features in. */
  static int[] ids(DecodedField[] fields, ByteKeyMap keys) {
    DecodedField[] sorted = fields.clone();
    java.util.Arrays.sort(sorted, (a, b) -> ExampleWire.compareUtf8(a.key, b.key));
    for (DecodedField f : sorted) {
      if (keys.find(f.key, 0, f.key.length) < 0) {
        keys.add(f.key, 0, f.key.length);
      }
    }
    int[] ids = new int[fields.length];
    for (int i = 0; i < fields.length; i++) {
      ids[i] = keys.find(fields[i].key, 0, fields[i].key.length);
    }
    return ids;
  }

  /** The fields read from Example features (or the ByteArray field), in schema order. */
  DecodedField[] contextFields() {
    return context;
  }

  /** Whether records are read whole into one binary field (record type ByteArray). */
  boolean isByteArray() {
    return byteArray;
  }

  /** The number of features (and feature lists) this decoder has decoded. */
  public long decodedFeatures() {
    return decodedFeatures;
  }

  private void init() {
    ByteKeyMap ctxKeys = new ByteKeyMap();
    contextIds = ids(context, ctxKeys);
    ByteKeyMap flKeys = new ByteKeyMap();
    featureListIds = ids(featureLists, flKeys);
    scanner = new RecordScanner(sequence, ctxKeys, flKeys, false);
    view = new FeatureView();
    values = new FeatureValues();
    steps = new RecordScanner.Steps();
  }

  /**
   * Decodes one record into a new row.
   *
   * @throws SchemaException naming the feature, or a record that does not parse
   */
  public InternalRow decode(byte[] buf, int off, int len) {
    Object[] row = new Object[width];
    if (byteArray) {
      if (context.length > 0) {
        row[context[0].out] = java.util.Arrays.copyOfRange(buf, off, off + len);
        decodedFeatures++;
      }
      return new GenericInternalRow(row);
    }
    if (scanner == null) {
      init();
    }
    try {
      scanner.scan(buf, off, len);
    } catch (SchemaException e) {
      throw new SchemaException("not a valid " + (sequence ? "SequenceExample" : "Example")
          + " record: " + e.getMessage(), e);
    }
    RecordScanner.Entries ce = scanner.context;
    for (int i = 0; i < context.length; i++) {
      DecodedField f = context[i];
      int id = contextIds[i];
      Object v = null;
      if (ce.has(id, scanner.record)) {
        scanner.feature(ce, id, view);
        decodedFeatures++;
        v = f.plan.shape == SparkFeatureTypes.SCALAR ? scalar(f) : list(f);
      }
      if (v == null && !f.nullable) {
        throw LeafValues.missing(f);
      }
      row[f.out] = v;
    }
    if (sequence) {
      RecordScanner.Entries fe = scanner.featureLists;
      for (int i = 0; i < featureLists.length; i++) {
        DecodedField f = featureLists[i];
        int id = featureListIds[i];
        Object v = null;
        if (fe.has(id, scanner.record)) {
          int k = scanner.steps(fe.start[id], fe.end[id], steps);
          decodedFeatures++;
          Object[] out = new Object[k];
          for (int s = 0; s < k; s++) {
            view.reset(scanner.buf);
            view.merge(steps.start[s], steps.end[s]);
            out[s] = list(f);
          }
          v = new GenericArrayData(out);
        }
        if (v == null && !f.nullable) {
          throw new SchemaException("feature list " + SchemaException.q(f.name) + " is missing "
              + "in a record, but its field is not nullable");
        }
        row[f.out] = v;
      }
    }
    return new GenericInternalRow(row);
  }

  // ------------------------------------------------------------------------------------------


  private Object scalar(DecodedField f) {
    FeatureView fv = view;
    if (fv.kind == ExampleWire.NO_KIND) {
      return null;
    }
    if (f.plan.leaf == SparkFeatureTypes.NULL) {
      throw LeafValues.mismatch(f, fv.kind);
    }
    FeatureValues v = values;
    fv.read(v);
    if (v.n != 1) {
      throw LeafValues.notOneValue(f, v.n);
    }
    switch (fv.kind) {
      case ExampleWire.INT64:
        return LeafValues.fromLong(f, v.longs[0]);
      case ExampleWire.FLOAT:
        return LeafValues.fromFloat(f, v.floats[0]);
      default:
        return LeafValues.fromBytes(f, v.buf, v.starts[0], v.lens[0]);
    }
  }


  /**
   * The current {@link #view} as an array (or Vector) of the field's leaf type; a feature with
   * no kind is an empty one.
   */
  private Object list(DecodedField f) {
    FeatureView fv = view;
    FeatureValues v = values;
    int leaf = f.plan.leaf;
    int shape = f.plan.shape;
    boolean vector = shape == SparkFeatureTypes.VECTOR || shape == SparkFeatureTypes.VECTOR_STEPS;
    if (fv.kind == ExampleWire.NO_KIND) {
      v.n = 0;
    } else {
      fv.read(v);
    }
    int n = v.n;
    int kind = fv.kind;
    if (leaf == SparkFeatureTypes.NULL) {
      if (n > 0) {
        throw LeafValues.mismatch(f, kind);
      }
      return new GenericArrayData(new Object[0]);
    }
    if (vector) {
      double[] d = new double[n];
      if (kind == ExampleWire.FLOAT) {
        for (int i = 0; i < n; i++) {
          d[i] = v.floats[i];
        }
      } else if (kind == ExampleWire.INT64) {
        for (int i = 0; i < n; i++) {
          d[i] = v.longs[i];
        }
      } else if (n > 0) {
        throw LeafValues.mismatch(f, kind);
      }
      return LeafValues.denseVector(d);
    }
    if (kind == ExampleWire.FLOAT || (kind == ExampleWire.NO_KIND && leaf == SparkFeatureTypes.FLOAT)) {
      switch (leaf) {
        case SparkFeatureTypes.FLOAT:
          return UnsafeArrayData.fromPrimitiveArray(java.util.Arrays.copyOf(v.floats, n));
        case SparkFeatureTypes.DOUBLE: {
          double[] d = new double[n];
          for (int i = 0; i < n; i++) {
            d[i] = v.floats[i];
          }
          return UnsafeArrayData.fromPrimitiveArray(d);
        }
        default:
          if (kind != ExampleWire.NO_KIND) {
            throw LeafValues.mismatch(f, kind);
          }
      }
    }
    if (kind == ExampleWire.INT64 || kind == ExampleWire.NO_KIND) {
      long[] l = v.longs;
      switch (leaf) {
        case SparkFeatureTypes.LONG:
          return UnsafeArrayData.fromPrimitiveArray(java.util.Arrays.copyOf(l, n));
        case SparkFeatureTypes.INT: {
          int[] out = new int[n];
          for (int i = 0; i < n; i++) {
            if (l[i] != (int) l[i]) {
              throw LeafValues.outOfRange(f, l[i]);
            }
            out[i] = (int) l[i];
          }
          return UnsafeArrayData.fromPrimitiveArray(out);
        }
        case SparkFeatureTypes.SHORT: {
          short[] out = new short[n];
          for (int i = 0; i < n; i++) {
            if (l[i] != (short) l[i]) {
              throw LeafValues.outOfRange(f, l[i]);
            }
            out[i] = (short) l[i];
          }
          return UnsafeArrayData.fromPrimitiveArray(out);
        }
        case SparkFeatureTypes.BYTE: {
          byte[] out = new byte[n];
          for (int i = 0; i < n; i++) {
            if (l[i] != (byte) l[i]) {
              throw LeafValues.outOfRange(f, l[i]);
            }
            out[i] = (byte) l[i];
          }
          return UnsafeArrayData.fromPrimitiveArray(out);
        }
        case SparkFeatureTypes.BOOLEAN: {
          boolean[] out = new boolean[n];
          for (int i = 0; i < n; i++) {
            out[i] = l[i] != 0;
          }
          return UnsafeArrayData.fromPrimitiveArray(out);
        }
        case SparkFeatureTypes.FLOAT: {
          float[] out = new float[n];
          for (int i = 0; i < n; i++) {
            out[i] = l[i];
          }
          return UnsafeArrayData.fromPrimitiveArray(out);
        }
        case SparkFeatureTypes.DOUBLE: {
          double[] out = new double[n];
          for (int i = 0; i < n; i++) {
            out[i] = l[i];
          }
          return UnsafeArrayData.fromPrimitiveArray(out);
        }
        case SparkFeatureTypes.DATE: {
          int[] out = new int[n];
          for (int i = 0; i < n; i++) {
            out[i] = (Integer) LeafValues.fromLong(f, l[i]);
          }
          return UnsafeArrayData.fromPrimitiveArray(out);
        }
        case SparkFeatureTypes.TIMESTAMP:
        case SparkFeatureTypes.TIMESTAMP_NTZ:
          return UnsafeArrayData.fromPrimitiveArray(java.util.Arrays.copyOf(l, n));
        case SparkFeatureTypes.DECIMAL: {
          Object[] out = new Object[n];
          for (int i = 0; i < n; i++) {
            out[i] = LeafValues.fromLong(f, l[i]);
          }
          return new GenericArrayData(out);
        }
        default:
          if (kind != ExampleWire.NO_KIND) {
            throw LeafValues.mismatch(f, kind);
          }
          return new GenericArrayData(new Object[0]);
      }
    }
    // BYTES
    Object[] out = new Object[n];
    for (int i = 0; i < n; i++) {
      out[i] = LeafValues.fromBytes(f, v.buf, v.starts[i], v.lens[i]);
    }
    return new GenericArrayData(out);
  }
}
