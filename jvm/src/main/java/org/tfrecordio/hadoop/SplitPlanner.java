package org.tfrecordio.hadoop;

import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tfrecordio.codec.TFRecordIndex;
import org.tfrecordio.codec.TFRecordReader;

/**
 * Cuts TFRecord files into input splits that are never wrong: on record boundaries taken from
 * the sidecar index; at byte offsets resolved by scanning only when the user opted in; otherwise
 * one split per file. Shared by both Hadoop APIs.
 */
public final class SplitPlanner {
  /**
   * The ending of a file that {@code hadoop fs -put} or {@code -cp} is still writing (it is
   * renamed to its name once whole): never input, as Spark's file index has it.
   */
  public static final String COPYING_SUFFIX = "._COPYING_";

  private static final Logger LOG = LoggerFactory.getLogger(SplitPlanner.class);
  private static final double SPLIT_SLOP = 1.1;

  /** A planned split: a byte range of a file and the hosts that store its start. */
  public static final class Range {
    public final long start;
    public final long length;
    public final String[] hosts;

    Range(long start, long length, String[] hosts) {
      this.start = start;
      this.length = length;
      this.hosts = hosts;
    }
  }

  private SplitPlanner() {}

  /**
   * The files of an input listing to plan splits of, as Hadoop's FileInputFormat takes them: a
   * subdirectory (listed when input directories are not read recursively) is left out under
   * {@code mapreduce.input.fileinputformat.input.dir.nonrecursive.ignore.subdirs}, and
   * refused otherwise. The files come sorted by path, as tfrecord-io's other readers take them:
   * a local directory lists its files in no particular order, and the splits (an RDD's
   * partitions) would follow it.
   *
   * @throws IOException a subdirectory that is neither left out nor read recursively
   */
  public static List<FileStatus> inputFiles(Configuration conf, List<FileStatus> listed)
      throws IOException {
    boolean ignoreSubdirs = !conf.getBoolean(FileInputFormat.INPUT_DIR_RECURSIVE, false)
        && conf.getBoolean(FileInputFormat.INPUT_DIR_NONRECURSIVE_IGNORE_SUBDIRS, false);
    List<FileStatus> files = new ArrayList<>(listed.size());
    for (FileStatus status : listed) {
      if (status.getPath().getName().endsWith(COPYING_SUFFIX)) {
        continue; // half copied: its whole self comes under its own name
      } else if (!status.isDirectory()) {
        files.add(status);
      } else if (!ignoreSubdirs) {
        throw new IOException("Not a file: " + status.getPath() + " (an input directory's "
            + "subdirectory: set " + FileInputFormat.INPUT_DIR_RECURSIVE + "=true to read it, "
            + "or " + FileInputFormat.INPUT_DIR_NONRECURSIVE_IGNORE_SUBDIRS
            + "=true to leave it out)");
      }
    }
    files.sort(Comparator.comparing(status -> status.getPath().toString()));
    return files;
  }

  /** Plans the splits of one file for a target split size. */
  public static List<Range> plan(Configuration conf, FileStatus file, long splitSize)
      throws IOException {
    Path path = file.getPath();
    long length = file.getLen();
    FileSystem fs = path.getFileSystem(conf);
    BlockLocation[] blocks = file instanceof LocatedFileStatus
        ? ((LocatedFileStatus) file).getBlockLocations()
        : fs.getFileBlockLocations(file, 0, length);
    List<Range> ranges = new ArrayList<>();
    if (length == 0 || Compression.forInput(conf, path) != null
        || (double) length / splitSize <= SPLIT_SLOP) {
      ranges.add(new Range(0, length, hosts(blocks, 0)));
      return ranges;
    }
    long[] cuts = byteCuts(length, splitSize);
    long[] bounds = conf.getBoolean(TFRecordConfig.USE_INDEX, true) ? readIndex(fs, path, length)
        : null;
    if (bounds != null) {
      cuts = snap(cuts, bounds);
    } else if (!conf.getBoolean(TFRecordConfig.SPLIT_RESYNC, false)) {
      LOG.info("{} has no valid index: reading it as one split (write an index with "
          + "`tfrecord-io index`, or set {}=true)", path, TFRecordConfig.SPLIT_RESYNC);
      cuts = new long[0];
    }
    long start = 0;
    for (long cut : cuts) {
      ranges.add(new Range(start, cut - start, hosts(blocks, start)));
      start = cut;
    }
    ranges.add(new Range(start, length - start, hosts(blocks, start)));
    return ranges;
  }

