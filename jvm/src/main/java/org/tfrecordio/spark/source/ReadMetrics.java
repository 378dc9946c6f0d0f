package org.tfrecordio.spark.source;

import org.apache.spark.SparkContext;
import org.apache.spark.util.LongAccumulator;

/**
 * What the scans of {@code format("tfrecord")} did, summed over their tasks: records read from
 * files, records counted from indexes without reading them, and features decoded. Column
 * pruning shows as fewer decoded features; {@code count()} from indexes as no records read.
 * Each scan planned on the driver registers fresh accumulators; {@link #last} are those of the
 * most recent one, for tests and benchmarks.
 */
public final class ReadMetrics implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private static volatile ReadMetrics last;

  final LongAccumulator recordsRead;
  final LongAccumulator recordsCounted;
  final LongAccumulator featuresDecoded;

  private ReadMetrics(SparkContext sc) {
    recordsRead = sc.longAccumulator("tfrecord records read");
    recordsCounted = sc.longAccumulator("tfrecord records counted from indexes");
    featuresDecoded = sc.longAccumulator("tfrecord features decoded");
  }

  static ReadMetrics register(SparkContext sc) {
    ReadMetrics m = new ReadMetrics(sc);
    last = m;
    return m;
  }

  /** The metrics of the most recently planned scan in this driver, or null. */
  public static ReadMetrics last() {
    return last;
  }

  public long recordsRead() {
    return recordsRead.value();
  }

  public long recordsCounted() {
    return recordsCounted.value();
  }

  public long featuresDecoded() {
    return featuresDecoded.value();
  }
}
