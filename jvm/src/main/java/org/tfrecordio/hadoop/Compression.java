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

  /** The codec for reading {@code path}, or null if it is not compressed. */
  public static CompressionCodec forInput(Configuration conf, Path path) {
    String choice = conf.getTrimmed(TFRecordConfig.INPUT_COMPRESSION, "auto");
    switch (choice.toLowerCase(java.util.Locale.ROOT)) {
      case "auto":
        return new CompressionCodecFactory(conf).getCodec(path);
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
}
