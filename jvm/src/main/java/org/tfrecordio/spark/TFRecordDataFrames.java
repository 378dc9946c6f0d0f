package org.tfrecordio.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.spark.api.java.JavaNewHadoopRDD;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.api.java.function.PairFlatMapFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.tfrecordio.mapreduce.TFRecordInputFormat;
import org.tfrecordio.mapreduce.TFRecordOutputFormat;
import scala.Tuple2;
import org.tfrecordio.example.SchemaException;

/**
 * DataFrames as TFRecord files of {@code tf.train.Example}, {@code tf.train.SequenceExample}
 * or raw byte records: the entry points that {@code tfrecord_io.spark.save_dataframe} and
 * {@code load_dataframe} call through py4j, usable from Java and Scala as they are.
 *
 * <p>Rows are encoded and decoded in the executors' JVMs ({@link RowEncoder},
 * {@link RowDecoder}), and files are written and read by this jar's Hadoop formats, so the
 * output committer, the sidecar index and compression all apply.
 */
public final class TFRecordDataFrames {
  /** The column of {@code record_type="ByteArray"} DataFrames. */
  public static final String BYTE_ARRAY_COLUMN = "byte_array";

  private static final String COMPRESS = "mapreduce.output.fileoutputformat.compress";
  private static final String COMPRESS_CODEC = "mapreduce.output.fileoutputformat.compress.codec";

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
   *     feature form; while writing, for a null inside an array
   */
  public static void save(Dataset<Row> df, String path, String recordType, String codecClass,
      List<String> partitionBy, Map<String, String> hadoopConf) throws IOException {
    RowEncoder encoder = RowEncoder.plan(df.schema(), recordType, partitionBy);
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(df.sparkSession().sparkContext());
    Configuration conf = jobConf(jsc, hadoopConf);
    if (codecClass == null) {
      if (hadoopConf == null || !hadoopConf.containsKey(COMPRESS)) {
        conf.setBoolean(COMPRESS, false);
      }
    } else {
      conf.setBoolean(COMPRESS, true);
      conf.set(COMPRESS_CODEC, codecClass);
    }
    if (!encoder.partitioned()) {
      df.javaRDD().mapPartitionsToPair(new Encode(encoder)).saveAsNewAPIHadoopFile(path,
          BytesWritable.class, NullWritable.class, TFRecordOutputFormat.class, conf);
      return;
    }
    Column[] sortBy = new Column[partitionBy.size()];
    for (int i = 0; i < sortBy.length; i++) {
      sortBy[i] = functions.col("`" + partitionBy.get(i).replace("`", "``") + "`");
    }
    df.sortWithinPartitions(sortBy).javaRDD().mapPartitionsToPair(new EncodePartitioned(encoder))
        .saveAsNewAPIHadoopFile(path, Text.class, BytesWritable.class,
            PartitionedTFRecordOutputFormat.class, conf);
  }

  /** Checks that a DataFrame schema can be written; throws {@link SchemaException} if not. */
  public static void checkWritable(StructType schema, String recordType,
      List<String> partitionBy) {
    RowEncoder.plan(schema, recordType, partitionBy);
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
    RowEncoder.checkRecordType(recordType);
    if (!(sampleFraction > 0 && sampleFraction <= 1)) {
      throw new IllegalArgumentException("sample must be in (0, 1], not " + sampleFraction);
    }
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Configuration conf = jobConf(jsc, hadoopConf);
    PartitionDiscovery.Layout layout = PartitionDiscovery.discover(conf, path);
    if (layout.nested) {
      conf.setBoolean(FileInputFormat.INPUT_DIR_RECURSIVE, true);
    }
    StructType given = parseSchema(schemaJsonOrDdl);
    Set<String> partNames = new HashSet<>(layout.columns);

    List<StructField> partFields = new ArrayList<>();
    for (int i = 0; i < layout.columns.size(); i++) {
      String name = layout.columns.get(i);
      StructField f = given == null ? null : field(given, name);
      if (f != null) {
        PartitionPaths.checkReadType(name, f.dataType());
      } else {
        f = DataTypes.createStructField(name, PartitionPaths.inferType(layout.values.get(i)),
            true);
      }
      partFields.add(f);
    }

    JavaPairRDD<BytesWritable, NullWritable> pairs = jsc.newAPIHadoopFile(path,
        TFRecordInputFormat.class, BytesWritable.class, NullWritable.class, conf);

    List<StructField> dataFields = new ArrayList<>();
    if (given != null) {
      for (StructField f : given.fields()) {
        if (!partNames.contains(f.name())) {
          dataFields.add(f);
        }
      }
    } else if (RowEncoder.BYTE_ARRAY.equals(recordType)) {
      dataFields.add(DataTypes.createStructField(BYTE_ARRAY_COLUMN, DataTypes.BinaryType, false));
    } else {
      StructType inferred = infer(pairs, recordType, binaryFeatures, sampleFraction);
      for (StructField f : inferred.fields()) {
        if (partNames.contains(f.name())) {
          throw new SchemaException("feature " + SchemaException.q(f.name()) + " has the name "
              + "of a partition column; rename one of them");
        }
        dataFields.add(f);
      }
    }

    // Output order: the given schema's, partition columns it lacks at the end; or the data
    // fields, then the partition columns.
    List<StructField> out = new ArrayList<>();
    if (given != null) {
      Collections.addAll(out, given.fields());
      for (StructField f : partFields) {
        if (field(given, f.name()) == null) {
          out.add(f);
        }
      }
    } else {
      out.addAll(dataFields);
      out.addAll(partFields);
    }
    Map<String, Integer> position = new HashMap<>();
    for (int i = 0; i < out.size(); i++) {
      if (position.put(out.get(i).name(), i) != null) {
        throw new SchemaException("field " + SchemaException.q(out.get(i).name())
            + " appears more than once in the schema");
      }
    }
    int[] dataOut = new int[dataFields.size()];
    for (int i = 0; i < dataOut.length; i++) {
      dataOut[i] = position.get(dataFields.get(i).name());
    }
    int[] partOut = new int[partFields.size()];
    DataType[] partTypes = new DataType[partFields.size()];
    for (int i = 0; i < partOut.length; i++) {
      partOut[i] = position.get(partFields.get(i).name());
      partTypes[i] = partFields.get(i).dataType();
    }
    boolean java8Time = Boolean.parseBoolean(
        spark.conf().get("spark.sql.datetime.java8API.enabled", "false"));
    RowDecoder decoder = RowDecoder.plan(dataFields, dataOut, out.size(), partOut, recordType)
        .java8Time(java8Time);
    @SuppressWarnings("unchecked")
    JavaNewHadoopRDD<BytesWritable, NullWritable> hadoopRdd =
        (JavaNewHadoopRDD<BytesWritable, NullWritable>) pairs;
    JavaRDD<Row> rows = hadoopRdd.mapPartitionsWithInputSplit(
        new Decode(decoder, new ArrayList<>(layout.columns), partTypes, java8Time), false);
    return spark.createDataFrame(rows, DataTypes.createStructType(out));
  }

