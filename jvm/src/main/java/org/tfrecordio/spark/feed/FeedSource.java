package org.tfrecordio.spark.feed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.Function;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.rdd.RDD;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.sources.TableScan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import org.tfrecordio.spark.SourceOptions;

/**
 * The feed's Spark jobs as a data source, so that the driver reaches them through the DataFrame
 * API alone ({@code tfrecord_io.cluster.feed.source} reads it, from a classic session or a
 * Spark Connect client): the batches ({@link FeedBatches}) and feeding tasks
 * ({@link FeedSender}), started by reading, with the tasks' summaries as the rows read. The data
 * fed is the client's temporary view named by the option {@code view}.
 *
 * <pre>
 * spark.read.format(FeedSource.class.getName()).option("view", v).option("action", "count")
 *     .load()                   // (partition int, rows long): the view's rows per partition
 * ... .option("action", "send") ...load()   // one row (task string) per feeding task
 * ... .option("action", "release")...load() // frees the batches kept under the view's name
 *                                           // and drops the view, not uncaching its data
 * ... .option("action", "kept")...load()    // one row (kept long): batches kept (see below)
 * </pre>
 *
 * <p>Options of {@code send} (case-insensitive): {@code recordType}, {@code offsets},
 * {@code counts} and {@code limit} (as {@link FeedBatches#fromRows}; no {@code offsets}: record
 * {@code i} of partition {@code p} goes to worker {@code (p + i) % workers}, nothing dropped),
 * {@code workers}, {@code job}, {@code batchBytes}, {@code tasks} (at most this many feeding
 * tasks: partitions are coalesced; 0: one per partition), {@code keyConf} (the NAME of the
 * session conf that holds the feed's purpose key: {@code tfrecordio.feed.secret.<view>}, or
 * {@code spark.tfrecordio.feed.secret.<view>} (see {@link #KEY_CONF_PREFIX} for why not this
 * one), set by the client with {@code spark.conf.set}; Spark's default
 * {@code spark.redaction.regex} redacts both; the key itself is never an option and the source
 * refuses an option {@code secret}), {@code addresses} (the workers' feed servers,
 * comma-separated, in worker order), {@code names} (the workers' node names, comma-separated, in
 * the same order: each connection's keys are bound to its node's name), {@code attempt} (the
 * cluster's attempt, in every hello), {@code feed}, {@code epoch}, and {@code keep}
 * ({@code true}: the batches are made once, kept in the executors' storage under the view's
 * name, and sent again by later reads until {@code release}).
 *
 * <p>Kept batches belong to the Spark Connect session that made them (read from the job tag
 * Spark Connect sets on the thread that runs a client's operation,
 * {@code SparkConnect_OperationTag_User_..._Session_..._Operation_...}): {@code release} frees
 * them, and so does the end of that session (a {@link SparkListener} on the server's
 * {@code SparkListenerConnectSessionClosed} event, matched by class name: the jar is compiled
 * without Spark Connect's server classes). The {@code kept} action counts the batches kept, of
 * the session given by the option {@code session} (a Connect client's {@code session_id}), or
 * of all sessions without it ({@link #keptCount()} on a classic driver).
 */
public final class FeedSource implements RelationProvider {
  public static final String VIEW = "view";
  public static final String ACTION = "action";
  public static final String COUNT = "count";
  public static final String SEND = "send";
  public static final String RELEASE = "release";
  public static final String KEPT_ACTION = "kept";
  /**
   * The prefix of the session conf that holds a feed's key (option {@code keyConf}), without
   * {@code "spark."}: Spark copies every session conf whose name starts with {@code "spark"} into
   * the local properties of each job the session runs (SQLExecution.withSQLConfPropagated), and
   * those reach every listener's {@code SparkListenerJobStart} unredacted (the listener bus logs
   * a slow event whole). {@code spark.redaction.regex} redacts both names.
   */
  public static final String KEY_CONF_PREFIX = "tfrecordio.feed.secret.";
  /** The name the design brief gave first: accepted, though it is copied into jobs' properties. */
  public static final String SPARK_KEY_CONF_PREFIX = "spark." + KEY_CONF_PREFIX;

