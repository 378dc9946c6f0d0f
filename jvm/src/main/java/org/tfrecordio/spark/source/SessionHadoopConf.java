package org.tfrecordio.spark.source;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

/**
 * The Hadoop configuration of a session's file jobs, made as Spark makes it for its own file
 * sources ({@code SessionState.newHadoopConf}): the SparkContext's, with every setting of the
 * session over it. What a session sets with {@code spark.conf.set} (an object store's endpoint
 * and credentials, say: a Spark Connect client's only way to set them) thus reaches every job
 * the source runs itself (schema inference, {@code load_dataframe}'s listing), as it reaches
 * Spark's scans and writes.
 */
final class SessionHadoopConf {
  private SessionHadoopConf() {}

  static Configuration of(SparkSession spark) {
    Configuration conf = new Configuration(spark.sparkContext().hadoopConfiguration());
    scala.collection.Iterator<Tuple2<String, String>> settings =
        spark.conf().getAll().iterator();
    while (settings.hasNext()) {
      Tuple2<String, String> setting = settings.next();
      if (setting._2() != null) {
        conf.set(setting._1(), setting._2());
      }
    }
    return conf;
  }
}
