package org.tfrecordio.spark.feed;

import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.tfrecordio.spark.InternalRowEncoder;

/**
 * Turns what is fed to a TensorFlow cluster (a DataFrame, or an RDD of records) into an RDD of
 * large batches of records, each batch meant for one worker: what
 * {@code tfrecord_io.cluster.feed} sends to the workers' feed servers.
 *
 * <p>Each batch is a {@link BatchBuilder#HEADER_BYTES}-byte header (big-endian ints: magic
 * {@code "TFFB"}, worker, job, partition, sequence number within the partition, records
 * {@code n}), then a table of the {@code n} records' lengths (big-endian ints), then the
 * {@code n} records back to back. No per-record framing or CRC: the feed channel signs every
 * batch whole, and the receiver locates the records from the lengths table in one step
 * ({@code tfrecord_io.cluster.feed.batch_format}). The record with index {@code i} in partition
 * {@code p} has the global index {@code g = offsets[p] + i}; it goes to worker
 * {@code g % workers} when {@code g < limit} and is dropped otherwise. With the global start
 * of each partition as {@code offsets} and {@code limit = workers * (N / workers)} every worker
 * gets exactly {@code N / workers} records (the synchronous rule); with {@code offsets[p] = p}
 * and no limit, records are dealt round robin and none is dropped. Every partition deals to
 * every worker, so no worker waits for partitions that feed only another.
 *
 * <p>Rows are encoded in the executor's JVM from Spark's internal rows with
 * {@link InternalRowEncoder} (no conversion to external {@code Row}s); no row crosses to Python.
 */
public final class FeedBatches {
  private FeedBatches() {}

  /** The name of the one column of {@link #recordsFrame}. */
  public static final String RECORD_COLUMN = "record";

  /**
   * An RDD of records as a DataFrame of one binary column {@value #RECORD_COLUMN}, partition for
   * partition, fed as {@code "ByteArray"}: so that an RDD is fed by the same path as a
   * DataFrame ({@link FeedSource}).
   */
  public static Dataset<Row> recordsFrame(SparkSession spark, JavaRDD<byte[]> records) {
    StructType schema = new StructType().add(RECORD_COLUMN, DataTypes.BinaryType, false);
    return spark.createDataFrame(records.map(record -> RowFactory.create((Object) record)),
        schema);
  }

  /** Records of each partition of {@code records}, in partition order. */
  public static long[] countRecords(JavaRDD<?> records) {
    List<Long> counts = records.mapPartitions(new Count<>()).collect();
    long[] out = new long[counts.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = counts.get(i);
    }
    return out;
  }

  /** Rows of each partition of {@code df} (as {@link #fromRows} will see them). */
  public static long[] countRows(Dataset<Row> df) {
    return countRecords(internalRows(df));
  }

  /** The DataFrame's rows in Spark's internal form, as its physical plan makes them. */
  static JavaRDD<InternalRow> internalRows(Dataset<Row> df) {
    return df.queryExecution().toRdd().toJavaRDD();
  }

  /**
   * The batches of {@code df}'s rows, encoded as {@code recordType} ("Example",
   * "SequenceExample" or "ByteArray") by {@link InternalRowEncoder}.
   *
   * @param offsets comma-separated, one per partition: the global index of its first row;
   *     empty: {@code offsets[p] = p} for every partition (records dealt round robin from
   *     every partition, with no limit none is dropped)
   * @param counts comma-separated rows per partition as counted, checked while batching (a
   *     partition that has a different number fails the task: the data changed since it was
   *     counted); empty: not checked
   * @param limit rows with a global index at or past it are dropped (Long.MAX_VALUE: none)
   * @throws org.tfrecordio.example.SchemaException a column has no Example form
   * @throws IllegalStateException {@code df} has another number of partitions than {@code
   *     counts} or {@code offsets} were made for (the data changed since it was counted)
   */
  public static JavaRDD<byte[]> fromRows(Dataset<Row> df, String recordType, String offsets,
      String counts, long limit, int workers, int job, int batchBytes) {
    InternalRowEncoder encoder = InternalRowEncoder.plan(df.schema(), recordType);
    Deal deal = new Deal(parse(offsets), parse(counts), limit, workers, job, batchBytes);
    JavaRDD<InternalRow> rows = internalRows(df);
    deal.checkPartitions(rows.getNumPartitions());
    return rows.mapPartitionsWithIndex(new EncodeRows(encoder, deal), false);
  }