  /**
   * Batches kept for later epochs: by the Connect session that made them (its job tag's
   * coordinates, "" outside Spark Connect), then by view name.
   */
  private static final Kept<JavaRDD<byte[]>> KEPT = new Kept<>(kept -> kept.unpersist(false));
  /** The SparkContexts whose listener bus has a {@link SessionEnds}. Guarded by itself. */
  private static final Map<SparkContext, SessionEnds> LISTENING = new HashMap<>();

  @Override
  public BaseRelation createRelation(SQLContext sqlContext,
      scala.collection.immutable.Map<String, String> parameters) {
    Map<String, String> options = SourceOptions.of(parameters);
    if (options.containsKey("secret")) {
      throw new IllegalArgumentException("the feed source takes no secret as an option: put the "
          + "feed's key in the session conf " + KEY_CONF_PREFIX + "<view> and name it by the "
          + "option keyConf");
    }
    String action = options.getOrDefault(ACTION, "");
    if (KEPT_ACTION.equals(action)) {
      return new KeptCount(sqlContext, options.get("session"));
    }
    String view = required(options, VIEW);
    switch (action) {
      case COUNT:
        return new Counts(sqlContext, view);
      case SEND:
        return new Sends(sqlContext, view, options);
      case RELEASE:
        KEPT.release(session(sqlContext.sparkContext()), view,
            () -> forgetView(sqlContext.sparkSession(), view));
        return new Sends(sqlContext, view, null);
      default:
        throw new IllegalArgumentException("the feed source's action is count, send, release "
            + "or kept, not '" + action + "'");
    }
  }

  /**
   * The Spark Connect session of the operation this thread runs, as the coordinates of its job
   * tag ({@code User_<a>_Session_<b>}: Spark writes the user and session ids, in this order or,
   * in some versions, the other), or "" outside Spark Connect.
   */
  static String session(SparkContext sc) {
    return sessionOfTags(sc.getLocalProperty("spark.job.tags"));
  }

  /**
   * Forgets the temporary view {@code view} of {@code session}, leaving what it names cached if
   * it was: {@code Catalog.dropTempView} (and {@code DROP VIEW}) would uncache the view's plan,
   * which is the DataFrame the client fed, maybe one it cached. The session's catalog of
   * temporary views ({@code SessionCatalog.dropTempView}) only forgets the name; it is reached by
   * reflection, as the class that holds the session state differs between Spark 3.5 and 4.
   * Forgetting a view that is gone already does nothing.
   */
  static void forgetView(SparkSession session, String view) {
    try {
      Object state = session.getClass().getMethod("sessionState").invoke(session);
      Object catalog = state.getClass().getMethod("catalog").invoke(state);
      catalog.getClass().getMethod("dropTempView", String.class).invoke(catalog, view);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("could not drop the feed's temporary view " + view
          + " from the session's catalog: " + e, e);
    }
  }

  /** The Connect session's coordinates in {@code tags} (Spark's comma-separated job tags). */
  static String sessionOfTags(String tags) {
    if (tags == null) {
      return "";
    }
    String prefix = "SparkConnect_OperationTag_";
    for (String tag : tags.split(",")) {
      int operation = tag.lastIndexOf("_Operation_");
      if (tag.startsWith(prefix) && operation > prefix.length()) {
        return tag.substring(prefix.length(), operation);
      }
    }
    return "";
  }

  /** Whether the coordinates {@code session} (of {@link #session}) are those of session id. */
  static boolean isSession(String session, String sessionId) {
    return !sessionId.isEmpty() && (session.startsWith("User_" + sessionId + "_Session_")
        || session.endsWith("_Session_" + sessionId));
  }

  /**
   * What is kept ({@code T}: the batches of a view), by Connect session (the coordinates of
   * {@link #session}) and view; {@code free} frees a value taken out (outside the lock).
   */
  static final class Kept<T> {
    private final Map<String, Map<String, T>> bySession = new HashMap<>();
    private final Consumer<T> free;