  /**
   * Infers the schema of TFRecord files of Examples or SequenceExamples (no partition columns),
   * as JSON.
   */
  public static String inferSchema(SparkSession spark, String path, String recordType,
      List<String> binaryFeatures, double sampleFraction, Map<String, String> hadoopConf)
      throws IOException {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Configuration conf = jobConf(jsc, hadoopConf);
    if (PartitionDiscovery.discover(conf, path).nested) {
      conf.setBoolean(FileInputFormat.INPUT_DIR_RECURSIVE, true);
    }
    return infer(jsc.newAPIHadoopFile(path, TFRecordInputFormat.class, BytesWritable.class,
        NullWritable.class, conf), recordType, binaryFeatures, sampleFraction).json();
  }

  private static StructType infer(JavaPairRDD<BytesWritable, NullWritable> pairs,
      String recordType, List<String> binaryFeatures, double sampleFraction) {
    if (!RowEncoder.EXAMPLE.equals(recordType)
        && !RowEncoder.SEQUENCE_EXAMPLE.equals(recordType)) {
      throw new IllegalArgumentException("schema inference is for Example and SequenceExample "
          + "records, not " + recordType);
    }
    Set<String> binary = new HashSet<>(binaryFeatures == null ? List.of() : binaryFeatures);
    int n = pairs.getNumPartitions();
    boolean[] chosen = new boolean[n];
    boolean sampled = sampleFraction < 1 && n > 1;
    if (sampled) {
      int m = (int) Math.max(1, Math.ceil(n * sampleFraction));
      for (int k = 0; k < m; k++) {
        chosen[(int) ((long) k * n / m)] = true;
      }
    } else {
      java.util.Arrays.fill(chosen, true);
    }
    List<SchemaInference.Summary> parts = pairs.mapPartitionsWithIndex(
        new Summarize(RowEncoder.SEQUENCE_EXAMPLE.equals(recordType), binary, chosen), false)
        .collect();
    SchemaInference.Summary total = new SchemaInference.Summary();
    for (SchemaInference.Summary s : parts) {
      total.merge(s);
    }
    return SchemaInference.schema(total, binary, sampled);
  }

