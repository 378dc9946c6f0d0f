package org.tfrecordio.spark.source;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.hadoop.io.compress.DefaultCodec;
import org.apache.hadoop.io.compress.GzipCodec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tfrecordio.hadoop.TFRecordConfig;
import org.tfrecordio.spark.RowEncoder;
import org.tfrecordio.spark.SourceOptions;

/**
 * The options of {@code format("tfrecord")}, looked up case-insensitively, in this project's
 * spelling and in linkedin/spark-tfrecord's:
 *
 * <ul>
 *   <li>{@code recordType}: {@code Example} (default), {@code SequenceExample} or
 *       {@code ByteArray};
 *   <li>{@code compression} (writing): {@code none}/{@code uncompressed}, {@code gzip},
 *       {@code zlib}/{@code deflate}, or a codec name as Hadoop knows it; {@code codec}
 *       (spark-tfrecord's): a Hadoop codec class name (or the same short names). Reading takes
 *       the compression from the file names (or {@code tfrecord.input.compression});
 *   <li>{@code samplingRatio} (or {@code sample}): when inferring a schema, the fraction of the
 *       input splits to read, in (0, 1];
 *   <li>{@code binaryFeatures}: when inferring, comma-separated bytes features typed binary;
 *   <li>any other key, {@code tfrecord.*} among them, goes into the job's Hadoop configuration.
 * </ul>
 *
 * <p>An option nobody reads would be ignored silently: a key that is none of these but nearly
 * one ({@code record_type}, {@code compresion}, {@code tfrecord.output.indx}), and a
 * {@code tfrecord.*} key that is none of {@link TFRecordConfig}'s, is logged as a warning
 * naming the nearest known one (once per key and JVM), and still goes to Hadoop.
 */