    Kept(Consumer<T> free) {
      this.free = free;
    }

    /** The value kept for {@code view} in {@code session}, made by {@code make} if none is. */
    synchronized T keep(String session, String view, Supplier<T> make) {
      Map<String, T> views = bySession.computeIfAbsent(session, s -> new HashMap<>());
      T kept = views.get(view);
      if (kept == null) {
        kept = make.get();
        views.put(view, kept);
      }
      return kept;
    }

    /**
     * Frees the value kept for {@code view} in {@code session}, if any, once {@code forget} has
     * made sure that it cannot be made again (the feed source drops the view that making it
     * reads). {@code forget} runs first: a {@link #keep} that began before it ended holds the
     * lock, so its value is in the map when this method looks, and is freed; one that begins
     * after it cannot make the value. The other order would let a feeding job planned during
     * the release keep batches that nothing frees.
     */
    void release(String session, String view, Runnable forget) {
      forget.run();
      T kept;
      synchronized (this) {
        Map<String, T> views = bySession.get(session);
        kept = views == null ? null : views.remove(view);
        if (views != null && views.isEmpty()) {
          bySession.remove(session);
        }
      }
      if (kept != null) {
        free.accept(kept);
      }
    }

    /** Frees every value kept by the Connect session {@code sessionId} (it has ended). */
    void releaseSession(String sessionId) {
      List<T> freed = new ArrayList<>();
      synchronized (this) {
        Iterator<Map.Entry<String, Map<String, T>>> it = bySession.entrySet().iterator();
        while (it.hasNext()) {
          Map.Entry<String, Map<String, T>> entry = it.next();
          if (isSession(entry.getKey(), sessionId)) {
            freed.addAll(entry.getValue().values());
            it.remove();
          }
        }
      }
      freed.forEach(free);
    }

    /** Values kept by the Connect session {@code sessionId}, or by all when null or empty. */
    synchronized int count(String sessionId) {
      int n = 0;
      for (Map.Entry<String, Map<String, T>> entry : bySession.entrySet()) {
        if (sessionId == null || sessionId.isEmpty() || isSession(entry.getKey(), sessionId)) {
          n += entry.getValue().size();
        }
      }
      return n;
    }
  }

  /**
   * How many views' batches are kept on this driver: of the Connect session {@code sessionId}
   * (a client's {@code session_id}), or of every session when it is null or empty.
   */
  public static int keptCount(String sessionId) {
    return KEPT.count(sessionId);
  }

  /** How many views' batches are kept on this driver, in every session. */
  public static int keptCount() {
    return KEPT.count(null);
  }

  /** Adds one {@link SessionEnds} to the listener bus of {@code sc}, on its first call. */
  private static void listen(SparkContext sc) {
    synchronized (LISTENING) {
      if (!LISTENING.containsKey(sc)) {
        LISTENING.keySet().removeIf(SparkContext::isStopped);
        SessionEnds listener = new SessionEnds(KEPT);
        sc.addSparkListener(listener);
        LISTENING.put(sc, listener);
      }
    }
  }

  /**
   * Frees a Spark Connect session's kept batches when the session closes. The event's class
   * ({@code org.apache.spark.sql.connect.service.SparkListenerConnectSessionClosed}, on Spark 3.5
   * and 4 alike) is in Spark Connect's server jar, which the jar is not compiled against: it is
   * recognized by name and its {@code sessionId} read reflectively.
   */
  static final class SessionEnds extends SparkListener {
    static final String SESSION_CLOSED =
        "org.apache.spark.sql.connect.service.SparkListenerConnectSessionClosed";

    private final Kept<?> kept;

    SessionEnds(Kept<?> kept) {
      this.kept = kept;
    }

