package org.tfrecordio.spark;

import java.io.Serializable;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.example.WireSink;

/**
 * Encodes Spark Rows as serialized Examples or SequenceExamples (or passes ByteArray records
 * through), driven by the DataFrame's schema, which {@link #plan} checks up front.
 *
 * <p>Features are written sorted by name (UTF-8 byte order), each map entry as protobuf's
 * deterministic serialization writes it, so a Row gives the same bytes as the Python codec's
 * {@code tfrecord_io.example.from_arrow} for the same values. A null cell omits the feature.
 * Not thread-safe: one instance per task (it is Serializable and copied into each task).
 */
public final class RowEncoder implements Serializable {
  private static final long serialVersionUID = 1L;

  static final String EXAMPLE = "Example";
  static final String SEQUENCE_EXAMPLE = "SequenceExample";
  static final String BYTE_ARRAY = "ByteArray";

  /** One data column. */
  static final class Column implements Serializable {
    private static final long serialVersionUID = 1L;
    final String name;
    final int index;
    final byte[] nameBytes;
    final byte[] keyField;
    final SparkFeatureTypes.Plan plan;
    final int kindTag;

    Column(String name, int index, SparkFeatureTypes.Plan plan) {
      this.name = name;
      this.index = index;
      this.nameBytes = name.getBytes(StandardCharsets.UTF_8);
      this.keyField = ExampleWire.keyField(nameBytes);
      this.plan = plan;
      // Feature's oneof field number is the kind; tag = (kind << 3) | LEN.
      this.kindTag = (SparkFeatureTypes.kind(plan.leaf) << 3) | ExampleWire.WT_LEN;
    }
  }

  private final String recordType;
  private final Column[] context;
  private final Column[] featureLists;
  /** ByteArray: the index of the binary column. */
  private final int bytesIndex;
  private final String bytesName;
  private final int[] partitionIndex;
  private final String[] partitionPrefix;
  private final int[] partitionLeaf;

  private transient WireSink sink;

  private RowEncoder(String recordType, Column[] context, Column[] featureLists, int bytesIndex,
      String bytesName, int[] partitionIndex, String[] partitionPrefix, int[] partitionLeaf) {
    this.recordType = recordType;
    this.context = context;
    this.featureLists = featureLists;
    this.bytesIndex = bytesIndex;
    this.bytesName = bytesName;
    this.partitionIndex = partitionIndex;
    this.partitionPrefix = partitionPrefix;
    this.partitionLeaf = partitionLeaf;
  }

  static void checkRecordType(String recordType) {
    if (!EXAMPLE.equals(recordType) && !SEQUENCE_EXAMPLE.equals(recordType)
        && !BYTE_ARRAY.equals(recordType)) {
      throw new IllegalArgumentException("record_type must be 'Example', 'SequenceExample' or "
          + "'ByteArray', not '" + recordType + "'");
    }
  }

  /**
   * Checks a DataFrame schema and plans its encoding.
   *
   * @throws SchemaException naming the first column whose type has no form
   */
  public static RowEncoder plan(StructType schema, String recordType,
      List<String> partitionBy) {
    checkRecordType(recordType);
    StructField[] fields = schema.fields();
    Set<String> seen = new HashSet<>();
    for (StructField f : fields) {
      if (!seen.add(f.name())) {
        throw new SchemaException("column " + SchemaException.q(f.name())
            + " appears more than once");
      }
    }
    List<String> parts = partitionBy == null ? new ArrayList<>() : partitionBy;
    int[] pIndex = new int[parts.size()];
    String[] pPrefix = new String[parts.size()];
    int[] pLeaf = new int[parts.size()];
    Set<String> partSet = new HashSet<>();
    for (int i = 0; i < parts.size(); i++) {
      String p = parts.get(i);
      if (!partSet.add(p)) {
        throw new SchemaException("partition column " + SchemaException.q(p)
            + " is named more than once");
      }
      int idx = indexOf(fields, p);
      if (idx < 0) {
        throw new SchemaException("partition column " + SchemaException.q(p)
            + " is not a column of the DataFrame (columns: " + Arrays.toString(schema.fieldNames())
            + ")");
      }
      pIndex[i] = idx;
      pPrefix[i] = PartitionPaths.escape(p) + "=";
      pLeaf[i] = PartitionPaths.checkPartitionType(p, fields[idx].dataType());
    }
    List<Column> ctx = new ArrayList<>();
    List<Column> fls = new ArrayList<>();
    int bytesIndex = -1;
    String bytesName = null;
    boolean sequence = SEQUENCE_EXAMPLE.equals(recordType);
    for (int i = 0; i < fields.length; i++) {
      StructField f = fields[i];
      if (partSet.contains(f.name())) {
        continue;
      }
      if (BYTE_ARRAY.equals(recordType)) {
        if (!(f.dataType() instanceof BinaryType) || bytesIndex >= 0) {
          throw new SchemaException("record_type 'ByteArray' writes one binary column (besides "
              + "partition columns), but column " + SchemaException.q(f.name()) + " has type "
              + f.dataType().simpleString() + (bytesIndex >= 0 ? " and is not the only one" : ""));
        }
        bytesIndex = i;
        bytesName = f.name();
        continue;
      }
      SparkFeatureTypes.Plan plan = SparkFeatureTypes.plan(f.name(), f.dataType(), sequence, "column", false);
      if (plan.leaf == SparkFeatureTypes.NULL) {
        continue; // a column of type null is never written
      }
      (plan.featureList() ? fls : ctx).add(new Column(f.name(), i, plan));
    }
    if (BYTE_ARRAY.equals(recordType) && bytesIndex < 0) {
      throw new SchemaException("record_type 'ByteArray' writes one binary column, but the "
          + "DataFrame has none besides its partition columns");
    }
    return new RowEncoder(recordType, sorted(ctx), sorted(fls), bytesIndex, bytesName, pIndex,
        pPrefix, pLeaf);
  }