  static long[] parse(String values) {
    if (values == null || values.isEmpty()) {
      return null;
    }
    String[] parts = values.split(",");
    long[] out = new long[parts.length];
    for (int i = 0; i < parts.length; i++) {
      out[i] = Long.parseLong(parts[i].trim());
    }
    return out;
  }

  /** Counts the elements of a partition. */
  static final class Count<T> implements FlatMapFunction<Iterator<T>, Long> {
    private static final long serialVersionUID = 1L;

    @Override
    public Iterator<Long> call(Iterator<T> it) {
      long n = 0;
      while (it.hasNext()) {
        it.next();
        n++;
      }
      return Collections.singletonList(n).iterator();
    }
  }

  /** How records are dealt to workers and cut into batches (the plan of one feeding job). */
  static final class Deal implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final long[] offsets;
    final long[] counts;
    final long limit;
    final int workers;
    final int job;
    final int batchBytes;
    /** The largest batch: the protocol's largest payload ({@link BatchBuilder}). */
    final long maxBatchBytes;

    Deal(long[] offsets, long[] counts, long limit, int workers, int job, int batchBytes) {
      this(offsets, counts, limit, workers, job, batchBytes, BatchBuilder.MAX_BATCH_BYTES);
    }

    /** A plan whose batches are at most {@code maxBatchBytes} (tests make it small). */
    Deal(long[] offsets, long[] counts, long limit, int workers, int job, int batchBytes,
        long maxBatchBytes) {
      if (workers < 1 || batchBytes < 1) {
        throw new IllegalArgumentException("a feed plan needs workers >= 1 and "
            + "batchBytes >= 1");
      }
      this.offsets = offsets;
      this.counts = counts;
      this.limit = limit;
      this.workers = workers;
      this.job = job;
      this.batchBytes = batchBytes;
      this.maxBatchBytes = maxBatchBytes;
    }

