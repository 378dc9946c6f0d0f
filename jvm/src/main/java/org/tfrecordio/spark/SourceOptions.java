package org.tfrecordio.spark;

import java.util.Map;
import java.util.TreeMap;
import scala.Tuple2;

/** The options Spark passes a data source (a Scala map), as Java sees them. */
public final class SourceOptions {
  private SourceOptions() {}

  /**
   * The options as a Java map whose keys are looked up case-insensitively, as Spark's options
   * are; works on Scala 2.12 and 2.13 alike.
   */
  public static Map<String, String> of(scala.collection.Map<String, String> options) {
    Map<String, String> copy = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    scala.collection.Iterator<Tuple2<String, String>> it = options.iterator();
    while (it.hasNext()) {
      Tuple2<String, String> kv = it.next();
      copy.put(kv._1(), kv._2());
    }
    return copy;
  }
}