  private static StructField field(StructType t, String name) {
    for (StructField f : t.fields()) {
      if (f.name().equals(name)) {
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

  private static Configuration jobConf(JavaSparkContext jsc, Map<String, String> extra) {
    Configuration conf = new Configuration(jsc.hadoopConfiguration());
    if (extra != null) {
      for (Map.Entry<String, String> e : extra.entrySet()) {
        conf.set(e.getKey(), e.getValue());
      }
    }
    return conf;
  }

  // ------------------------------------------------------------------------------------------
  // Task functions (static classes: serializable without capturing anything else)
  // ------------------------------------------------------------------------------------------

  /** Rows to (record, null) pairs for TFRecordOutputFormat. */
  static final class Encode implements PairFlatMapFunction<Iterator<Row>, BytesWritable,
      NullWritable> {
    private static final long serialVersionUID = 1L;
    private final RowEncoder encoder;

    Encode(RowEncoder encoder) {
      this.encoder = encoder;
    }

    @Override
    public Iterator<Tuple2<BytesWritable, NullWritable>> call(Iterator<Row> rows) {
      return new Iterator<Tuple2<BytesWritable, NullWritable>>() {
        @Override
        public boolean hasNext() {
          return rows.hasNext();
        }

        @Override
        public Tuple2<BytesWritable, NullWritable> next() {
          int n = encoder.encode(rows.next());
          // The writer consumes each pair before asking for the next, so the encoder's buffer
          // is wrapped, not copied.
          return new Tuple2<>(new BytesWritable(encoder.buffer(), n), NullWritable.get());
        }
      };
    }
  }

  /** Rows to (partition directory, record) pairs for PartitionedTFRecordOutputFormat. */
  static final class EncodePartitioned implements PairFlatMapFunction<Iterator<Row>, Text,
      BytesWritable> {
    private static final long serialVersionUID = 1L;
    private final RowEncoder encoder;

    EncodePartitioned(RowEncoder encoder) {
      this.encoder = encoder;
    }

    @Override
    public Iterator<Tuple2<Text, BytesWritable>> call(Iterator<Row> rows) {
      return new Iterator<Tuple2<Text, BytesWritable>>() {
        private Object[] last;
        private Text dir;

        @Override
        public boolean hasNext() {
          return rows.hasNext();
        }

        @Override
        public Tuple2<Text, BytesWritable> next() {
          Row row = rows.next();
          if (last == null || !encoder.samePartition(row, last)) {
            dir = new Text(encoder.partitionDir(row));
            last = encoder.partitionValues(row);
          }
          int n = encoder.encode(row);
          return new Tuple2<>(dir, new BytesWritable(encoder.buffer(), n));
        }
      };
    }
  }

  /** Summarizes the records of the chosen partitions for schema inference. */
  static final class Summarize implements Function2<Integer,
      Iterator<Tuple2<BytesWritable, NullWritable>>, Iterator<SchemaInference.Summary>> {
    private static final long serialVersionUID = 1L;
    private final boolean sequence;
    private final HashSet<String> binary;
    private final boolean[] chosen;

    Summarize(boolean sequence, Set<String> binary, boolean[] chosen) {
      this.sequence = sequence;
      this.binary = new HashSet<>(binary);
      this.chosen = chosen;
    }

    @Override
    public Iterator<SchemaInference.Summary> call(Integer index,
        Iterator<Tuple2<BytesWritable, NullWritable>> pairs) {
      if (!chosen[index]) {
        return Collections.emptyIterator(); // not read: only the file is opened
      }
      Iterator<BytesWritable> records = new Iterator<BytesWritable>() {
        @Override
        public boolean hasNext() {
          return pairs.hasNext();
        }

        @Override
        public BytesWritable next() {
          return pairs.next()._1();
        }
      };
      return Collections.singletonList(SchemaInference.summarize(records, sequence, binary))
          .iterator();
    }
  }

  /** Decodes the records of one input split into Rows, with its partition values. */
  static final class Decode implements Function2<InputSplit,
      Iterator<Tuple2<BytesWritable, NullWritable>>, Iterator<Row>> {
    private static final long serialVersionUID = 1L;
    private final RowDecoder decoder;
    private final ArrayList<String> partitionColumns;
    private final DataType[] partitionTypes;
    private final boolean java8Time;

    Decode(RowDecoder decoder, ArrayList<String> partitionColumns, DataType[] partitionTypes,
        boolean java8Time) {
      this.decoder = decoder;
      this.partitionColumns = partitionColumns;
      this.partitionTypes = partitionTypes;
      this.java8Time = java8Time;
    }

    @Override
    public Iterator<Row> call(InputSplit split, Iterator<Tuple2<BytesWritable, NullWritable>> it) {
      FileSplit fs = (FileSplit) split;
      Path file = fs.getPath();
      Object[] partition = new Object[partitionColumns.size()];
      if (partition.length > 0) {
        String[] raw = PartitionPaths.valuesOf(file, partitionColumns);
        for (int i = 0; i < raw.length; i++) {
          partition[i] = PartitionPaths.convert(raw[i], partitionTypes[i],
              partitionColumns.get(i), java8Time);
        }
      }
      return new Iterator<Row>() {
        private long n;

        @Override
        public boolean hasNext() {
          return it.hasNext();
        }

        @Override
        public Row next() {
          if (!it.hasNext()) {
            throw new NoSuchElementException();
          }
          BytesWritable rec = it.next()._1();
          try {
            Row row = decoder.decode(rec.getBytes(), 0, rec.getLength(), partition);
            n++;
            return row;
          } catch (SchemaException e) {
            throw new SchemaException(e.getMessage() + " (record " + n + " of the split of "
                + file + " from byte " + fs.getStart() + ")", e);
          }
        }
      };
    }
  }
}
