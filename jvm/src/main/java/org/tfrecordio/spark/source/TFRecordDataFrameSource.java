package org.tfrecordio.spark.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * {@link TFRecordDataFrames#save} and {@link TFRecordDataFrames#load} as a data source, for
 * clients that reach the driver only through the DataFrame API (Spark Connect, where
 * {@code save_dataframe} and {@code load_dataframe} use it). Its contract is theirs: saving
 * checks the schema before any task and refuses an existing path; loading types partition
 * columns by this project's rules and keeps the given or inferred nullability and the given
 * column order (the plain {@code format("tfrecord")} follows Spark's file-source rules).
 *
 * <pre>
 * spark.read.format(TFRecordDataFrameSource.class.getName()).option("path", p).load()
 * df.write.format(TFRecordDataFrameSource.class.getName()).option("path", p)
 *     .option("partitionBy.0", "year").save()
 * </pre>
 *
 * <p>Options (case-insensitive): {@code path} (required; reading: a path, glob or
 * comma-separated list), {@code recordType}; reading: {@code schema} (JSON or DDL; none
 * infers), {@code binaryFeatures}, {@code sample} (or {@code samplingRatio}); writing:
 * {@code codec} (a Hadoop codec class name), {@code partitionBy.0}, {@code partitionBy.1}...
 * (the partition columns, in order). Every other key is Hadoop configuration, as the
 * {@code hadoopConf} of {@code save} and {@code load}. The save mode is always
 * {@code errorifexists}, as {@code save}'s.
 */
public final class TFRecordDataFrameSource implements RelationProvider,
    CreatableRelationProvider {
  public static final String PATH = "path";
  public static final String SCHEMA = "schema";
  public static final String PARTITION_BY = "partitionBy.";
  private static final List<String> OWN_OPTIONS = List.of(PATH, SCHEMA,
      TFRecordOptions.RECORD_TYPE, TFRecordOptions.BINARY_FEATURES, TFRecordOptions.SAMPLE,
      TFRecordOptions.SAMPLING_RATIO, TFRecordOptions.CODEC);

  @Override
  public BaseRelation createRelation(SQLContext sqlContext,
      scala.collection.immutable.Map<String, String> parameters) {
    TFRecordOptions parsed = TFRecordOptions.of(parameters);
    try {
      return TFRecordDataFrames.relation(sqlContext.sparkSession(), path(parsed),
          parsed.get(SCHEMA), parsed.recordType(), parsed.binaryFeatures(),
          parsed.samplingRatio(), hadoopConf(parameters));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public BaseRelation createRelation(SQLContext sqlContext, SaveMode mode,
      scala.collection.immutable.Map<String, String> parameters, Dataset<Row> data) {
    TFRecordOptions parsed = TFRecordOptions.of(parameters);
    List<String> partitionBy = new ArrayList<>();
    for (int i = 0; parsed.get(PARTITION_BY + i) != null; i++) {
      partitionBy.add(parsed.get(PARTITION_BY + i));
    }
    TFRecordDataFrames.save(data, path(parsed), parsed.recordType(), parsed.get(
        TFRecordOptions.CODEC), partitionBy, hadoopConf(parameters));
    StructType schema = data.schema();
    return new BaseRelation() {
      @Override
      public SQLContext sqlContext() {
        return sqlContext;
      }

      @Override
      public StructType schema() {
        return schema;
      }
    };
  }

  private static String path(TFRecordOptions options) {
    String path = options.get(PATH);
    if (path == null) {
      throw new IllegalArgumentException("the option " + PATH + " is required");
    }
    return path;
  }

  /** The options that are none of this source's own: Hadoop configuration. */
  private static Map<String, String> hadoopConf(
      scala.collection.immutable.Map<String, String> parameters) {
    Map<String, String> conf = new TreeMap<>();
    scala.collection.Iterator<Tuple2<String, String>> it = parameters.iterator();
    while (it.hasNext()) {
      Tuple2<String, String> kv = it.next();
      String key = kv._1();
      boolean own = key.regionMatches(true, 0, PARTITION_BY, 0, PARTITION_BY.length());
      for (String o : OWN_OPTIONS) {
        own |= o.equalsIgnoreCase(key);
      }
      if (!own) {
        conf.put(key, kv._2());
      }
    }
    return conf;
  }
}