    /**
     * Checks that the data to deal has no fewer partitions than this plan counted rows in.
     * Each task checks its own partition's count (and that its partition was planned), but a
     * partition that no longer exists runs no task: its counted records would silently be
     * missing from the workers' shares (unequal in sync mode), so that fails here, before any
     * task runs. Counted partitions that were empty may be gone: nothing is missing.
     *
     * @throws IllegalStateException a partition that is gone held records when counted
     */
    void checkPartitions(int partitions) {
      if (counts == null) {
        return;
      }
      long missing = 0;
      for (int p = partitions; p < counts.length; p++) {
        missing += counts[p];
      }
      if (missing > 0) {
        throw new IllegalStateException("the data has " + partitions + " partitions now but had "
            + counts.length + " when it was counted for the feed (" + missing + " records "
            + "counted in the partitions now gone): the data changed between the count and the "
            + "feed; cache it (df.cache() / rdd.cache()) before feeding");
      }
    }
  }

  /** Encodes rows, then deals them. */
  static final class EncodeRows
      implements org.apache.spark.api.java.function.Function2<Integer, Iterator<InternalRow>,
          Iterator<byte[]>> {
    private static final long serialVersionUID = 1L;
    private final InternalRowEncoder encoder;
    private final Deal deal;

    EncodeRows(InternalRowEncoder encoder, Deal deal) {
      this.encoder = encoder;
      this.deal = deal;
    }

    @Override
    public Iterator<byte[]> call(Integer partition, Iterator<InternalRow> rows) {
      return new Dealer<InternalRow>(deal, partition, rows) {
        @Override
        int encode(InternalRow row) {
          return encoder.encode(row);
        }

        @Override
        byte[] record(InternalRow row) {
          return encoder.buffer();
        }
      };
    }
  }

  /** Deals records as they are (the dealing's unit tests use it). */
  static final class PassRecords
      implements org.apache.spark.api.java.function.Function2<Integer, Iterator<byte[]>,
          Iterator<byte[]>> {
    private static final long serialVersionUID = 1L;
    private final Deal deal;

    PassRecords(Deal deal) {
      this.deal = deal;
    }

    @Override
    public Iterator<byte[]> call(Integer partition, Iterator<byte[]> records) {
      return new Dealer<byte[]>(deal, partition, records) {
        @Override
        int encode(byte[] record) {
          return record.length;
        }

        @Override
        byte[] record(byte[] record) {
          return record;
        }
      };
    }
  }

  /**
   * Pulls elements of one partition, deals them to per-worker batches, yields full batches (in
   * the order they were made). A batch is never over the protocol's largest payload: a record
   * that does not fit beside a batch's records closes that batch first, and a record too long
   * for any batch fails the task ({@link BatchBuilder#tooLong}).
   */
  abstract static class Dealer<T> implements Iterator<byte[]> {
    private final Deal deal;
    private final int partition;
    private final Iterator<T> input;
    private final BatchBuilder[] batches;
    private final ArrayDeque<byte[]> ready = new ArrayDeque<>();
    private final long first;
    private long index;
    private int seq;
    private boolean finished;

    Dealer(Deal deal, int partition, Iterator<T> input) {
      if (deal.offsets != null && partition >= deal.offsets.length) {
        throw new IllegalStateException("partition " + partition + " has no offset in the feed "
            + "plan (" + deal.offsets.length + " partitions planned): the data changed since it "
            + "was planned; cache it");
      }
      this.deal = deal;
      this.partition = partition;
      this.input = input;
      this.batches = new BatchBuilder[deal.workers];
      this.first = deal.offsets == null ? partition : deal.offsets[partition];
    }

    /** Encodes {@code element}: its record is then {@code record(element)[0, length)}. */
    abstract int encode(T element);

    /** The bytes of the record {@link #encode} made of {@code element}. */
    abstract byte[] record(T element);

    @Override
    public boolean hasNext() {
      fill();
      return !ready.isEmpty();
    }

    @Override
    public byte[] next() {
      fill();
      if (ready.isEmpty()) {
        throw new java.util.NoSuchElementException();
      }
      return ready.poll();
    }

    private void fill() {
      while (ready.isEmpty() && !finished) {
        if (!input.hasNext()) {
          finish();
          return;
        }
        T element = input.next();
        long global = first + index;
        index++;
        if (global >= deal.limit) {
          continue;
        }
        int worker = (int) (global % deal.workers);
        BatchBuilder b = batches[worker];
        if (b == null) {
          b = new BatchBuilder(worker, deal.job, partition, Math.min(deal.batchBytes, 1 << 20),
              deal.maxBatchBytes);
          batches[worker] = b;
        }
        int length = encode(element);
        if (length > b.maxRecordBytes()) {
          throw BatchBuilder.tooLong("record " + (index - 1) + " of partition " + partition,
              length, b.maxRecordBytes());
        }
        if (!b.fits(length)) {
          ready.add(b.take(seq++));
        }
        b.add(record(element), length);
        if (b.size() >= deal.batchBytes) {
          ready.add(b.take(seq++));
        }
      }
    }

    private void finish() {
      finished = true;
      if (deal.counts != null && index != deal.counts[partition]) {
        throw new IllegalStateException("partition " + partition + " holds " + index
            + " records now but held " + deal.counts[partition] + " when it was counted: the "
            + "data changed between the count and the feed; cache it (df.cache() / "
            + "rdd.cache()) before feeding");
      }
      for (int w = 0; w < batches.length; w++) { // worker 0 first
        if (batches[w] != null && batches[w].records() > 0) {
          ready.add(batches[w].take(seq + w));
        }
      }
      seq += batches.length;
    }
  }
}
