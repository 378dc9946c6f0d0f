package org.tfrecordio.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.tfrecordio.codec.ReaderOptions;
import org.tfrecordio.codec.TFRecordReader;

/**
 * Configuration keys of the TFRecord formats. Set them on the job's {@link Configuration}, or
 * in Spark as {@code spark.hadoop.<key>}.
 */
public final class TFRecordConfig {
  /** Largest record accepted when reading, in bytes (default 256 MiB). */
  public static final String MAX_RECORD_BYTES = "tfrecord.max.record.bytes";
  /** What to do with damaged records: {@code fail} (default) or {@code skip}. */
  public static final String CORRUPT_POLICY = "tfrecord.input.corrupt.policy";
  /** Verify both CRCs of every record while reading (default true). */
  public static final String VERIFY_CHECKSUMS = "tfrecord.input.verify.checksums";
  /** Read buffer size in bytes (default 1 MiB). */
  public static final String READ_BUFFER_BYTES = "tfrecord.input.buffer.bytes";
  /** Use sidecar indexes, where present and valid, for exact splits (default true). */
  public static final String USE_INDEX = "tfrecord.input.index";
  /**
   * Split unindexed uncompressed files at byte offsets and find record starts by scanning for
   * a valid header (default false). Hazard: a record whose payload itself contains TFRecord
   * framing can be mistaken for records at a split boundary. Prefer the index.
   */
  public static final String SPLIT_RESYNC = "tfrecord.input.split.resync";
  /**
   * Compression of input files: {@code auto} (default: from the file name, as Hadoop does),
   * {@code none}, {@code gzip}, {@code zlib}, or a codec class name.
   */
  public static final String INPUT_COMPRESSION = "tfrecord.input.compression";
  /** Write a sidecar index next to each uncompressed output file (default true). */
  public static final String WRITE_INDEX = "tfrecord.output.index";
  /** Extension of output files before the codec's (default {@code .tfrecord}). */
  public static final String OUTPUT_EXTENSION = "tfrecord.output.extension";

  private TFRecordConfig() {}

  /** Reader options from a configuration; messages name these keys. */
  public static ReaderOptions readerOptions(Configuration conf) {
    ReaderOptions options = new ReaderOptions()
        .messages(MAX_RECORD_BYTES,
            "set " + CORRUPT_POLICY + "=skip to read past damaged records");
    try {
      options.maxRecordBytes(
          conf.getLong(MAX_RECORD_BYTES, ReaderOptions.DEFAULT_MAX_RECORD_BYTES));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(MAX_RECORD_BYTES + ": " + e.getMessage(), e);
    }
    try {
      options.corruptPolicy(conf.getTrimmed(CORRUPT_POLICY, "fail"));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(CORRUPT_POLICY + ": " + e.getMessage(), e);
    }
    return options
        .verify(conf.getBoolean(VERIFY_CHECKSUMS, true))
        .bufferBytes(conf.getInt(READ_BUFFER_BYTES, 1 << 20));
  }
}
