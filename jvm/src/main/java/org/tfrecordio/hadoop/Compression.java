package org.tfrecordio.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.hadoop.io.compress.DefaultCodec;
import org.apache.hadoop.io.compress.GzipCodec;
import org.apache.hadoop.util.ReflectionUtils;

/** Chooses the compression codec of an input file. */
public final class Compression {
  private Compression() {}

  /**
   * The codec for reading {@code path}, or null if it is not compressed. Under {@code auto}, the
   * file name decides: first Hadoop's codecs by their extensions ({@code .gz}, {@code .deflate},
   * {@code .bz2}, ...), then the endings that the Python readers take as compressed, in any case:
   * {@code .gz} gzip, {@code .deflate}, {@code .zlib} and {@code .zz} zlib (TensorFlow's "ZLIB").
   */
  public static CompressionCodec forInput(Configuration conf, Path path) {
    String choice = conf.getTrimmed(TFRecordConfig.INPUT_COMPRESSION, "auto");
    switch (choice.toLowerCase(java.util.Locale.ROOT)) {
      case "auto":
        CompressionCodec byHadoop = new CompressionCodecFactory(conf).getCodec(path);
        return byHadoop != null ? byHadoop : byPythonSuffix(conf, path.getName());
      case "none":
      case "":
        return null;
      case "gzip":
        return ReflectionUtils.newInstance(GzipCodec.class, conf);
      case "zlib":
        return ReflectionUtils.newInstance(DefaultCodec.class, conf);
      default:
        try {
          Class<?> cls = conf.getClassByName(choice);
          return (CompressionCodec) ReflectionUtils.newInstance(cls, conf);
        } catch (ClassNotFoundException | ClassCastException e) {
          throw new IllegalArgumentException(TFRecordConfig.INPUT_COMPRESSION
              + " must be auto, none, gzip, zlib or a CompressionCodec class, not '" + choice
              + "'", e);
        }
    }
  }

  /** The codec that the Python readers' name rule gives {@code name}, or null for none. */
  private static CompressionCodec byPythonSuffix(Configuration conf, String name) {
    String lower = name.toLowerCase(java.util.Locale.ROOT);
    if (lower.endsWith(".gz")) {
      return ReflectionUtils.newInstance(GzipCodec.class, conf);
    }
    if (lower.endsWith(".deflate") || lower.endsWith(".zlib") || lower.endsWith(".zz")) {
      return ReflectionUtils.newInstance(DefaultCodec.class, conf);
    }
    return null;
  }
}
