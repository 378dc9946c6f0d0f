package org.tfrecordio.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StringType;

/**
 * Atomic values (partition columns) copied from an internal row into an UnsafeRow being
 * written, and nulls written as UnsafeRows need them (a wide decimal keeps its 16-byte slot).
 * Used by {@link UnsafeRowDecoder}.
 */
final class UnsafeValues {
  private UnsafeValues() {}

  /** Whether {@link #write} handles columns of type {@code t}. */
  static boolean atomic(DataType t) {
    return t instanceof StringType || t instanceof DecimalType || t == DataTypes.BooleanType
        || t == DataTypes.ByteType || t == DataTypes.ShortType || t == DataTypes.IntegerType
        || t == DataTypes.LongType || t == DataTypes.FloatType || t == DataTypes.DoubleType
        || t == DataTypes.DateType || t == DataTypes.TimestampType
        || t == DataTypes.TimestampNTZType || t == DataTypes.BinaryType
        || t == DataTypes.NullType;
  }

  /** Writes a null of type {@code type} at {@code ordinal}. */
  static void setNull(UnsafeRowWriter writer, int ordinal, DataType type) {
    if (type instanceof DecimalType) {
      DecimalType d = (DecimalType) type;
      writer.write(ordinal, (Decimal) null, d.precision(), d.scale());
    } else {
      writer.setNullAt(ordinal);
    }
  }

  /** Writes field {@code j} of {@code row}, of {@link #atomic} type {@code t}, at {@code o}. */
  static void write(UnsafeRowWriter writer, int o, DataType t, InternalRow row, int j) {
    if (row.isNullAt(j) || t == DataTypes.NullType) {
      setNull(writer, o, t);
    } else if (t instanceof StringType) {
      writer.write(o, row.getUTF8String(j));
    } else if (t instanceof DecimalType) {
      DecimalType d = (DecimalType) t;
      writer.write(o, row.getDecimal(j, d.precision(), d.scale()), d.precision(), d.scale());
    } else if (t == DataTypes.BooleanType) {
      writer.write(o, row.getBoolean(j));
    } else if (t == DataTypes.ByteType) {
      writer.write(o, row.getByte(j));
    } else if (t == DataTypes.ShortType) {
      writer.write(o, row.getShort(j));
    } else if (t == DataTypes.IntegerType || t == DataTypes.DateType) {
      writer.write(o, row.getInt(j));
    } else if (t == DataTypes.FloatType) {
      writer.write(o, row.getFloat(j));
    } else if (t == DataTypes.DoubleType) {
      writer.write(o, row.getDouble(j));
    } else if (t == DataTypes.BinaryType) {
      writer.write(o, row.getBinary(j));
    } else { // long, timestamp, timestamp_ntz
      writer.write(o, row.getLong(j));
    }
  }
}
