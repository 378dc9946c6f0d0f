package org.tfrecordio.spark.source;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.tfrecordio.spark.DriverAnswers;

/**
 * {@link ReadMetrics#last} as a data source answered on the driver without a Spark job, for
 * clients that reach it only through the DataFrame API (Spark Connect):
 * {@code spark.read.format(ReadMetricsSource.class.getName()).load()} gives no row before any
 * scan, else one (read long, counted long, decoded long): what the most recently planned
 * {@code format("tfrecord")} scan of the driver did.
 */
public final class ReadMetricsSource extends DriverAnswers {
  @Override
  protected StructType schema(CaseInsensitiveStringMap options) {
    return new StructType().add("read", DataTypes.LongType, false)
        .add("counted", DataTypes.LongType, false)
        .add("decoded", DataTypes.LongType, false);
  }

  @Override
  protected InternalRow[] rows(CaseInsensitiveStringMap options) {
    ReadMetrics last = ReadMetrics.last();
    if (last == null) {
      return new InternalRow[0];
    }
    return new InternalRow[] {new GenericInternalRow(new Object[] {last.recordsRead(),
        last.recordsCounted(), last.featuresDecoded()})};
  }
}
