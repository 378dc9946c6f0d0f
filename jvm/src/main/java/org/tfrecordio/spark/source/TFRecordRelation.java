package org.tfrecordio.spark.source;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.PrunedScan;
import org.apache.spark.sql.types.StructType;

/**
 * A {@code format("tfrecord")} scan under a schema whose nullability is kept. Spark makes every
 * field of a file source nullable; {@code load_dataframe} promises the inferred (or given)
 * nullability, so it wraps the scan in this relation. Each query's columns are selected from
 * the scan, so pruning and counting from indexes still apply.
 */
public final class TFRecordRelation extends BaseRelation implements PrunedScan {
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
  public RDD<Row> buildScan(String[] requiredColumns) {
    Column[] cols = new Column[requiredColumns.length];
    for (int i = 0; i < cols.length; i++) {
      cols[i] = functions.col("`" + requiredColumns[i].replace("`", "``") + "`");
    }
    RDD<?> rows = scan.select(cols).queryExecution().toRdd();
    return (RDD<Row>) rows;
  }
}