    @Override
    public void onOtherEvent(SparkListenerEvent event) {
      if (!SESSION_CLOSED.equals(event.getClass().getName())) {
        return;
      }
      try {
        Object id = event.getClass().getMethod("sessionId").invoke(event);
        if (id != null) {
          kept.releaseSession(id.toString());
        }
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("Spark Connect's " + SESSION_CLOSED + " has no "
            + "sessionId: the feed's kept batches of closed sessions stay until released", e);
      }
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd end) {
      synchronized (LISTENING) {
        LISTENING.values().remove(this);
      }
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

  /** {@code kept}: one row, the number of views whose batches are kept ({@link #keptCount}). */
  private static final class KeptCount extends BaseRelation implements TableScan {
    private final SQLContext sqlContext;
    private final String session;

    KeptCount(SQLContext sqlContext, String session) {
      this.sqlContext = sqlContext;
      this.session = session;
    }

    @Override
    public SQLContext sqlContext() {
      return sqlContext;
    }

    @Override
    public StructType schema() {
      return new StructType().add("kept", DataTypes.LongType, false);
    }

    @Override
    public RDD<Row> buildScan() {
      long kept = KEPT.count(session); // counted on the driver, now
      return JavaSparkContext.fromSparkContext(sqlContext.sparkContext())
          .parallelize(Collections.singletonList(RowFactory.create(kept)), 1).rdd();
    }

    @Override
    public String toString() {
      return "tfrecord-io feed: batches kept";
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

  /** {@code send}: the feeding job of one epoch; its rows are the tasks' summaries. */
  private static final class Sends extends ViewRelation {
    private final Map<String, String> options; // null: release, nothing to send

    Sends(SQLContext sqlContext, String view, Map<String, String> options) {
      super(sqlContext, view, new StructType().add("task", DataTypes.StringType, false),
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
      int attempt = Integer.parseInt(required(options, "attempt"));
      List<String> addresses = Arrays.asList(required(options, "addresses").split(","));
      List<String> names = Arrays.asList(required(options, "names").split(","));
      if (names.size() != addresses.size()) {
        throw new IllegalArgumentException("the feed source's options name " + addresses.size()
            + " addresses but " + names.size() + " workers");
      }
      String key = feedKey(required(options, "keyConf"));
      SparkContext sc = sqlContext.sparkContext();
      JavaRDD<byte[]> batches = Boolean.parseBoolean(options.getOrDefault("keep", "false"))
          ? keep(sc, view, feed)
          : batches();
      sc.setJobDescription("tfrecord-io feed '" + feed + "', epoch " + epoch);
      FeedStream.Timeouts timeouts = FeedStream.Timeouts.withIdleSeconds(
          sqlContext.getConf(FeedStream.IDLE_TIMEOUT_CONF, ""));
      return FeedSender.sendTo(batches, key, addresses, names, attempt, feed, epoch, timeouts)
          .map(new ToRow()).rdd();
    }

    /** The batches kept for the view in this Connect session, made now if none are. */
    private JavaRDD<byte[]> keep(SparkContext sc, String view, String feed) {
      listen(sc);
      return KEPT.keep(session(sc), view, () -> batches().setName("tfrecord-io feed " + feed
          + ": batches").persist(StorageLevel.MEMORY_AND_DISK()));
    }

    /** The feed's key, from the session conf named {@code conf}. */
    private String feedKey(String conf) {
      String prefix = conf.startsWith(SPARK_KEY_CONF_PREFIX) ? SPARK_KEY_CONF_PREFIX
          : KEY_CONF_PREFIX;
      if (!conf.startsWith(prefix) || conf.length() == prefix.length()) {
        throw new IllegalArgumentException("the feed source's option keyConf names a session "
            + "conf " + KEY_CONF_PREFIX + "<name>, not '" + conf + "'");
      }
      String key = sqlContext.getConf(conf, "");
      if (key.isEmpty()) {
        throw new IllegalArgumentException("the session conf " + conf + " (the feed's key) is "
            + "not set in this session: set it with spark.conf.set before reading");
      }
      return key;
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

  /** A task's summary as a row. */
  private static final class ToRow implements Function<String, Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public Row call(String task) {
      return RowFactory.create(task);
    }
  }
}
