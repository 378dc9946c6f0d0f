package org.tfrecordio.spark;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.SchemaException;

/**
 * How a DataFrame's rows become serialized Examples or SequenceExamples (or ByteArray records):
 * the schema checked up front by {@link #plan}, and each column's feature, in the order written.
 * {@link InternalRowEncoder} encodes Spark's internal rows by this plan, for the data source's
 * writes and for feeding.
 *
 * <p>Features are written sorted by name (UTF-8 byte order), each map entry as protobuf's
 * deterministic serialization writes it, so a row gives the same bytes as the Python codec's
 * {@code tfrecord_io.example.from_arrow} for the same values. A null cell omits the feature.
 * The decoders use its record type names.
 */
public final class RowEncoder implements Serializable {
  private static final long serialVersionUID = 1L;

  public static final String EXAMPLE = "Example";
  public static final String SEQUENCE_EXAMPLE = "SequenceExample";
  public static final String BYTE_ARRAY = "ByteArray";

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

  final String recordType;
  /** Context (or Example) features, sorted by name. */
  final Column[] context;
  /** SequenceExample feature lists, sorted by name. */
  final Column[] featureLists;
  /** ByteArray: the index of the binary column. */
  final int bytesIndex;
  final String bytesName;


  private RowEncoder(String recordType, Column[] context, Column[] featureLists, int bytesIndex,
      String bytesName) {
    this.recordType = recordType;
    this.context = context;
    this.featureLists = featureLists;
    this.bytesIndex = bytesIndex;
    this.bytesName = bytesName;
  }

  /** Throws IllegalArgumentException unless recordType is Example, SequenceExample, ByteArray. */
  public static void checkRecordType(String recordType) {
    if (!EXAMPLE.equals(recordType) && !SEQUENCE_EXAMPLE.equals(recordType)
        && !BYTE_ARRAY.equals(recordType)) {
      throw new IllegalArgumentException("record_type must be 'Example', 'SequenceExample' or "
          + "'ByteArray', not '" + recordType + "'");
    }
  }

  /**
   * Checks a DataFrame schema and plans its encoding: the columns besides {@code partitionBy}
   * (may be null), whose names and types are checked as partition columns. Partition columns
   * are named exactly as in the schema ({@link #plan(StructType, String, List, boolean)} with
   * case-sensitive names).
   *
   * @throws SchemaException naming the first column whose type has no form
   */
  public static RowEncoder plan(StructType schema, String recordType, List<String> partitionBy) {
    return plan(schema, recordType, partitionBy, true);
  }

  /**
   * {@link #plan(StructType, String, List)}, resolving each name of {@code partitionBy} to a
   * column as Spark does under {@code spark.sql.caseSensitive}: with {@code caseSensitive}
   * false, {@code year} names the column {@code Year}.
   */
  public static RowEncoder plan(StructType schema, String recordType, List<String> partitionBy,
      boolean caseSensitive) {
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
    Set<Integer> partSet = new HashSet<>();
    for (int i = 0; i < parts.size(); i++) {
      String p = parts.get(i);
      int idx = indexOf(fields, p, caseSensitive);
      if (idx < 0) {
        throw new SchemaException("partition column " + SchemaException.q(p)
            + " is not a column of the DataFrame (columns: " + Arrays.toString(schema.fieldNames())
            + ")");
      }
      if (!partSet.add(idx)) {
        throw new SchemaException("partition column " + SchemaException.q(p)
            + " is named more than once");
      }
      PartitionPaths.checkPartitionType(fields[idx].name(), fields[idx].dataType());
    }
    List<Column> ctx = new ArrayList<>();
    List<Column> fls = new ArrayList<>();
    int bytesIndex = -1;
    String bytesName = null;
    boolean sequence = SEQUENCE_EXAMPLE.equals(recordType);
    for (int i = 0; i < fields.length; i++) {
      StructField f = fields[i];
      if (partSet.contains(i)) {
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
    return new RowEncoder(recordType, sorted(ctx), sorted(fls), bytesIndex, bytesName);
  }

  private static Column[] sorted(List<Column> cols) {
    Column[] a = cols.toArray(new Column[0]);
    Arrays.sort(a, (x, y) -> ExampleWire.compareUtf8(x.nameBytes, y.nameBytes));
    return a;
  }

  /**
   * The index of the column {@code name} resolves to: the one of exactly that name, else, when
   * names are not case-sensitive, the first whose name equals it ignoring case.
   */
  private static int indexOf(StructField[] fields, String name, boolean caseSensitive) {
    for (int i = 0; i < fields.length; i++) {
      if (fields[i].name().equals(name)) {
        return i;
      }
    }
    if (!caseSensitive) {
      for (int i = 0; i < fields.length; i++) {
        if (fields[i].name().equalsIgnoreCase(name)) {
          return i;
        }
      }
    }
    return -1;
  }
}
