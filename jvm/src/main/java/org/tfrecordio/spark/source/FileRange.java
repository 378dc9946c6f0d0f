package org.tfrecordio.spark.source;

import java.io.IOException;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.tfrecordio.hadoop.Compression;
import org.tfrecordio.hadoop.SplitPlanner;
import org.tfrecordio.hadoop.TFRecordConfig;

/**
 * What one piece of a file that Spark plans at arbitrary byte offsets ({@code start},
 * {@code length}) reads: the records whose first byte lies in the piece, as the InputFormat
 * reads a split. With a valid sidecar index, the piece is snapped to the index's record
 * boundaries and its record count is known without reading (once the file is seen to hold
 * the index's last record); without one, the piece that holds
 * byte 0 reads the whole file and the others read nothing (or, under
 * {@code tfrecord.input.split.resync}, each scans for its first record). Compressed files are
 * read whole by the piece that starts at 0.
 */
final class FileRange {
  /** First byte to read from. */
  final long start;
  /** Bytes in which records start. */
  final long length;
  /** The number of records in the range, from the index; -1 if unknown. */
  final long records;

  private FileRange(long start, long length, long records) {
    this.start = start;
    this.length = length;
    this.records = records;
  }

  private static final FileRange EMPTY = new FileRange(0, 0, 0);

  boolean isEmpty() {
    return records == 0 || length <= 0;
  }

  /**
   * The range of the piece {@code [start, start + length)} of {@code path}, a file of
   * {@code fileLength} bytes.
   *
   * @param count whether the record count is wanted: else a piece that covers the whole file
   *     is read without looking at its index
   */
  static FileRange of(Configuration conf, Path path, long start, long length, long fileLength,
      boolean count) throws IOException {
    if (Compression.forInput(conf, path) != null) {
      return start == 0 ? new FileRange(0, Long.MAX_VALUE, -1) : EMPTY;
    }
    FileSystem fs = path.getFileSystem(conf);
    long end = Math.min(start + length, fileLength);
    boolean whole = start == 0 && end == fileLength;
    if (!count && whole) {
      return new FileRange(0, fileLength, -1);
    }
    boolean useIndex = conf.getBoolean(TFRecordConfig.USE_INDEX, true);
    if (whole && useIndex) {
      long records = SplitPlanner.countIndexed(fs, path, fileLength);
      if (records >= 0) {
        return new FileRange(0, fileLength, records);
      }
    }
    long[] bounds = useIndex ? SplitPlanner.readIndex(fs, path, fileLength) : null;
    int last = bounds == null ? -1 : bounds.length - 2;
    if (count && last >= 0 && !SplitPlanner.holdsRecord(fs, path, bounds[last],
        bounds[last + 1] - bounds[last])) {
      // Counts from the index are counts of no data: every piece checks the same record, the
      // file's last, so all of them read the file instead, or none.
      bounds = null;
    }
    if (bounds != null) {
      int a = ceiling(bounds, start);
      int b = ceiling(bounds, end);
      return new FileRange(bounds[a], bounds[b] - bounds[a], b - a);
    }
    if (conf.getBoolean(TFRecordConfig.SPLIT_RESYNC, false)) {
      return new FileRange(start, end - start, -1);
    }
    return start == 0 ? new FileRange(0, fileLength, -1) : EMPTY;
  }

  /** The index of the first bound at or after {@code offset} (the last bound is the end). */
  private static int ceiling(long[] bounds, long offset) {
    int i = Arrays.binarySearch(bounds, offset);
    return Math.min(i >= 0 ? i : -i - 1, bounds.length - 1);
  }
}
