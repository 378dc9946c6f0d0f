package org.tfrecordio.spark.feed;

import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.Function;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.sources.TableScan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import org.tfrecordio.spark.SourceOptions;

/**
 * The feed's Spark jobs as a data source, for clients that reach the driver only through the
 * DataFrame API (Spark Connect, where {@code tfrecord_io.cluster.feed.connect} reads it): the
 * same batches ({@link FeedBatches}) and feeding tasks ({@link FeedSender}) as a classic
 * driver's, started by reading, with what the tasks report as the rows read. The data fed is
 * the client's temporary view named by the option {@code view}.
 *
 * <pre>
 * spark.read.format(FeedSource.class.getName()).option("view", v).option("action", "count")
 *     .load()                   // (partition int, rows long): the view's rows per partition
 * ... .option("action", "send") ...load()   // one row (report string) per feeding task
 * ... .option("action", "release")...load() // frees the batches kept under the view's name
 * </pre>
 *
 * <p>Options of {@code send} (case-insensitive): {@code recordType}, {@code offsets},
 * {@code counts} and {@code limit} (as {@link FeedBatches#fromRows}; no {@code offsets}: record
 * {@code i} of partition {@code p} goes to worker {@code (p + i) % workers}, nothing dropped),
 * {@code workers}, {@code job}, {@code batchBytes}, {@code tasks} (at most this many feeding
 * tasks: partitions are coalesced; 0: one per partition), {@code secret} (the cluster's),
 * {@code addresses} (the workers' feed servers,
 * comma-separated, in worker order), {@code feed}, {@code epoch}, and {@code keep}
 * ({@code true}: the batches are made once, kept in the executors' storage under the view's
 * name, and sent again by later reads until {@code release}).
 */
public final class FeedSource implements RelationProvider {
  public static final String VIEW = "view";
  public static final String ACTION = "action";
  public static final String COUNT = "count";
  public static final String SEND = "send";
  public static final String RELEASE = "release";

  /** Batches kept for later epochs, by view name (dropped by {@code release}). */
  private static final Map<String, JavaRDD<byte[]>> KEPT = new ConcurrentHashMap<>();

  @Override
  public BaseRelation createRelation(SQLContext sqlContext,
      scala.collection.immutable.Map<String, String> parameters) {
    Map<String, String> options = SourceOptions.of(parameters);
    String view = required(options, VIEW);
    String action = options.getOrDefault(ACTION, "");
    switch (action) {
      case COUNT:
        return new Counts(sqlContext, view);
      case SEND:
        return new Sends(sqlContext, view, options);
      case RELEASE:
        JavaRDD<byte[]> kept = KEPT.remove(view);
        if (kept != null) {
          kept.unpersist(false);
        }
        return new Sends(sqlContext, view, null);
      default:
        throw new IllegalArgumentException("the feed source's action is count, send or "
            + "release, not '" + action + "'");
    }
  }

  private static String required(Map<String, String> options, String key) {
    String value = options.get(key);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException("the feed source needs the option " + key);
    }
    return value;
  }

  /** What both actions' relations share: the client's view, the schema of the rows read. */
  private abstract static class ViewRelation extends BaseRelation implements TableScan {
    final SQLContext sqlContext;
    final String view;
    private final StructType schema;
    private final String name;

    ViewRelation(SQLContext sqlContext, String view, StructType schema, String name) {
      this.sqlContext = sqlContext;
      this.view = view;
      this.schema = schema;
      this.name = name;
    }

    /** The data fed: the view's rows. */
    final Dataset<Row> data() {
      return sqlContext.sparkSession().table(view);
    }

    @Override
    public final SQLContext sqlContext() {
      return sqlContext;
    }

    @Override
    public final StructType schema() {
      return schema;
    }

    @Override
    public final String toString() {
      return name;
    }
  }

  /** {@code count}: the rows of each partition of the view, as {@link FeedBatches#countRows}. */
  private static final class Counts extends ViewRelation {
    Counts(SQLContext sqlContext, String view) {
      super(sqlContext, view, new StructType().add("partition", DataTypes.IntegerType, false)
          .add("rows", DataTypes.LongType, false), "tfrecord-io feed counts of " + view);
    }

    @Override
    public RDD<Row> buildScan() {
      sqlContext.sparkContext().setJobDescription("tfrecord-io feed: counting " + view);
      return FeedBatches.internalRows(data()).mapPartitionsWithIndex(new CountRows(), false)
          .rdd();
    }
  }

  /** Counts one partition's rows into one row (partition, rows). */
  private static final class CountRows
      implements Function2<Integer, Iterator<InternalRow>, Iterator<Row>> {
    private static final long serialVersionUID = 1L;

    @Override
    public Iterator<Row> call(Integer partition, Iterator<InternalRow> rows) {
      long n = 0;
      while (rows.hasNext()) {
        rows.next();
        n++;
      }
      return Collections.singletonList(RowFactory.create(partition, n)).iterator();
    }
  }

  /** {@code send}: the feeding job of one epoch; its rows are the tasks' reports. */
  private static final class Sends extends ViewRelation {
    private final Map<String, String> options; // null: release, nothing to send

    Sends(SQLContext sqlContext, String view, Map<String, String> options) {
      super(sqlContext, view, new StructType().add("report", DataTypes.StringType, false),
          "tfrecord-io feed of " + view);
      this.options = options;
    }

    @Override
    public RDD<Row> buildScan() {
      if (options == null) {
        return sqlContext.sparkContext().emptyRDD(
            scala.reflect.ClassTag$.MODULE$.apply(Row.class));
      }
      String feed = required(options, "feed");
      int epoch = Integer.parseInt(required(options, "epoch"));
      List<String> addresses = Arrays.asList(required(options, "addresses").split(","));
      JavaRDD<byte[]> batches = Boolean.parseBoolean(options.getOrDefault("keep", "false"))
          ? KEPT.computeIfAbsent(view, v -> batches().setName("tfrecord-io feed " + feed
              + ": batches").persist(StorageLevel.MEMORY_AND_DISK()))
          : batches();
      sqlContext.sparkContext().setJobDescription("tfrecord-io feed '" + feed + "', epoch "
          + epoch);
      return FeedSender.sendTo(batches, required(options, "secret"), addresses, feed, epoch)
          .map(new ToRow()).rdd();
    }

    private JavaRDD<byte[]> batches() {
      int workers = Integer.parseInt(required(options, "workers"));
      JavaRDD<byte[]> batches = FeedBatches.fromRows(data(),
          options.getOrDefault("recordType", "Example"), options.getOrDefault("offsets", ""),
          options.getOrDefault("counts", ""),
          Long.parseLong(options.getOrDefault("limit", Long.toString(Long.MAX_VALUE))), workers,
          Integer.parseInt(required(options, "job")),
          Integer.parseInt(required(options, "batchBytes")));
      int tasks = Integer.parseInt(options.getOrDefault("tasks", "0"));
      return tasks > 0 && tasks < batches.getNumPartitions() ? batches.coalesce(tasks) : batches;
    }
  }

  /** A task's report as a row. */
  private static final class ToRow implements Function<String, Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public Row call(String report) {
      return RowFactory.create(report);
    }
  }
}
