package org.tfrecordio.spark.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.tfrecordio.hadoop.Compression;
import org.tfrecordio.mapreduce.TFRecordInputFormat;
import org.tfrecordio.spark.InternalRowEncoder;
import org.tfrecordio.spark.RowEncoder;
import org.tfrecordio.spark.SchemaInferenceJob;
import scala.Function1;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Map;

/**
 * The Spark data source {@code format("tfrecord")}: TFRecord files of {@code tf.train.Example},
 * {@code SequenceExample} or raw byte records as DataFrames and SQL tables, for every Spark
 * language. A file-based (V1) source, so Spark supplies save modes, {@code partitionBy},
 * partition discovery, the output committer, {@code CREATE TABLE ... USING tfrecord},
 * {@code INSERT INTO} and {@code SELECT * FROM tfrecord.`path`}. Options:
 * {@link TFRecordOptions}.
 *
 * <p>One class for Scala 2.12 (Spark 3.5) and 2.13 (Spark 4): the methods whose parameters
 * include a {@code Seq} are declared with both erasures ({@code scala.collection.Seq} and
 * {@code scala.collection.immutable.Seq}), and Scala collections are only touched through
 * methods that both Scala versions have.
 */
public final class TFRecordFileFormat implements FileFormat, DataSourceRegister {
  /** The short name: {@code format("tfrecord")}. */
  public static final String SHORT_NAME = "tfrecord";

  @Override
  public String shortName() {
    return SHORT_NAME;
  }

  @Override
  public String toString() {
    return "TFRecord";
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof TFRecordFileFormat;
  }

  @Override
  public int hashCode() {
    return TFRecordFileFormat.class.hashCode();
  }

  // ------------------------------------------------------------------------------------------
  // Schema inference
  // ------------------------------------------------------------------------------------------

  /** Scala 2.13 (Spark 4). */
  @Override
  public Option<StructType> inferSchema(SparkSession spark, Map<String, String> options,
      scala.collection.immutable.Seq<FileStatus> files) {
    return infer(spark, options, files.iterator());
  }

  /** Scala 2.12 (Spark 3.5). */
  public Option<StructType> inferSchema(SparkSession spark, Map<String, String> options,
      scala.collection.Seq<FileStatus> files) {
    return infer(spark, options, files.iterator());
  }

  private Option<StructType> infer(SparkSession spark, Map<String, String> options,
      Iterator<FileStatus> files) {
    TFRecordOptions opts = TFRecordOptions.of(options);
    if (RowEncoder.BYTE_ARRAY.equals(opts.recordType())) {
      return Option.apply(new StructType(new StructField[] {DataTypes.createStructField(
          TFRecordDataFrames.BYTE_ARRAY_COLUMN, DataTypes.BinaryType, false)}));
    }
    List<Path> paths = new ArrayList<>();
    while (files.hasNext()) {
      Path path = files.next().getPath();
      // Spark lists Parquet's _metadata files with the data; a Hadoop job's input has no
      // hidden file (FileInputFormat would say it does not exist), and the scan reads none.
      if (!PartitionDiscovery.hidden(path.getName(), false)) {
        paths.add(literal(path));
      }
    }
    if (paths.isEmpty()) {
      return Option.empty();
    }
    Configuration conf = SessionHadoopConf.of(spark);
    opts.applyTo(conf);
    try {
      Job job = Job.getInstance(conf);
      FileInputFormat.setInputPaths(job, paths.toArray(new Path[0]));
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      return Option.apply(SchemaInferenceJob.infer(jsc.newAPIHadoopRDD(job.getConfiguration(),
          TFRecordInputFormat.class, BytesWritable.class, NullWritable.class),
          opts.recordType(), opts.binaryFeatures(), opts.samplingRatio()));
    } catch (IOException e) {
      throw new UncheckedIOException(e.getMessage(), e);
    }
  }

