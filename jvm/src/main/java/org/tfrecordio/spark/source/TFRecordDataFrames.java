package org.tfrecordio.spark.source;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.spark.FailedWriteCleanup;
import org.tfrecordio.spark.PartitionPaths;
import org.tfrecordio.spark.RowDecoder;
import org.tfrecordio.spark.RowEncoder;
import org.tfrecordio.spark.SchemaInferenceJob;

/**
 * The entry points that {@code tfrecord_io.spark.save_dataframe} and {@code load_dataframe}
 * call through py4j (usable from Java and Scala as they are): thin wrappers over the data source
 * {@code format("tfrecord")} ({@link TFRecordFileFormat}) that keep
 * those functions' contract: the path must not exist when saving; when loading, errors for
 * missing paths and conflicting partition directories before any job, partition column types
 * by this project's rules, the given or inferred nullability, and the given column order.
 */
public final class TFRecordDataFrames {
  /** The column of {@code record_type="ByteArray"} DataFrames. */
  public static final String BYTE_ARRAY_COLUMN = "byte_array";
  /** The data source's short name. */
  public static final String FORMAT = "tfrecord";
  private static final String COMPRESS = "mapreduce.output.fileoutputformat.compress";
  private static final String CASE_SENSITIVE = "spark.sql.caseSensitive";

  private TFRecordDataFrames() {}

  /**
   * Writes a DataFrame as TFRecord files under {@code path} (which must not exist).
   *
   * @param recordType "Example", "SequenceExample" or "ByteArray"
   * @param codecClass a Hadoop CompressionCodec class name, or null for no compression
   * @param partitionBy partition columns (may be null or empty): their values become
   *     {@code col=value} directories and are not stored in the records
   * @param hadoopConf extra Hadoop settings for the job (may be null)
   * @throws SchemaException before any task runs, naming the first column whose type has no
   *     feature form; while writing, for a null inside an array (a failed write removes the
   *     directory it created when that holds nothing but the committer's leftovers:
   *     {@link FailedWriteCleanup})
   */
  public static void save(Dataset<Row> df, String path, String recordType, String codecClass,
      List<String> partitionBy, Map<String, String> hadoopConf) {
    List<String> parts = partitionBy == null ? List.of() : partitionBy;
    RowEncoder.plan(df.schema(), recordType, parts, caseSensitive(df.sparkSession()));
    DataFrameWriter<Row> writer = df.write().format(FORMAT).mode(SaveMode.ErrorIfExists);
    if (hadoopConf != null) {
      writer = writer.options(hadoopConf);
    }
    writer = writer.option(TFRecordOptions.RECORD_TYPE, recordType);
    if (codecClass != null) {
      writer = writer.option(TFRecordOptions.COMPRESSION, codecClass);
    } else if (hadoopConf == null || !hadoopConf.containsKey(COMPRESS)) {
      writer = writer.option(TFRecordOptions.COMPRESSION, "none");
    } // else: the job configuration's mapreduce.output.fileoutputformat.compress* decide
    if (!parts.isEmpty()) {
      writer = writer.partitionBy(parts.toArray(new String[0]));
    }
    // The job's file system as Spark's write resolves it: the session's settings and the options.
    Configuration conf = SessionHadoopConf.of(df.sparkSession());
    if (hadoopConf != null) {
      hadoopConf.forEach(conf::set);
    }
    DataFrameWriter<Row> configured = writer;
    FailedWriteCleanup.run(path, conf, () -> configured.save(path));
  }

  /**
   * Checks that a DataFrame schema can be written; throws {@link SchemaException} if not.
   * Partition columns resolve as in the active session ({@code spark.sql.caseSensitive}).
   */
  public static void checkWritable(StructType schema, String recordType,
      List<String> partitionBy) {
    RowEncoder.plan(schema, recordType, partitionBy, SQLConf.get().caseSensitiveAnalysis());
  }

  /**
   * Whether column names are case-sensitive in {@code spark} ({@code spark.sql.caseSensitive},
   * false by default): Spark resolves {@code year} to a column or partition directory
   * {@code Year} unless it is.
   */
  static boolean caseSensitive(SparkSession spark) {
    return Boolean.parseBoolean(spark.conf().get(CASE_SENSITIVE, "false").trim());
  }

  /** A set of column names that compares them as {@code spark.sql.caseSensitive} says. */
  static Set<String> nameSet(boolean caseSensitive) {
    return caseSensitive ? new HashSet<>() : new TreeSet<>(String.CASE_INSENSITIVE_ORDER);
  }

  /**
   * Reads TFRecord files as a DataFrame.
   *
   * @param path a path, glob, or comma-separated list of them: files, or directories of files,
   *     possibly in {@code col=value} partition directories, which become columns
   * @param schemaJsonOrDdl the schema (JSON as {@code StructType.json()} gives, or DDL), or null
   *     to infer it from the records (a Spark job that reads them all, or a sample)
   * @param recordType "Example", "SequenceExample" or "ByteArray"
   * @param binaryFeatures when inferring: bytes features to type binary rather than string
   * @param sampleFraction when inferring: the fraction of input splits to read, in (0, 1]
   * @param hadoopConf extra Hadoop settings (may be null)
   */
  public static Dataset<Row> load(SparkSession spark, String path, String schemaJsonOrDdl,
      String recordType, List<String> binaryFeatures, double sampleFraction,
      Map<String, String> hadoopConf) throws IOException {
    return spark.baseRelationToDataFrame(relation(spark, path, schemaJsonOrDdl, recordType,
        binaryFeatures, sampleFraction, hadoopConf));
  }

