package org.tfrecordio.spark;

import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.tfrecordio.example.SchemaException;

/**
 * Hive-style partition directories as a codec of paths and values, with no file system:
 * {@code col=value/} path segments, values escaped as Spark and Hive escape them, null (and the
 * empty string) as {@value #DEFAULT_PARTITION}; the types of partition columns. Finding the
 * directories is {@code spark.source.PartitionDiscovery}'s.
 */
public final class PartitionPaths {
  static final String DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__";


  private static final boolean[] ESCAPE = new boolean[128];

  static {
    for (int c = 0; c < 0x20; c++) {
      ESCAPE[c] = true;
    }
    for (char c : "\"#%'*/:=?\\\u007f{[]^".toCharArray()) {
      ESCAPE[c] = true;
    }
  }

  private PartitionPaths() {}

  /** Escapes a path segment as Spark's {@code ExternalCatalogUtils.escapePathName}. */
  static String escape(String s) {
    StringBuilder sb = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 128 && ESCAPE[c]) {
        if (sb == null) {
          sb = new StringBuilder(s.length() + 8).append(s, 0, i);
        }
        sb.append('%').append(String.format(Locale.ROOT, "%02X", (int) c));
      } else if (sb != null) {
        sb.append(c);
      }
    }
    return sb == null ? s : sb.toString();
  }

  /** Undoes {@link #escape}: {@code %XX} (two hex digits) becomes that character. */
  public static String unescape(String s) {
    int pct = s.indexOf('%');
    if (pct < 0) {
      return s;
    }
    StringBuilder sb = new StringBuilder(s.length());
    int i = 0;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == '%' && i + 2 < s.length()
          && Character.digit(s.charAt(i + 1), 16) >= 0
          && Character.digit(s.charAt(i + 2), 16) >= 0) {
        sb.append((char) Integer.parseInt(s.substring(i + 1, i + 3), 16));
        i += 3;
      } else {
        sb.append(c);
        i++;
      }
    }
    return sb.toString();
  }

  /**
   * Checks that a column can be a partition column; returns its leaf code.
   */
  static int checkPartitionType(String name, DataType t) {
    int leaf = SparkFeatureTypes.leaf(t);
    switch (leaf) {
      case SparkFeatureTypes.STRING:
      case SparkFeatureTypes.BOOLEAN:
      case SparkFeatureTypes.BYTE:
      case SparkFeatureTypes.SHORT:
      case SparkFeatureTypes.INT:
      case SparkFeatureTypes.LONG:
      case SparkFeatureTypes.FLOAT:
      case SparkFeatureTypes.DOUBLE:
      case SparkFeatureTypes.DECIMAL:
      case SparkFeatureTypes.DATE:
        return leaf;
      default:
        throw new SchemaException("partition column " + SchemaException.q(name) + " has type "
            + t.simpleString() + ", which can't be a partition directory value (use a string, "
            + "integer, boolean, float, double, decimal or date column)");
    }
  }

  /** The value of a {@code col=value} segment: unescaped, null for the default partition. */
  public static String value(String segment) {
    String v = unescape(segment.substring(segment.indexOf('=') + 1));
    return DEFAULT_PARTITION.equals(v) ? null : v;
  }

  /**
   * The partition values of a data file: the {@code col=value} names of its last
   * {@code columns.size()} parent directories.
   */
  static String[] valuesOf(Path file, List<String> columns) {
    String[] out = new String[columns.size()];
    Path dir = file.getParent();
    for (int i = columns.size() - 1; i >= 0; i--) {
      String seg = dir == null ? "" : dir.getName();
      int eq = seg.indexOf('=');
      if (eq <= 0 || !unescape(seg.substring(0, eq)).equals(columns.get(i))) {
        throw new SchemaException("file " + file + " is not in a " + columns.get(i)
            + "=value directory, as the other files are");
      }
      out[i] = value(seg);
      dir = dir.getParent();
    }
    return out;
  }

  /**
   * The type of a partition column from its directory values: int, long or double if every
   * value is one, written the way Java writes that number (so "007" or "1.50" stay strings),
   * else string.
   */
  public static DataType inferType(Set<String> values) {
    boolean ints = true;
    boolean longs = true;
    boolean doubles = true;
    boolean any = false;
    for (String v : values) {
      if (v == null) {
        continue;
      }
      any = true;
      ints = ints && isInt(v);
      longs = longs && isLong(v);
      doubles = doubles && isDouble(v);
    }
    if (!any) {
      return DataTypes.StringType;
    }
    if (ints) {
      return DataTypes.IntegerType;
    }
    if (longs) {
      return DataTypes.LongType;
    }
    if (doubles) {
      return DataTypes.DoubleType;
    }
    return DataTypes.StringType;
  }

  private static boolean isInt(String v) {
    try {
      return Integer.toString(Integer.parseInt(v)).equals(v);
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private static boolean isLong(String v) {
    try {
      return Long.toString(Long.parseLong(v)).equals(v);
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private static boolean isDouble(String v) {
    if (v.chars().noneMatch(Character::isDigit)) {
      return false;
    }
    try {
      return Double.toString(Double.parseDouble(v)).equals(v);
    } catch (NumberFormatException e) {
      return false;
    }
  }

  /** Checks a partition column type of a given schema (the types {@link #convert} handles). */
  public static void checkReadType(String name, DataType t) {
    int leaf = SparkFeatureTypes.leaf(t);
    if (leaf != SparkFeatureTypes.STRING && leaf != SparkFeatureTypes.BOOLEAN && leaf != SparkFeatureTypes.BYTE
        && leaf != SparkFeatureTypes.SHORT && leaf != SparkFeatureTypes.INT && leaf != SparkFeatureTypes.LONG
        && leaf != SparkFeatureTypes.FLOAT && leaf != SparkFeatureTypes.DOUBLE && leaf != SparkFeatureTypes.DECIMAL
        && leaf != SparkFeatureTypes.DATE) {
      throw new SchemaException("partition column " + SchemaException.q(name) + " has type "
          + t.simpleString() + " in the schema, which partition directory values can't have");
    }
  }
}
