package org.tfrecordio.spark;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.SchemaException;

/**
 * One decoded feature value (an int64, a float or a bytes value) as the Spark internal value of
 * a field's leaf type (dates as days, timestamps as microseconds, UTF8String, Decimal), checked:
 * ranges, exact decimals, UTF-8 strings. Used by {@link RowDecoder}.
 */
final class LeafValues {
  private LeafValues() {}

  static SchemaException mismatch(DecodedField f, int kind) {
    return new SchemaException("feature " + SchemaException.q(f.name) + " holds "
        + ExampleWire.kindLabel(kind) + " values, which can't be read as "
        + f.type.simpleString());
  }

  static Object fromLong(DecodedField f, long x) {
    switch (f.plan.leaf) {
      case SparkFeatureTypes.LONG:
        return x;
      case SparkFeatureTypes.INT:
        if (x != (int) x) {
          throw outOfRange(f, x);
        }
        return (int) x;
      case SparkFeatureTypes.SHORT:
        if (x != (short) x) {
          throw outOfRange(f, x);
        }
        return (short) x;
      case SparkFeatureTypes.BYTE:
        if (x != (byte) x) {
          throw outOfRange(f, x);
        }
        return (byte) x;
      case SparkFeatureTypes.BOOLEAN:
        return x != 0;
      case SparkFeatureTypes.FLOAT:
        return (float) x;
      case SparkFeatureTypes.DOUBLE:
        return (double) x;
      case SparkFeatureTypes.DATE:
        if (x != (int) x) {
          throw outOfRange(f, x);
        }
        return (int) x;
      case SparkFeatureTypes.TIMESTAMP:
      case SparkFeatureTypes.TIMESTAMP_NTZ:
        return x;
      case SparkFeatureTypes.DECIMAL:
        return decimal(f, BigDecimal.valueOf(x), Long.toString(x));
      default:
        throw mismatch(f, ExampleWire.INT64);
    }
  }

  static SchemaException notOneValue(DecodedField f, int n) {
    return new SchemaException("feature " + SchemaException.q(f.name) + " has " + n
        + " values in a record, but its type " + f.type.simpleString()
        + " holds exactly one; read it as an array type");
  }

  static SchemaException missing(DecodedField f) {
    return new SchemaException("feature " + SchemaException.q(f.name) + " is missing (or "
        + "has no kind set) in a record, but its field is not nullable");
  }

  static SchemaException outOfRange(DecodedField f, long x) {
    return new SchemaException("feature " + SchemaException.q(f.name) + ": value " + x
        + " is out of range for " + f.type.simpleString());
  }

  static Object fromFloat(DecodedField f, float x) {
    switch (f.plan.leaf) {
      case SparkFeatureTypes.FLOAT:
        return x;
      case SparkFeatureTypes.DOUBLE:
        return (double) x;
      default:
        throw mismatch(f, ExampleWire.FLOAT);
    }
  }

  static Object fromBytes(DecodedField f, byte[] b, int start, int len) {
    switch (f.plan.leaf) {
      case SparkFeatureTypes.STRING:
        checkUtf8(f, b, start, len);
        return UTF8String.fromBytes(Arrays.copyOfRange(b, start, start + len));
      case SparkFeatureTypes.BINARY:
        return Arrays.copyOfRange(b, start, start + len);
      case SparkFeatureTypes.DECIMAL: {
        checkUtf8(f, b, start, len);
        String s = new String(b, start, len, StandardCharsets.UTF_8);
        BigDecimal d;
        try {
          d = new BigDecimal(s.trim());
        } catch (NumberFormatException e) {
          throw new SchemaException("feature " + SchemaException.q(f.name) + ": "
              + SchemaException.q(s) + " is not a decimal number");
        }
        return decimal(f, d, s);
      }
      default:
        throw mismatch(f, ExampleWire.BYTES);
    }
  }

  static void checkUtf8(DecodedField f, byte[] b, int start, int len) {
    if (!ExampleWire.validUtf8(b, start, len)) {
      throw new SchemaException("feature " + SchemaException.q(f.name) + " has values that are "
          + "not valid UTF-8, so it can't be read as " + f.type.simpleString()
          + "; read it as binary");
    }
  }

  /** An ML (or mllib) dense vector as VectorUDT stores it: (type 1, size, indices, values). */
  static InternalRow denseVector(double[] values) {
    return new GenericInternalRow(new Object[] {(byte) 1, null, null,
        UnsafeArrayData.fromPrimitiveArray(values)});
  }

  /**
   * {@code d} as a Decimal of the field's type, exactly. Decided from {@code d}'s precision and
   * scale before {@code setScale} computes anything: an exponent ({@code 1E99999999}, ten bytes
   * of a record) would otherwise have it scale by a power of ten of that many digits, keeping the
   * task busy for minutes before the value is refused.
   */
  private static Decimal decimal(DecodedField f, BigDecimal d, String text) {
    int precision = f.plan.precision;
    int scale = f.plan.scale;
    if (d.signum() == 0) {
      return Decimal.apply(BigDecimal.valueOf(0, scale), precision, scale);
    }
    // The digits before the point (the same whatever d's representation), and the digits of d
    // past the type's scale: when those are all of d's digits, d (not 0) can't be exact there.
    long integerDigits = (long) d.precision() - d.scale();
    long beyondScale = (long) d.scale() - scale;
    if (integerDigits <= precision - scale && beyondScale < d.precision()) {
      try {
        // Now cheap: fewer than d.precision() digits are divided off, or at most
        // scale - d.scale() <= scale + precision zeros appended.
        return Decimal.apply(d.setScale(scale, RoundingMode.UNNECESSARY), precision, scale);
      } catch (ArithmeticException e) {
        // more fractional digits than the scale: not exact
      }
    }
    throw new SchemaException("feature " + SchemaException.q(f.name) + ": value " + text
        + " doesn't fit " + f.type.simpleString() + " exactly");
  }
}
