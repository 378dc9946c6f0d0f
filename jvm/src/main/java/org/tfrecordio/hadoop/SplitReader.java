package org.tfrecordio.hadoop;

import java.io.Closeable;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.tfrecordio.codec.ReaderOptions;
import org.tfrecordio.codec.TFRecordReader;

/**
 * Reads the records of one split: the records whose first byte lies in
 * {@code [start, start + length)}. A split that does not start at 0 starts either on a record
 * boundary (from the index) or, under resync splitting, at the first valid record after it.
 * Compressed files are always read whole ({@link CompressedInput}: damage inside the compressed
 * stream ends it after every record that decodes whole, reported under the corrupt policy).
 * Shared by both Hadoop APIs.
 */
public final class SplitReader implements Closeable {
  private final FSDataInputStream fileIn;
  private final CompressedInput compressedIn;
  private final TFRecordReader reader;
  private final long start;
  private final long end;
  private final long fileLength;
  private final boolean compressed;
  private long reportedRecords;
  private long reportedBytes;

  public SplitReader(Configuration conf, Path path, long start, long length) throws IOException {
    this(conf, path, start, length, -1);
  }

  /**
   * @param fileLength the file's length when the caller knows it (Spark's pieces carry it), else
   *     -1 to ask the file system
   */
  public SplitReader(Configuration conf, Path path, long start, long length, long fileLength)
      throws IOException {
    FileSystem fs = path.getFileSystem(conf);
    CompressionCodec codec = Compression.forInput(conf, path);
    this.fileLength = fileLength >= 0 ? fileLength : fs.getFileStatus(path).getLen();
    ReaderOptions options = TFRecordConfig.readerOptions(conf);
    try {
      if (codec != null) {
        this.compressed = true;
        this.fileIn = null;
        this.compressedIn = new CompressedInput(fs, path, codec);
        this.start = 0;
        this.end = Long.MAX_VALUE;
        this.reader = new TFRecordReader(compressedIn, path.toString(), 0, options);
      } else {
        this.compressed = false;
        this.compressedIn = null;
        this.start = start;
        this.end = start + length;
        this.fileIn = fs.open(path);
        fileIn.seek(start);
        this.reader = new TFRecordReader(fileIn, path.toString(), start, options);
        reader.setEnd(end);
        reader.setStreamLength(this.fileLength);
        // A split that does not start at 0 starts on a record boundary taken from the index,
        // or, under resync splitting only, at an arbitrary byte offset. Read an index split from
        // its start, so that damage there is reported (or counted) under the corrupt policy like
        // anywhere else; scan only where the split is not one of the index's boundaries.
        if (conf.getBoolean(TFRecordConfig.SPLIT_RESYNC, false)
            && (start > 0 || end < this.fileLength)) {
          long[] bounds = conf.getBoolean(TFRecordConfig.USE_INDEX, true)
              ? SplitPlanner.readIndex(fs, path, this.fileLength) : null; // read once
          if (start > 0 && !reader.atValidRecord() && !isBoundary(bounds, start)) {
            reader.sync();
          }
          // The split after this one, which starts at this one's end, will scan for its first
          // record when that end is not an index's boundary: a damaged record there would pass
          // unseen, so this split checks it.
          if (end < this.fileLength && !isBoundary(bounds, end)) {
            reader.checkRecordAfterEnd();
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /** Whether {@code offset} is one of a valid index's record boundaries ({@code bounds}). */
  private static boolean isBoundary(long[] bounds, long offset) {
    return bounds != null && java.util.Arrays.binarySearch(bounds, offset) >= 0;
  }

  /** Reads the next record into {@code value}; false when the split is done. */
  public boolean next(BytesWritable value) throws IOException {
    if (!reader.next()) {
      return false;
    }
    value.set(reader.getData(), reader.getDataOffset(), reader.getLength());
    return true;
  }

  /** The underlying reader (record offsets, skip counts). */
  public TFRecordReader reader() {
    return reader;
  }

  /** Skipped records since the last call (for counters). */
  public long takeSkippedRecords() {
    long delta = reader.getSkippedRecords() - reportedRecords;
    reportedRecords = reader.getSkippedRecords();
    return delta;
  }

  /** Skipped bytes since the last call (for counters). */
  public long takeSkippedBytes() {
    long delta = reader.getSkippedBytes() - reportedBytes;
    reportedBytes = reader.getSkippedBytes();
    return delta;
  }

  /** Fraction of the split consumed, between 0 and 1. */
  public float getProgress() throws IOException {
    if (compressed) {
      return fileLength <= 0 ? 0f
          : Math.min(1f, compressedIn.compressedPosition() / (float) fileLength);
    }
    if (end == start) {
      return 1f;
    }
    return Math.min(1f, (reader.getPosition() - start) / (float) (end - start));
  }

  /** The position in the file, for the mapred API's {@code getPos}. */
  public long getPos() {
    return reader == null ? start : reader.getPosition();
  }

  @Override
  public void close() throws IOException {
    if (compressedIn != null) {
      compressedIn.close();
    }
    if (fileIn != null) {
      fileIn.close();
    }
  }
}
