package org.tfrecordio.spark.source;

import java.util.function.BiFunction;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.PrunedFilteredScan;
import org.apache.spark.sql.sources.StringContains;
import org.apache.spark.sql.sources.StringEndsWith;
import org.apache.spark.sql.sources.StringStartsWith;
import org.apache.spark.sql.types.StructType;

/**
 * A {@code format("tfrecord")} scan under a schema whose nullability is kept. Spark makes every
 * field of a file source nullable; {@code load_dataframe} promises the inferred (or given)
 * nullability, so it wraps the scan in this relation. Each query's columns are selected from
 * the scan, and the query's filters are applied to it, so column pruning, partition pruning
 * and counting from indexes still apply (Spark evaluates the filters again on the result).
 */
public final class TFRecordRelation extends BaseRelation implements PrunedFilteredScan {
  private final SparkSession spark;
  private final StructType schema;
  private final Dataset<Row> scan;

  /**
   * @param schema the schema to present (its fields are columns of {@code scan})
   * @param scan a {@code format("tfrecord")} DataFrame
   */
  public TFRecordRelation(SparkSession spark, StructType schema, Dataset<Row> scan) {
    this.spark = spark;
    this.schema = schema;
    this.scan = scan;
  }

  @Override
  public SQLContext sqlContext() {
    return spark.sqlContext();
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public boolean needConversion() {
    return false; // buildScan gives Spark's internal rows
  }

  @Override
  @SuppressWarnings("unchecked")
  public RDD<Row> buildScan(String[] requiredColumns, Filter[] filters) {
    Dataset<Row> rows = scan;
    for (Filter f : filters) {
      rows = filter(rows, f);
    }
    Column[] cols = new Column[requiredColumns.length];
    for (int i = 0; i < cols.length; i++) {
      cols[i] = col(requiredColumns[i]);
    }
    return (RDD<Row>) (RDD<?>) rows.select(cols).queryExecution().toRdd();
  }

  private static Column col(String name) {
    return functions.col("`" + name.replace("`", "``") + "`");
  }

  /** {@code rows} filtered by whichever conjuncts of {@code f} translate exactly. */
  private static Dataset<Row> filter(Dataset<Row> rows, Filter f) {
    if (f instanceof And) {
      return filter(filter(rows, ((And) f).left()), ((And) f).right());
    }
    Column c = column(f);
    return c == null ? rows : rows.filter(c);
  }

  /**
   * A data source filter as the same condition on columns, or null if some part of it has no
   * translation here.
   */
  static Column column(Filter f) {
    if (f instanceof EqualTo) {
      EqualTo e = (EqualTo) f;
      return compare(e.attribute(), Column::equalTo, e.value());
    } else if (f instanceof EqualNullSafe) {
      EqualNullSafe e = (EqualNullSafe) f;
      return compare(e.attribute(), Column::eqNullSafe, e.value());
    } else if (f instanceof GreaterThan) {
      GreaterThan e = (GreaterThan) f;
      return compare(e.attribute(), Column::gt, e.value());
    } else if (f instanceof GreaterThanOrEqual) {
      GreaterThanOrEqual e = (GreaterThanOrEqual) f;
      return compare(e.attribute(), Column::geq, e.value());
    } else if (f instanceof LessThan) {
      LessThan e = (LessThan) f;
      return compare(e.attribute(), Column::lt, e.value());
    } else if (f instanceof LessThanOrEqual) {
      LessThanOrEqual e = (LessThanOrEqual) f;
      return compare(e.attribute(), Column::leq, e.value());
    } else if (f instanceof In) {
      In e = (In) f;
      Column[] values = new Column[e.values().length];
      for (int i = 0; i < values.length; i++) {
        values[i] = functions.lit(e.values()[i]);
      }
      return col(e.attribute()).isin((Object[]) values);
    } else if (f instanceof IsNull) {
      return col(((IsNull) f).attribute()).isNull();
    } else if (f instanceof IsNotNull) {
      return col(((IsNotNull) f).attribute()).isNotNull();
    } else if (f instanceof StringStartsWith) {
      StringStartsWith e = (StringStartsWith) f;
      return col(e.attribute()).startsWith(e.value());
    } else if (f instanceof StringEndsWith) {
      StringEndsWith e = (StringEndsWith) f;
      return col(e.attribute()).endsWith(e.value());
    } else if (f instanceof StringContains) {
      StringContains e = (StringContains) f;
      return col(e.attribute()).contains(e.value());
    } else if (f instanceof And) {
      Column l = column(((And) f).left());
      Column r = column(((And) f).right());
      return l == null || r == null ? null : l.and(r);
    } else if (f instanceof Or) {
      Column l = column(((Or) f).left());
      Column r = column(((Or) f).right());
      return l == null || r == null ? null : l.or(r);
    } else if (f instanceof Not) {
      Column c = column(((Not) f).child());
      return c == null ? null : functions.not(c);
    }
    return null;
  }

  /** {@code attribute op value}, the value as a literal. */
  private static Column compare(String attribute, BiFunction<Column, Object, Column> op,
      Object value) {
    return op.apply(col(attribute), functions.lit(value));
  }
}
