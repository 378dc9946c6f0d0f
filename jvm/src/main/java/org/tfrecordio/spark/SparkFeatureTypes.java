package org.tfrecordio.spark;

import java.io.Serializable;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.CharType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.UserDefinedType;
import org.apache.spark.sql.types.VarcharType;
import org.tfrecordio.example.ExampleWire;
import org.tfrecordio.example.SchemaException;

/**
 * How Spark column types map to features: the leaf types, their feature kinds, the shapes
 * (scalar, list, feature list), and the value conversions both directions share.
 */
final class SparkFeatureTypes {
  private SparkFeatureTypes() {}

  // Leaf types.
  static final int BOOLEAN = 1;
  static final int BYTE = 2;
  static final int SHORT = 3;
  static final int INT = 4;
  static final int LONG = 5;
  static final int FLOAT = 6;
  static final int DOUBLE = 7;
  static final int STRING = 8;
  static final int BINARY = 9;
  static final int DECIMAL = 10;
  static final int DATE = 11;
  static final int TIMESTAMP = 12;
  static final int TIMESTAMP_NTZ = 13;
  static final int NULL = 14;

  // Shapes.
  /** One value. */
  static final int SCALAR = 0;
  /** array&lt;leaf&gt;: one Feature with any number of values. */
  static final int LIST = 1;
  /** An ML Vector: a float_list (dense; sparse densified). */
  static final int VECTOR = 2;
  /** array&lt;array&lt;leaf&gt;&gt;: a SequenceExample feature list, one step per inner array. */
  static final int STEPS = 3;
  /** array&lt;Vector&gt;: a SequenceExample feature list, one float_list step per vector. */
  static final int VECTOR_STEPS = 4;

  /** Millis of 1900-01-01T00:00Z: from here on, java.sql times need no calendar rebasing. */
  private static final long REBASE_CUTOFF_MILLIS = -2208988800000L;

  /** The leaf code of a non-nested type, or 0 if it has no feature form. */
  static int leaf(DataType t) {
    if (t instanceof BooleanType) {
      return BOOLEAN;
    } else if (t instanceof ByteType) {
      return BYTE;
    } else if (t instanceof ShortType) {
      return SHORT;
    } else if (t instanceof IntegerType) {
      return INT;
    } else if (t instanceof LongType) {
      return LONG;
    } else if (t instanceof FloatType) {
      return FLOAT;
    } else if (t instanceof DoubleType) {
      return DOUBLE;
    } else if (t instanceof StringType || t instanceof CharType || t instanceof VarcharType) {
      return STRING;
    } else if (t instanceof BinaryType) {
      return BINARY;
    } else if (t instanceof DecimalType) {
      return DECIMAL;
    } else if (t instanceof DateType) {
      return DATE;
    } else if (t instanceof TimestampType) {
      return TIMESTAMP;
    } else if (t instanceof TimestampNTZType) {
      return TIMESTAMP_NTZ;
    } else if (t instanceof NullType) {
      return NULL;
    }
    return 0;
  }

  /** The feature kind that a leaf type is written as. */
  static int kind(int leaf) {
    switch (leaf) {
      case FLOAT:
      case DOUBLE:
        return ExampleWire.FLOAT;
      case STRING:
      case BINARY:
      case DECIMAL:
        return ExampleWire.BYTES;
      case NULL:
        return ExampleWire.NO_KIND;
      default:
        return ExampleWire.INT64;
    }
  }

  /** 0 if {@code t} is not an ML Vector; 1 for org.apache.spark.ml's, 2 for mllib's. */
  static int vectorFlavour(DataType t) {
    if (t instanceof UserDefinedType) {
      String cls = t.getClass().getName();
      if (cls.equals("org.apache.spark.ml.linalg.VectorUDT")) {
        return 1;
      }
      if (cls.equals("org.apache.spark.mllib.linalg.VectorUDT")) {
        return 2;
      }
    }
    return 0;
  }