public final class TFRecordOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  public static final String RECORD_TYPE = "recordType";
  public static final String COMPRESSION = "compression";
  public static final String CODEC = "codec";
  public static final String SAMPLING_RATIO = "samplingRatio";
  public static final String SAMPLE = "sample";
  public static final String BINARY_FEATURES = "binaryFeatures";
  /**
   * The schema whose nullability reads enforce (JSON): set by
   * {@link TFRecordDataFrames#load}, because Spark makes every field of a
   * file source nullable.
   */
  public static final String READ_SCHEMA = "tfrecord.read.schema";

  private static final Logger LOG = LoggerFactory.getLogger(TFRecordOptions.class);
  /** The options some part of this source reads, besides {@link #HADOOP_KEYS}. */
  static final List<String> OPTIONS = List.of(RECORD_TYPE, COMPRESSION, CODEC, SAMPLING_RATIO,
      SAMPLE, BINARY_FEATURES, READ_SCHEMA, "path", "paths", "schema");
  /** The configuration keys of the TFRecord formats. */
  static final List<String> HADOOP_KEYS = List.of(TFRecordConfig.MAX_RECORD_BYTES,
      TFRecordConfig.CORRUPT_POLICY, TFRecordConfig.VERIFY_CHECKSUMS,
      TFRecordConfig.READ_BUFFER_BYTES, TFRecordConfig.USE_INDEX, TFRecordConfig.SPLIT_RESYNC,
      TFRecordConfig.INPUT_COMPRESSION, TFRecordConfig.WRITE_INDEX,
      TFRecordConfig.OUTPUT_EXTENSION);
  /** {@link #OPTIONS} and {@link #HADOOP_KEYS}: every name an option may have. */
  private static final List<String> KNOWN = known();
  private static final String OWN_PREFIX = "tfrecord.";
  private static final String PARTITION_BY_PREFIX = "partitionby.";
  private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
  private static final String COMPRESS = "mapreduce.output.fileoutputformat.compress";
  private static final String COMPRESS_CODEC = "mapreduce.output.fileoutputformat.compress.codec";

  private final TreeMap<String, String> options = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
  final String recordType;

  private TFRecordOptions(Iterable<Map.Entry<String, String>> entries) {
    for (Map.Entry<String, String> e : entries) {
      options.put(e.getKey(), e.getValue());
      String warning = unknownOptionWarning(e.getKey());
      if (warning != null && WARNED.add(e.getKey())) {
        LOG.warn(warning);
      }
    }
    String rt = options.getOrDefault(RECORD_TYPE, RowEncoder.EXAMPLE).trim();
    for (String known : new String[] {RowEncoder.EXAMPLE, RowEncoder.SEQUENCE_EXAMPLE,
        RowEncoder.BYTE_ARRAY}) {
      if (known.equalsIgnoreCase(rt)) {
        rt = known;
      }
    }
    RowEncoder.checkRecordType(rt);
    this.recordType = rt;
  }

  /**
   * What to warn of an option named {@code key}, or null: a key that no part of this source
   * reads, but that is nearly the name of one that some part does (the same letters without
   * {@code _}, {@code -} and case, or an edit distance of at most 2, 1 for names shorter than
   * 8), or that starts with {@code tfrecord.}. Other keys are Hadoop's, and silent.
   */
  static String unknownOptionWarning(String key) {
    String lower = key.toLowerCase(Locale.ROOT);
    if (lower.startsWith(PARTITION_BY_PREFIX)) {
      return null;
    }
    String nearest = null;
    int best = Integer.MAX_VALUE;
    for (String k : KNOWN) {
      String kl = k.toLowerCase(Locale.ROOT);
      if (kl.equals(lower)) {
        return null;
      }
      int d = squeezed(kl).equals(squeezed(lower)) ? 0 : distance(kl, lower);
      if (d < best && d <= (k.length() >= 8 ? 2 : 1)) {
        best = d;
        nearest = k;
      }
    }
    String what = lower.startsWith(OWN_PREFIX)
        ? "'" + key + "' is not a configuration key of tfrecord-io"
        : "'" + key + "' is not an option of format(\"tfrecord\")";
    if (nearest != null) {
      return what + ": did you mean '" + nearest + "'? It goes into the Hadoop configuration, "
          + "where nothing reads it";
    }
    if (lower.startsWith(OWN_PREFIX)) {
      return what + " (those are " + String.join(", ", HADOOP_KEYS) + "): it goes into the "
          + "Hadoop configuration, where nothing reads it";
    }
    return null;
  }

  private static List<String> known() {
    List<String> all = new ArrayList<>(OPTIONS);
    all.addAll(HADOOP_KEYS);
    return List.copyOf(all);
  }

  private static String squeezed(String name) {
    return name.replace("_", "").replace("-", "");
  }

  /** The Levenshtein distance of two strings. */
  private static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        cur[j] = Math.min(sub, Math.min(prev[j], cur[j - 1]) + 1);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  /** The options of a Java map. */
  public static TFRecordOptions of(Map<String, String> options) {
    return new TFRecordOptions(options.entrySet());
  }

  /** The options as Spark passes them (a Scala map, on Scala 2.12 and 2.13 alike). */
  static TFRecordOptions of(scala.collection.Map<String, String> options) {
    return of(SourceOptions.of(options));
  }

  /** The value of an option, or null. */
  public String get(String key) {
    return options.get(key);
  }

  /** The record type: Example, SequenceExample or ByteArray. */
  public String recordType() {
    return recordType;
  }

  /** The sampling fraction of schema inference, in (0, 1]. */
  public double samplingRatio() {
    String v = options.containsKey(SAMPLING_RATIO) ? options.get(SAMPLING_RATIO)
        : options.getOrDefault(SAMPLE, "1");
    double f;
    try {
      f = Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      f = Double.NaN;
    }
    if (!(f > 0 && f <= 1)) {
      throw new IllegalArgumentException("sample must be in (0, 1], not " + v + " (option "
          + SAMPLING_RATIO + ")");
    }
    return f;
  }

  /** The features that schema inference types binary. */
  public List<String> binaryFeatures() {
    List<String> out = new ArrayList<>();
    String v = options.get(BINARY_FEATURES);
    if (v != null) {
      for (String s : v.split(",")) {
        if (!s.trim().isEmpty()) {
          out.add(s.trim());
        }
      }
    }
    return out;
  }

  /** Copies every option into a Hadoop configuration (Spark does so itself for reads). */
  public void applyTo(Configuration conf) {
    for (Map.Entry<String, String> e : options.entrySet()) {
      conf.set(e.getKey(), e.getValue());
    }
  }

  /**
   * The class name of the output codec, or null for none: the {@code compression} or
   * {@code codec} option, else what the job's Hadoop configuration says.
   *
   * @throws IllegalArgumentException an unknown compression or codec
   */
  public String codecClass(Configuration conf) {
    String choice = options.containsKey(COMPRESSION) ? options.get(COMPRESSION)
        : options.get(CODEC);
    if (choice == null) {
      if (!conf.getBoolean(COMPRESS, false)) {
        return null;
      }
      return conf.get(COMPRESS_CODEC, DefaultCodec.class.getName());
    }
    switch (choice.trim().toLowerCase(Locale.ROOT)) {
      case "":
      case "none":
      case "uncompressed":
        return null;
      case "gzip":
        return GzipCodec.class.getName();
      case "zlib":
      case "deflate":
        return DefaultCodec.class.getName();
      default:
        CompressionCodec codec = new CompressionCodecFactory(conf).getCodecByName(choice.trim());
        if (codec == null) {
          throw new IllegalArgumentException("compression must be none, gzip, zlib or a Hadoop "
              + "codec class name, not '" + choice + "' (options " + COMPRESSION + ", " + CODEC
              + ")");
        }
        return codec.getClass().getName();
    }
  }
}
