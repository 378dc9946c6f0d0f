package org.tfrecordio.spark.feed;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import org.tfrecordio.codec.TFRecordWriter;

/**
 * One feed batch being built: a header (see {@link FeedBatches}) and TFRecord-framed records,
 * written with {@link TFRecordWriter}. Reused: {@link #take} returns the batch and starts the
 * next one for the same worker.
 */
final class BatchBuilder {
  /** Bytes of the batch header: six big-endian ints. */
  static final int HEADER_BYTES = 24;
  /** {@code "TFFB"}: the first int of every batch. */
  static final int MAGIC = 0x54464642;

  private final int worker;
  private final int job;
  private final int partition;
  private final ByteArrayOutputStream out;
  private TFRecordWriter writer;
  private int records;

  BatchBuilder(int worker, int job, int partition, int initialBytes) {
    this.worker = worker;
    this.job = job;
    this.partition = partition;
    this.out = new ByteArrayOutputStream(initialBytes);
    start();
  }

  private void start() {
    out.reset();
    out.write(new byte[HEADER_BYTES], 0, HEADER_BYTES);
    writer = new TFRecordWriter(out);
    records = 0;
  }

  void add(byte[] data, int length) {
    try {
      writer.write(data, 0, length);
    } catch (IOException e) { // a ByteArrayOutputStream does not throw
      throw new UncheckedIOException(e);
    }
    records++;
  }

  int records() {
    return records;
  }

  /** Bytes of the batch so far, header included. */
  long size() {
    return HEADER_BYTES + writer.getPosition();
  }

  /** The finished batch, numbered {@code seq}; the builder starts an empty one. */
  byte[] take(int seq) {
    try {
      writer.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    byte[] batch = out.toByteArray();
    ByteBuffer.wrap(batch).putInt(MAGIC).putInt(worker).putInt(job).putInt(partition)
        .putInt(seq).putInt(records);
    start();
    return batch;
  }
}
