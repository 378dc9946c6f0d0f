package org.tfrecordio.spark;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.Arrays;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.SchemaException;

/**
 * One decoded feature value (an int64, a float or a bytes value) as the Spark value of a
 * field's leaf type, checked: ranges, exact decimals, UTF-8 strings. Used by {@link RowDecoder}.
 */
final class LeafValues {
  private LeafValues() {}

  static SchemaException mismatch(RowDecoder.Field f, int kind) {
    return new SchemaException("feature " + SchemaException.q(f.name) + " holds "
        + ExampleWire.kindLabel(kind) + " values, which can't be read as "
        + f.type.simpleString());
  }

  static Object fromLong(RowDecoder.Field f, long x, boolean java8Time) {
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
        return java8Time ? LocalDate.ofEpochDay(x) : SparkFeatureTypes.sqlDate(x);
      case SparkFeatureTypes.TIMESTAMP:
        return java8Time ? SparkFeatureTypes.instant(x) : SparkFeatureTypes.sqlTimestamp(x);
      case SparkFeatureTypes.TIMESTAMP_NTZ:
        return SparkFeatureTypes.localDateTime(x);
      case SparkFeatureTypes.DECIMAL:
        return decimal(f, BigDecimal.valueOf(x), Long.toString(x));
      default:
        throw mismatch(f, ExampleWire.INT64);
    }
  }

  static SchemaException outOfRange(RowDecoder.Field f, long x) {
    return new SchemaException("feature " + SchemaException.q(f.name) + ": value " + x
        + " is out of range for " + f.type.simpleString());
  }

  static Object fromFloat(RowDecoder.Field f, float x) {
    switch (f.plan.leaf) {
      case SparkFeatureTypes.FLOAT:
        return x;
      case SparkFeatureTypes.DOUBLE:
        return (double) x;
      default:
        throw mismatch(f, ExampleWire.FLOAT);
    }
  }

  static Object fromBytes(RowDecoder.Field f, byte[] b, int start, int len) {
    switch (f.plan.leaf) {
      case SparkFeatureTypes.STRING:
        return string(f, b, start, len);
      case SparkFeatureTypes.BINARY:
        return Arrays.copyOfRange(b, start, start + len);
      case SparkFeatureTypes.DECIMAL: {
        String s = string(f, b, start, len);
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

  private static String string(RowDecoder.Field f, byte[] b, int start, int len) {
    if (!ExampleWire.validUtf8(b, start, len)) {
      throw new SchemaException("feature " + SchemaException.q(f.name) + " has values that are "
          + "not valid UTF-8, so it can't be read as " + f.type.simpleString()
          + "; read it as binary");
    }
    return new String(b, start, len, StandardCharsets.UTF_8);
  }

  private static BigDecimal decimal(RowDecoder.Field f, BigDecimal d, String text) {
    try {
      BigDecimal out = d.setScale(f.plan.scale, RoundingMode.UNNECESSARY);
      if (out.precision() - out.scale() <= f.plan.precision - f.plan.scale) {
        return out;
      }
    } catch (ArithmeticException e) {
      // more fractional digits than the scale: not exact
    }
    throw new SchemaException("feature " + SchemaException.q(f.name) + ": value " + text
        + " doesn't fit " + f.type.simpleString() + " exactly");
  }
}