  private static Column[] sorted(List<Column> cols) {
    Column[] a = cols.toArray(new Column[0]);
    Arrays.sort(a, (x, y) -> ExampleWire.compareUtf8(x.nameBytes, y.nameBytes));
    return a;
  }

  private static int indexOf(StructField[] fields, String name) {
    for (int i = 0; i < fields.length; i++) {
      if (fields[i].name().equals(name)) {
        return i;
      }
    }
    return -1;
  }

  boolean partitioned() {
    return partitionIndex.length > 0;
  }

  /** The partition directory of a row, {@code col=value/col2=value2}, Hive-style escaped. */
  String partitionDir(Row row) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < partitionIndex.length; i++) {
      if (i > 0) {
        sb.append('/');
      }
      sb.append(partitionPrefix[i]);
      sb.append(PartitionPaths.escape(
          PartitionPaths.format(row.get(partitionIndex[i]), partitionLeaf[i])));
    }
    return sb.toString();
  }

  /** The partition values of a row. */
  Object[] partitionValues(Row row) {
    Object[] out = new Object[partitionIndex.length];
    for (int i = 0; i < out.length; i++) {
      out[i] = row.get(partitionIndex[i]);
    }
    return out;
  }

  /** True if row has the partition values {@code values}. */
  boolean samePartition(Row row, Object[] values) {
    for (int i = 0; i < values.length; i++) {
      Object a = row.get(partitionIndex[i]);
      Object b = values[i];
      if (a == null ? b != null : !a.equals(b)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Encodes a row. The record is {@code buffer()[0, length)}, valid until the next call.
   *
   * @return the record's length
   */
  public int encode(Row row) {
    if (sink == null) {
      sink = new WireSink(4096);
    }
    WireSink s = sink;
    s.reset();
    if (bytesIndex >= 0) {
      Object v = row.get(bytesIndex);
      if (v == null) {
        throw new SchemaException("column " + SchemaException.q(bytesName)
            + " is null in a row, and a ByteArray record can't be null");
      }
      byte[] b = (byte[]) v;
      s.bytes(b, 0, b.length);
      return s.pos;
    }
    int features = s.begin(ExampleWire.TAG1_LEN);
    for (Column c : context) {
      int i = c.index;
      if (row.isNullAt(i)) {
        continue;
      }
      int entry = s.begin(ExampleWire.TAG1_LEN);
      s.bytes(c.keyField, 0, c.keyField.length);
      int feature = s.begin(ExampleWire.TAG2_LEN);
      if (c.plan.shape == SparkFeatureTypes.SCALAR) {
        writeScalarFeature(s, c, row.get(i));
      } else if (c.plan.shape == SparkFeatureTypes.VECTOR) {
        writeFloats(s, vectorValues(row.get(i)));
      } else {
        writeListFeature(s, c, row.getList(i), "inside a list");
      }
      s.end(feature);
      s.end(entry);
    }
    s.end(features);
    if (SEQUENCE_EXAMPLE.equals(recordType)) {
      int lists = s.begin(ExampleWire.TAG2_LEN);
      for (Column c : featureLists) {
        int i = c.index;
        if (row.isNullAt(i)) {
          continue;
        }
        int entry = s.begin(ExampleWire.TAG1_LEN);
        s.bytes(c.keyField, 0, c.keyField.length);
        int featureList = s.begin(ExampleWire.TAG2_LEN);
        for (Object step : row.getList(i)) {
          if (step == null) {
            throw new SchemaException("column " + SchemaException.q(c.name)
                + ": a null step of a feature list has no TFRecord form");
          }
          int feature = s.begin(ExampleWire.TAG1_LEN);
          if (c.plan.shape == SparkFeatureTypes.VECTOR_STEPS) {
            writeFloats(s, vectorValues(step));
          } else {
            writeListFeature(s, c, asList(step), "inside a step");
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

  /** The buffer holding the last encoded record. */
  public byte[] buffer() {
    return sink.buf;
  }

  @SuppressWarnings("unchecked")
  private static List<Object> asList(Object v) {
    if (v instanceof List) {
      return (List<Object>) v;
    }
    if (v instanceof Object[]) {
      return Arrays.asList((Object[]) v);
    }
    // A Scala Seq, as Rows hold arrays: let a one-field Row convert it the supported way.
    return (List<Object>) (List<?>) org.apache.spark.sql.RowFactory.create(v).getList(0);
  }

  private static double[] vectorValues(Object v) {
    if (v instanceof org.apache.spark.ml.linalg.Vector) {
      return ((org.apache.spark.ml.linalg.Vector) v).toArray();
    }
    return ((org.apache.spark.mllib.linalg.Vector) v).toArray();
  }

  private static void writeFloats(WireSink s, double[] values) {
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

  private void writeScalarFeature(WireSink s, Column c, Object v) {
    int leaf = c.plan.leaf;
    switch (SparkFeatureTypes.kind(leaf)) {
      case ExampleWire.INT64: {
        long x = toLong(c, v);
        int vs = ExampleWire.varintSize(x);
        s.header(c.kindTag, vs + 2);
        s.header(ExampleWire.TAG1_LEN, vs);
        s.varint(x);
        return;
      }
      case ExampleWire.FLOAT: {
        s.header(c.kindTag, 6);
        s.header(ExampleWire.TAG1_LEN, 4);
        s.float32(toFloat(v));
        return;
      }
      default: {
        byte[] b = toBytes(leaf, v);
        int inner = 1 + ExampleWire.varintSize(b.length) + b.length;
        s.header(c.kindTag, inner);
        s.header(ExampleWire.TAG1_LEN, b.length);
        s.bytes(b, 0, b.length);
      }
    }
  }

  private void writeListFeature(WireSink s, Column c, List<?> values, String where) {
    int leaf = c.plan.leaf;
    int kind = SparkFeatureTypes.kind(leaf);
    int list = s.begin(c.kindTag);
    if (!values.isEmpty()) {
      if (kind == ExampleWire.BYTES) {
        for (Object v : values) {
          if (v == null) {
            throw nullInside(c, where);
          }
          byte[] b = toBytes(leaf, v);
          s.header(ExampleWire.TAG1_LEN, b.length);
          s.bytes(b, 0, b.length);
        }
      } else if (kind == ExampleWire.FLOAT) {
        s.header(ExampleWire.TAG1_LEN, 4 * values.size());
        for (Object v : values) {
          if (v == null) {
            throw nullInside(c, where);
          }
          s.float32(toFloat(v));
        }
      } else {
        int packed = s.begin(ExampleWire.TAG1_LEN);
        for (Object v : values) {
          if (v == null) {
            throw nullInside(c, where);
          }
          s.varint(toLong(c, v));
        }
        s.end(packed);
      }
    }
    s.end(list);
  }

  private static SchemaException nullInside(Column c, String where) {
    return new SchemaException("column " + SchemaException.q(c.name) + ": a null " + where
        + " has no TFRecord form");
  }

  private static long toLong(Column c, Object v) {
    switch (c.plan.leaf) {
      case SparkFeatureTypes.BOOLEAN:
        return ((Boolean) v) ? 1L : 0L;
      case SparkFeatureTypes.DATE:
        return SparkFeatureTypes.days(v);
      case SparkFeatureTypes.TIMESTAMP:
        try {
          return SparkFeatureTypes.micros(v);
        } catch (ArithmeticException e) {
          throw new SchemaException("column " + SchemaException.q(c.name) + ": timestamp " + v
              + " is out of range for microseconds in int64");
        }
      case SparkFeatureTypes.TIMESTAMP_NTZ:
        try {
          return SparkFeatureTypes.microsNtz(v);
        } catch (ArithmeticException e) {
          throw new SchemaException("column " + SchemaException.q(c.name) + ": timestamp " + v
              + " is out of range for microseconds in int64");
        }
      default:
        return ((Number) v).longValue();
    }
  }

  private static float toFloat(Object v) {
    return ((Number) v).floatValue();
  }

  private static byte[] toBytes(int leaf, Object v) {
    switch (leaf) {
      case SparkFeatureTypes.BINARY:
        return (byte[]) v;
      case SparkFeatureTypes.DECIMAL:
        return ((BigDecimal) v).toPlainString().getBytes(StandardCharsets.UTF_8);
      default:
        return v.toString().getBytes(StandardCharsets.UTF_8);
    }
  }
}
