package org.tfrecordio.spark.feed;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * One feed batch being built (the layout is in {@link FeedBatches}): the header, a table of the
 * records' lengths, then the records back to back. Reused: {@link #take} returns the batch and
 * starts the next one for the same worker.
 */
final class BatchBuilder {
  /** Bytes of the batch header: six big-endian ints. */
  static final int HEADER_BYTES = 24;
  /** {@code "TFFB"}: the first int of every batch. */
  static final int MAGIC = 0x54464642;
  /** Bytes of one entry of the lengths table (a big-endian int). */
  static final int LENGTH_BYTES = 4;

  private final int worker;
  private final int job;
  private final int partition;
  private byte[] data;
  private int dataBytes;
  private int[] lengths = new int[1024];
  private int records;

  BatchBuilder(int worker, int job, int partition, int initialBytes) {
    this.worker = worker;
    this.job = job;
    this.partition = partition;
    this.data = new byte[Math.max(initialBytes, 64)];
  }

  void add(byte[] record, int length) {
    if (length > data.length - dataBytes) {
      long want = Math.max((long) data.length * 2, (long) dataBytes + length);
      if (want > Integer.MAX_VALUE - 64) {
        want = (long) dataBytes + length;
        if (want > Integer.MAX_VALUE - 64) {
          throw new IllegalStateException("a feed batch over 2 GiB: lower the batch size");
        }
      }
      data = Arrays.copyOf(data, (int) want);
    }
    System.arraycopy(record, 0, data, dataBytes, length);
    dataBytes += length;
    if (records == lengths.length) {
      lengths = Arrays.copyOf(lengths, records * 2);
    }
    lengths[records++] = length;
  }

  int records() {
    return records;
  }

  /** Bytes of the batch so far, header and lengths table included. */
  long size() {
    return HEADER_BYTES + (long) LENGTH_BYTES * records + dataBytes;
  }

  /** The finished batch, numbered {@code seq}; the builder starts an empty one. */
  byte[] take(int seq) {
    byte[] batch = new byte[Math.toIntExact(size())];
    ByteBuffer out = ByteBuffer.wrap(batch);
    out.putInt(MAGIC).putInt(worker).putInt(job).putInt(partition).putInt(seq).putInt(records);
    out.asIntBuffer().put(lengths, 0, records);
    System.arraycopy(data, 0, batch, HEADER_BYTES + LENGTH_BYTES * records, dataBytes);
    dataBytes = 0;
    records = 0;
    return batch;
  }
}