  /** Cut points as FileInputFormat places them, without 0 and the file's end. */
  private static long[] byteCuts(long length, long splitSize) {
    List<Long> cuts = new ArrayList<>();
    long remaining = length;
    while ((double) remaining / splitSize > SPLIT_SLOP) {
      remaining -= splitSize;
      cuts.add(length - remaining);
    }
    return cuts.stream().mapToLong(Long::longValue).toArray();
  }

  /** Moves each cut to the first record boundary at or after it, dropping duplicates. */
  static long[] snap(long[] cuts, long[] bounds) {
    long end = bounds[bounds.length - 1];
    long[] out = new long[cuts.length];
    int n = 0;
    long last = 0;
    for (long cut : cuts) {
      int i = Arrays.binarySearch(bounds, cut);
      long b = bounds[i >= 0 ? i : -i - 1];
      if (b > last && b < end) {
        out[n++] = b;
        last = b;
      }
    }
    return Arrays.copyOf(out, n);
  }

  /** Reads and validates the sidecar index of {@code path}; null if absent or invalid. */
  public static long[] readIndex(FileSystem fs, Path path, long length) throws IOException {
    Path index = new Path(path.getParent(), TFRecordIndex.indexName(path.getName()));
    long[] bounds;
    try (InputStream in = fs.open(index)) {
      bounds = TFRecordIndex.read(in, length);
    } catch (FileNotFoundException e) {
      return null;
    }
    if (bounds == null) {
      LOG.warn("Ignoring index {}: it is malformed or does not match {} ({} bytes)",
          index, path, length);
    }
    return bounds;
  }

  /**
   * The number of records of the whole file {@code path} from its index: from the index's last
   * bytes ({@link TFRecordIndex#countFromTail}), or, for an index without a trailer, from its
   * lines ({@link TFRecordIndex#count}); -1 if it has no index or the index does not match. The
   * data file is read too, 12 bytes of it: the index matches only if the file holds a record
   * where the index says its last one starts ({@link #holdsRecord}; for an index without a
   * trailer, at byte 0). So a count never comes from the index of a file that is gone
   * (FileNotFoundException) or was rewritten to the same length.
   */
  public static long countIndexed(FileSystem fs, Path path, long length) throws IOException {
    Path index = new Path(path.getParent(), TFRecordIndex.indexName(path.getName()));
    long records;
    long[] last;
    try (FSDataInputStream in = fs.open(index)) {
      long indexLength = fs.getFileStatus(index).getLen();
      byte[] tail = new byte[(int) Math.min(indexLength, TFRecordIndex.TAIL_BYTES)];
      in.readFully(indexLength - tail.length, tail);
      boolean whole = tail.length == indexLength;
      records = TFRecordIndex.countFromTail(tail, whole, length);
      if (records == TFRecordIndex.NO_TRAILER) {
        in.seek(0); // an index written before trailers: count its lines
        records = TFRecordIndex.count(in, length);
        last = new long[] {0, -1};
      } else {
        last = TFRecordIndex.lastEntryFromTail(tail, whole, length);
      }
    } catch (FileNotFoundException e) {
      return -1;
    }
    if (records > 0 && !holdsRecord(fs, path, last[0], last[1])) {
      LOG.warn("Ignoring index {}: {} holds no record of {} bytes at byte {}", index, path,
          last[1], last[0]);
      return -1;
    }
    return records;
  }

  /**
   * Whether {@code path} holds a record header at byte {@code offset} that announces a record
   * of {@code framedLength} bytes, framing included (any length, if negative): what an index
   * says, checked with one read of 12 bytes.
   *
   * @throws FileNotFoundException the file is gone
   */
  public static boolean holdsRecord(FileSystem fs, Path path, long offset, long framedLength)
      throws IOException {
    byte[] header = new byte[12];
    try (FSDataInputStream in = fs.open(path)) {
      in.readFully(offset, header);
    } catch (EOFException e) {
      return false;
    }
    return TFRecordReader.isHeader(header, 0, framedLength);
  }

  private static String[] hosts(BlockLocation[] blocks, long offset) throws IOException {
    if (blocks != null) {
      for (BlockLocation b : blocks) {
        if (offset >= b.getOffset() && offset < b.getOffset() + b.getLength()) {
          return b.getHosts();
        }
      }
    }
    return new String[0];
  }
}