  /** The shape and leaf of a column type; throws naming the column when it has no form. */
  static final class Plan implements Serializable {
    private static final long serialVersionUID = 1L;
    final int shape;
    final int leaf;
    /** For vectors: 1 ml, 2 mllib. */
    final int vector;
    final int precision;
    final int scale;

    Plan(int shape, int leaf, int vector, DataType leafType) {
      this.shape = shape;
      this.leaf = leaf;
      this.vector = vector;
      if (leafType instanceof DecimalType) {
        this.precision = ((DecimalType) leafType).precision();
        this.scale = ((DecimalType) leafType).scale();
      } else {
        this.precision = 0;
        this.scale = 0;
      }
    }

    boolean featureList() {
      return shape == STEPS || shape == VECTOR_STEPS;
    }
  }

  /**
   * Plans a column: {@code what} is "column" (writing) or "field" (reading) for messages.
   *
   * @param sequence SequenceExample (array of arrays allowed) rather than Example
   * @param nullLists allow arrays of type null (reading: features that never have a kind)
   */
  static Plan plan(String name, DataType t, boolean sequence, String what, boolean nullLists) {
    int v = vectorFlavour(t);
    if (v != 0) {
      return new Plan(VECTOR, DOUBLE, v, null);
    }
    if (t instanceof ArrayType) {
      DataType e = ((ArrayType) t).elementType();
      int ev = vectorFlavour(e);
      boolean nested = e instanceof ArrayType || ev != 0;
      if (nested && !sequence) {
        throw new SchemaException(what + " " + SchemaException.q(name) + " has type "
            + t.simpleString() + ": lists of lists have no Example form (they are "
            + "SequenceExample feature lists; use record_type='SequenceExample')");
      }
      if (ev != 0) {
        return new Plan(VECTOR_STEPS, DOUBLE, ev, null);
      }
      if (e instanceof ArrayType) {
        DataType inner = ((ArrayType) e).elementType();
        int l = leaf(inner);
        if (l == 0 || (l == NULL && !nullLists)) {
          throw unsupported(what, name, t);
        }
        return new Plan(STEPS, l, 0, inner);
      }
      int l = leaf(e);
      if (l == 0 || (l == NULL && !nullLists)) {
        throw unsupported(what, name, t);
      }
      return new Plan(LIST, l, 0, e);
    }
    int l = leaf(t);
    if (l == 0) {
      throw unsupported(what, name, t);
    }
    return new Plan(SCALAR, l, 0, t);
  }

  static SchemaException unsupported(String what, String name, DataType t) {
    return new SchemaException(what + " " + SchemaException.q(name) + " has type "
        + t.simpleString() + ", which has no TFRecord feature form");
  }

  // ------------------------------------------------------------------------------------------
  // Dates and times as int64: days since 1970-01-01, microseconds since the epoch (UTC).
  // ------------------------------------------------------------------------------------------

  static long days(Object v) {
    if (v instanceof LocalDate) {
      return ((LocalDate) v).toEpochDay();
    }
    // java.sql.Date: its (hybrid-calendar) fields, as Spark itself converts it.
    return ((java.sql.Date) v).toLocalDate().toEpochDay();
  }

  static long micros(Instant i) {
    return Math.addExact(Math.multiplyExact(i.getEpochSecond(), 1_000_000L), i.getNano() / 1000);
  }

  static long micros(Object v) {
    if (v instanceof Instant) {
      return micros((Instant) v);
    }
    java.sql.Timestamp t = (java.sql.Timestamp) v;
    long ms = t.getTime();
    if (ms >= REBASE_CUTOFF_MILLIS) {
      return Math.floorDiv(ms, 1000L) * 1_000_000L + t.getNanos() / 1000;
    }
    // Before 1900: Spark rebases java.sql.Timestamp through its local fields; do the same.
    return micros(t.toLocalDateTime().atZone(ZoneId.systemDefault()).toInstant());
  }

  static long microsNtz(Object v) {
    LocalDateTime t = (LocalDateTime) v;
    return Math.addExact(Math.multiplyExact(t.toEpochSecond(ZoneOffset.UTC), 1_000_000L),
        t.getNano() / 1000);
  }
}
