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
  /**
   * The largest batch, header included: the protocol's largest payload (a batch is sent as one
   * message), {@link FeedStream#MAX_PAYLOAD}.
   */
  static final long MAX_BATCH_BYTES = FeedStream.MAX_PAYLOAD;
  /**
   * The most room for records a builder keeps between batches ({@link #take}), beyond its initial
   * room: a record of hundreds of MiB must not leave that much held by every worker's builder
   * for the rest of the task (a task deals to every worker).
   */
  static final int RETAINED_BYTES = FeedStream.RETAINED_FRAME_BYTES;

  private final int worker;
  private final int job;
  private final int partition;
  private final long maxBatchBytes;
  private final int initialCapacity;
  private byte[] data;
  private int dataBytes;
  private int[] lengths = new int[1024];
  private int records;

  BatchBuilder(int worker, int job, int partition, int initialBytes) {
    this(worker, job, partition, initialBytes, MAX_BATCH_BYTES);
  }

  /** A builder whose batches are at most {@code maxBatchBytes} (tests make it small). */
  BatchBuilder(int worker, int job, int partition, int initialBytes, long maxBatchBytes) {
    if (maxBatchBytes < HEADER_BYTES + LENGTH_BYTES + 1 || maxBatchBytes > MAX_BATCH_BYTES) {
      throw new IllegalArgumentException("a feed batch's limit is between "
          + (HEADER_BYTES + LENGTH_BYTES + 1) + " and " + MAX_BATCH_BYTES + " bytes, not "
          + maxBatchBytes);
    }
    this.worker = worker;
    this.job = job;
    this.partition = partition;
    this.maxBatchBytes = maxBatchBytes;
    this.initialCapacity = (int) Math.min(Math.max(initialBytes, 64), maxBatchBytes);
    this.data = new byte[initialCapacity];
  }

  /** Bytes of room for records this builder holds now (its memory, beside the lengths). */
  int capacity() {
    return data.length;
  }

  /** The longest record a batch can hold: alone in it, after the header and its length. */
  long maxRecordBytes() {
    return maxBatchBytes - HEADER_BYTES - LENGTH_BYTES;
  }

  /** Whether a record of {@code length} bytes fits in this batch beside what it holds. */
  boolean fits(int length) {
    return size() + LENGTH_BYTES + length <= maxBatchBytes;
  }

  /**
   * Adds a record ({@code record[0, length)}).
   *
   * @throws IllegalArgumentException the record is longer than {@link #maxRecordBytes}: no
   *     batch can carry it (it is one message of the cluster's protocol)
   * @throws IllegalStateException the record does not {@link #fits fit} beside the batch's
   *     records ({@link #take} the batch first)
   */
  void add(byte[] record, int length) {
    if (length > maxRecordBytes()) {
      throw tooLong("a record", length, maxRecordBytes());
    }
    if (!fits(length)) {
      throw new IllegalStateException("a " + length + "-byte record does not fit beside the "
          + records + " records of the batch: take the batch first");
    }
    if (length > data.length - dataBytes) {
      long want = Math.min(Math.max((long) data.length * 2, (long) dataBytes + length),
          maxRecordBytes()); // at most a few hundred MiB: fits an array
      data = Arrays.copyOf(data, (int) want);
    }
    System.arraycopy(record, 0, data, dataBytes, length);
    dataBytes += length;
    if (records == lengths.length) {
      lengths = Arrays.copyOf(lengths, records * 2);
    }
    lengths[records++] = length;
  }

  /**
   * The refusal of a record ({@code which}: "record 3 of partition 1") longer than {@code limit}
   * bytes, saying what to do instead.
   */
  static IllegalArgumentException tooLong(String which, long length, long limit) {
    return new IllegalArgumentException(which + " has " + length + " bytes, over the feed's "
        + "limit of " + limit + " bytes per record (a batch is one message of the cluster's "
        + "protocol, at most " + FeedStream.MAX_PAYLOAD + " bytes): split it, or write the data "
        + "as TFRecord files and read them with input_mode='tensorflow'");
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
    if (data.length > Math.max(initialCapacity, RETAINED_BYTES)) {
      data = new byte[initialCapacity]; // an oversized record's room goes with its batch
    }
    dataBytes = 0;
    records = 0;
    return batch;
  }
}
