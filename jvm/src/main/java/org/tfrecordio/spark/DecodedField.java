package org.tfrecordio.spark;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;

/**
 * One field that {@link RowDecoder} and {@link UnsafeRowDecoder} read from the records: its
 * name and key, its Spark type, how its feature converts to that type, its position in the row.
 * {@link LeafValues} names it in its conversion errors.
 */
final class DecodedField implements Serializable {
  private static final long serialVersionUID = 1L;
  final String name;
  final byte[] key;
  final DataType type;
  final SparkFeatureTypes.Plan plan;
  final boolean nullable;
  /** Position in the output Row. */
  final int out;

  DecodedField(StructField f, SparkFeatureTypes.Plan plan, int out) {
    this.name = f.name();
    this.key = f.name().getBytes(StandardCharsets.UTF_8);
    this.type = f.dataType();
    this.plan = plan;
    this.nullable = f.nullable();
    this.out = out;
  }
}
