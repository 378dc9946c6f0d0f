package org.tfrecordio.spark.cluster;

import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;
import org.tfrecordio.spark.DriverAnswers;

/**
 * What the driver knows of its executors, as a data source for clients that reach the driver
 * only through the DataFrame API (Spark Connect, where {@code tfrecord_io.cluster.application}
 * reads it), answered on the driver without a Spark job ({@link DriverAnswers}), so it answers
 * also while every task slot is busy.
 *
 * <pre>
 * spark.read.format(DriverStatus.class.getName()).option("action", "slots").load()
 *     // one row (slots int): the task slots of the executors registered now, as Spark's
 *     // barrier check counts them
 * ... .option("action", "watch") ...   // one row (watching boolean): {@link ExecutorLosses}
 *     // is registered with the driver (from now on it records which executor runs each task)
 * ... .option("action", "loss").option("task", id).option("timeoutMs", ms) ...
 *     // no row for a task never seen, else one (executor, host, container, reason), as
 *     // {@link ExecutorLosses#lossOfTask}
 * ... .option("action", "replace").option("executor", id) ...
 *     // one row (replaced boolean): the executor killed and another asked of the cluster
 *     // manager in its place, as Spark's heartbeat receiver does with an executor it stopped
 *     // hearing from (its task slots stop counting at once)
 * </pre>
 */
public final class DriverStatus extends DriverAnswers {
  public static final String ACTION = "action";
  public static final String SLOTS = "slots";
  public static final String WATCH = "watch";
  public static final String LOSS = "loss";
  public static final String REPLACE = "replace";

  @Override
  protected StructType schema(CaseInsensitiveStringMap options) {
    switch (options.getOrDefault(ACTION, "")) {
      case SLOTS:
        return new StructType().add("slots", DataTypes.IntegerType, false);
      case WATCH:
        return new StructType().add("watching", DataTypes.BooleanType, false);
      case LOSS:
        return new StructType().add("executor", DataTypes.StringType, false)
            .add("host", DataTypes.StringType, true)
            .add("container", DataTypes.StringType, true)
            .add("reason", DataTypes.StringType, true);
      case REPLACE:
        return new StructType().add("replaced", DataTypes.BooleanType, false);
      default:
        throw new IllegalArgumentException("the driver status source's action is slots, "
            + "watch, loss or replace, not '" + options.get(ACTION) + "'");
    }
  }

  @Override
  protected InternalRow[] rows(CaseInsensitiveStringMap options) {
    SparkContext sc = SparkContext.getOrCreate();
    switch (options.get(ACTION)) {
      case SLOTS:
        int slots = sc.maxNumConcurrentTasks(
            sc.resourceProfileManager().defaultResourceProfile());
        return new InternalRow[] {new GenericInternalRow(new Object[] {slots})};
      case WATCH:
        ExecutorLosses.register(sc);
        return new InternalRow[] {new GenericInternalRow(new Object[] {true})};
      case REPLACE:
        String executor = options.get("executor");
        if (executor == null || executor.isEmpty()) {
          throw new IllegalArgumentException("the driver status source's replace action needs "
              + "the option executor (an executor id)");
        }
        boolean replaced = sc.killAndReplaceExecutor(executor);
        return new InternalRow[] {new GenericInternalRow(new Object[] {replaced})};
      default:
        return loss(sc, options);
    }
  }

  private static InternalRow[] loss(SparkContext sc, CaseInsensitiveStringMap options) {
    long task = Long.parseLong(options.get("task"));
    long timeoutMs = Long.parseLong(options.getOrDefault("timeoutMs", "0"));
    Map<String, String> loss;
    try {
      loss = ExecutorLosses.register(sc).lossOfTask(task, timeoutMs);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the loss of task "
          + task, e);
    }
    if (loss == null) {
      return new InternalRow[0];
    }
    Object[] values = new Object[4];
    String[] keys = {"executor", "host", "container", "reason"};
    for (int i = 0; i < keys.length; i++) {
      String value = loss.get(keys[i]);
      values[i] = value == null ? null : UTF8String.fromString(value);
    }
    return new InternalRow[] {new GenericInternalRow(values)};
  }
}