  /**
   * {@code path} as an input path of a Hadoop job that names that file only: FileInputFormat
   * takes its input paths as globs, in which a listed file's name may hold pattern characters
   * ({@code part[1].tfrecord} would match no file, {@code x*.tfrecord} others too).
   */
  static Path literal(Path path) {
    return new Path(path.toString().replaceAll("[\\\\\\[\\]{}*?]", "\\\\$0"));
  }

  // ------------------------------------------------------------------------------------------
  // Writing
  // ------------------------------------------------------------------------------------------

  @Override
  public OutputWriterFactory prepareWrite(SparkSession spark, Job job,
      Map<String, String> options, StructType dataSchema) {
    TFRecordOptions opts = TFRecordOptions.of(options);
    InternalRowEncoder.plan(dataSchema, opts.recordType()); // schema errors before any task
    return new TFRecordOutputWriterFactory(opts.recordType(),
        opts.codecClass(job.getConfiguration()));
  }

  // ------------------------------------------------------------------------------------------
  // Reading
  // ------------------------------------------------------------------------------------------

  @Override
  public boolean isSplitable(SparkSession spark, Map<String, String> options, Path path) {
    Configuration conf = SessionHadoopConf.of(spark);
    TFRecordOptions.of(options).applyTo(conf);
    return Compression.forInput(conf, path) == null;
  }

  /** Scala 2.13 (Spark 4): rows of the required columns only. */
  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReader(SparkSession spark,
      StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
      scala.collection.immutable.Seq<Filter> filters, Map<String, String> options,
      Configuration hadoopConf) {
    return reader(spark, requiredSchema, new StructType(), options, hadoopConf);
  }

  /** Scala 2.12 (Spark 3.5): rows of the required columns only. */
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReader(SparkSession spark,
      StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
      scala.collection.Seq<Filter> filters, Map<String, String> options,
      Configuration hadoopConf) {
    return reader(spark, requiredSchema, new StructType(), options, hadoopConf);
  }

  /**
   * Scala 2.13 (Spark 4): what a scan reads, the required columns then the partition columns,
   * as UnsafeRows written by the decoder itself (Spark's default joins each row to the
   * partition values and copies it through a projection).
   */
  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession spark, StructType dataSchema, StructType partitionSchema,
      StructType requiredSchema, scala.collection.immutable.Seq<Filter> filters,
      Map<String, String> options, Configuration hadoopConf) {
    return reader(spark, requiredSchema, partitionSchema, options, hadoopConf);
  }

  /** Scala 2.12 (Spark 3.5): as above. */
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession spark, StructType dataSchema, StructType partitionSchema,
      StructType requiredSchema, scala.collection.Seq<Filter> filters,
      Map<String, String> options, Configuration hadoopConf) {
    return reader(spark, requiredSchema, partitionSchema, options, hadoopConf);
  }

  private Function1<PartitionedFile, Iterator<InternalRow>> reader(SparkSession spark,
      StructType required, StructType partition, Map<String, String> options,
      Configuration hadoopConf) {
    TFRecordOptions opts = TFRecordOptions.of(options);
    StructType decoded = withNullability(required, opts.get(TFRecordOptions.READ_SCHEMA));
    Configuration conf = new Configuration(hadoopConf);
    opts.applyTo(conf);
    Broadcast<SerializableConf> bc = JavaSparkContext.fromSparkContext(spark.sparkContext())
        .broadcast(new SerializableConf(conf));
    return new TFRecordReadFunction(bc, decoded, partition, opts.recordType(),
        ReadMetrics.register(spark.sparkContext()));
  }

  /** {@code required} with the nullability of the same fields in {@code schemaJson}. */
  private static StructType withNullability(StructType required, String schemaJson) {
    if (schemaJson == null) {
      return required;
    }
    StructType intended = (StructType) DataType.fromJson(schemaJson);
    StructField[] out = required.fields().clone();
    for (int i = 0; i < out.length; i++) {
      for (StructField f : intended.fields()) {
        if (f.name().equals(out[i].name())) {
          out[i] = DataTypes.createStructField(out[i].name(), out[i].dataType(), f.nullable(),
              out[i].metadata());
        }
      }
    }
    return new StructType(out);
  }
}