  /**
   * The relation of {@link #load}: what {@link TFRecordDataFrameSource} gives Spark Connect clients,
   * which cannot call {@link #load}.
   */
  public static TFRecordRelation relation(SparkSession spark, String path,
      String schemaJsonOrDdl, String recordType, List<String> binaryFeatures,
      double sampleFraction, Map<String, String> hadoopConf) throws IOException {
    RowEncoder.checkRecordType(recordType);
    if (!(sampleFraction > 0 && sampleFraction <= 1)) {
      throw new IllegalArgumentException("sample must be in (0, 1], not " + sampleFraction);
    }
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Configuration conf = SessionHadoopConf.of(spark);
    Map<String, String> extra = hadoopConf == null ? Map.of() : hadoopConf;
    extra.forEach(conf::set);
    PartitionDiscovery.Layout layout = PartitionDiscovery.discover(conf, path);
    if (layout.nested) {
      conf.setBoolean(FileInputFormat.INPUT_DIR_RECURSIVE, true);
    }
    StructType given = parseSchema(schemaJsonOrDdl);
    boolean caseSensitive = caseSensitive(spark);
    Set<String> partNames = nameSet(caseSensitive);
    partNames.addAll(layout.columns);
    List<StructField> partFields = new ArrayList<>();
    for (int i = 0; i < layout.columns.size(); i++) {
      String name = layout.columns.get(i);
      StructField f = given == null ? null : field(given, name, caseSensitive);
      if (f != null) {
        PartitionPaths.checkReadType(name, f.dataType());
      } else {
        f = DataTypes.createStructField(name, PartitionPaths.inferType(layout.values.get(i)),
            true);
      }
      partFields.add(f);
    }
    List<StructField> out = new ArrayList<>();
    if (given != null) {
      Collections.addAll(out, given.fields());
      for (StructField f : partFields) {
        if (field(given, f.name(), caseSensitive) == null) {
          out.add(f);
        }
      }
    } else {
      if (RowEncoder.BYTE_ARRAY.equals(recordType)) {
        out.add(DataTypes.createStructField(BYTE_ARRAY_COLUMN, DataTypes.BinaryType, false));
      } else {
        StructType inferred = SchemaInferenceJob.infer(jsc.newAPIHadoopFile(path,
            DiscoveredInputFormat.class, BytesWritable.class, NullWritable.class, conf),
            recordType, binaryFeatures, sampleFraction);
        for (StructField f : inferred.fields()) {
          if (partNames.contains(f.name())) {
            throw new SchemaException("feature " + SchemaException.q(f.name()) + " has the "
                + "name of a partition column; rename one of them");
          }
          out.add(f);
        }
      }
      out.addAll(partFields);
    }
    Set<String> seen = nameSet(caseSensitive);
    for (int i = 0; i < out.size(); i++) {
      if (!seen.add(out.get(i).name())) {
        throw new SchemaException("field " + SchemaException.q(out.get(i).name())
            + " appears more than once in the schema");
      }
    }
    StructType schema = DataTypes.createStructType(out);
    RowDecoder.plan(dataFields(schema, partNames), recordType); // type errors at once
    DataFrameReader reader = spark.read().format(FORMAT).options(extra)
        .option(TFRecordOptions.RECORD_TYPE, recordType)
        .option(TFRecordOptions.READ_SCHEMA, schema.json())
        .schema(schema);
    Dataset<Row> scan = reader.load(paths(conf, path));
    return new TFRecordRelation(spark, schema, scan);
  }

  private static StructType dataFields(StructType schema, Set<String> partitions) {
    List<StructField> data = new ArrayList<>();
    for (StructField f : schema.fields()) {
      if (!partitions.contains(f.name())) {
        data.add(f);
      }
    }
    return DataTypes.createStructType(data);
  }

  /**
   * A comma-separated list of paths, cut as {@link FileInputFormat} cuts one: commas inside a
   * {@code {a,b}} glob do not separate, so {@code /a,/b/{x,y}} is two paths.
   */
  static String[] paths(Configuration conf, String path) throws IOException {
    Job job = Job.getInstance(conf);
    FileInputFormat.setInputPaths(job, path);
    Path[] parsed = FileInputFormat.getInputPaths(job);
    String[] out = new String[parsed.length];
    for (int i = 0; i < parsed.length; i++) {
      out[i] = parsed[i].toString();
    }
    return out;
  }

  /** The field of {@code t} that {@code name} resolves to (as {@code spark.sql.caseSensitive}
   * says), or null. */
  private static StructField field(StructType t, String name, boolean caseSensitive) {
    for (StructField f : t.fields()) {
      if (caseSensitive ? f.name().equals(name) : f.name().equalsIgnoreCase(name)) {
        return f;
      }
    }
    return null;
  }

  private static StructType parseSchema(String text) {
    if (text == null) {
      return null;
    }
    DataType t;
    try {
      t = text.trim().startsWith("{") ? DataType.fromJson(text) : StructType.fromDDL(text);
    } catch (RuntimeException e) {
      throw new SchemaException("can't parse the schema " + SchemaException.q(text) + ": "
          + e.getMessage(), e);
    }
    if (!(t instanceof StructType)) {
      throw new SchemaException("the schema must be a struct type, not " + t.simpleString());
    }
    return (StructType) t;
  }
}
