package org.tfrecordio.spark;

import java.io.FileNotFoundException;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.lib.input.InvalidInputException;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.Function;
import org.apache.spark.api.java.function.PairFunction;
import org.tfrecordio.mapreduce.TFRecordInputFormat;
import org.tfrecordio.mapreduce.TFRecordOutputFormat;
import scala.Tuple2;

/**
 * RDDs of raw records ({@code byte[]}) as TFRecord files: what {@code tfrecord_io.spark}'s
 * {@code save_records}/{@code load_records} call, so records cross between Python and the JVM
 * as plain length-framed bytes, never pickled.
 */
public final class TFRecordRDDs {
  private TFRecordRDDs() {}

  /**
   * Writes each element as one record under {@code path} (which must not exist) through
   * {@link TFRecordOutputFormat}. If the job fails, the directory it created is removed when it
   * holds nothing but the committer's leftovers ({@link FailedWriteCleanup}), so that the same
   * call can run again.
   */
  public static void save(JavaRDD<byte[]> records, String path, Map<String, String> hadoopConf) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(records.context());
    Configuration conf = conf(jsc, hadoopConf);
    FailedWriteCleanup.run(path, conf, () -> records.mapToPair(new ToPair())
        .saveAsNewAPIHadoopFile(path, BytesWritable.class, NullWritable.class,
            TFRecordOutputFormat.class, conf));
  }

  /**
   * Reads the records of the files at {@code path} (Hadoop path syntax) through {@link
   * TFRecordInputFormat}. The input is listed and split here, as {@code spark.read} does, not
   * at the RDD's first action (Spark keeps the splits: nothing is listed twice).
   *
   * @throws FileNotFoundException a path that does not exist, or a glob that matches no file,
   *     named as Hadoop names it
   */
  public static JavaRDD<byte[]> load(JavaSparkContext jsc, String path,
      Map<String, String> hadoopConf) throws FileNotFoundException {
    JavaPairRDD<BytesWritable, NullWritable> files = jsc.newAPIHadoopFile(path,
        TFRecordInputFormat.class, BytesWritable.class, NullWritable.class,
        conf(jsc, hadoopConf));
    try {
      files.rdd().partitions();
    } catch (Exception e) { // Scala code: the checked IOException is not declared
      if (e instanceof InvalidInputException) {
        FileNotFoundException missing = new FileNotFoundException(e.getMessage());
        missing.initCause(e);
        throw missing;
      }
      throw e;
    }
    return files.map(new CopyKey());
  }

  private static Configuration conf(JavaSparkContext jsc, Map<String, String> extra) {
    Configuration conf = new Configuration(jsc.hadoopConfiguration());
    if (extra != null) {
      extra.forEach(conf::set);
    }
    return conf;
  }

  static final class ToPair implements PairFunction<byte[], BytesWritable, NullWritable> {
    private static final long serialVersionUID = 1L;

    @Override
    public Tuple2<BytesWritable, NullWritable> call(byte[] record) {
      return new Tuple2<>(new BytesWritable(record), NullWritable.get());
    }
  }

  static final class CopyKey implements Function<Tuple2<BytesWritable, NullWritable>, byte[]> {
    private static final long serialVersionUID = 1L;

    @Override
    public byte[] call(Tuple2<BytesWritable, NullWritable> pair) {
      return pair._1().copyBytes();
    }
  }
}
