package org.tfrecordio.spark.source;

import java.io.IOException;
import java.io.Serializable;
import java.util.NoSuchElementException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.codec.TFRecordReader;
import org.tfrecordio.hadoop.SplitReader;
import org.tfrecordio.spark.RowDecoder;
import org.tfrecordio.spark.UnsafeRowDecoder;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;

/**
 * The reader that {@code buildReaderWithPartitionValues} returns: in an executor, turns one
 * piece of a file into rows of the required columns followed by the partition columns. Pieces
 * are read exactly as the InputFormat reads splits ({@link FileRange}, {@link SplitReader});
 * only the required features are decoded, straight into UnsafeRows where
 * {@link UnsafeRowDecoder} supports the schema (else through {@link RowDecoder} and a
 * projection); when no column is required (count, or partition columns only) and the file's
 * index is valid, the piece's records are counted from the index and never read.
 */
final class TFRecordReadFunction extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
    implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final InternalRow EMPTY_ROW = new GenericInternalRow(0);

  private final Broadcast<SerializableConf> conf;
  private final StructType required;
  private final StructType partition;
  private final String recordType;
  private final ReadMetrics metrics;
  private final boolean direct;

  TFRecordReadFunction(Broadcast<SerializableConf> conf, StructType required,
      StructType partition, String recordType, ReadMetrics metrics) {
    this.conf = conf;
    this.required = required;
    this.partition = partition;
    this.recordType = recordType;
    this.metrics = metrics;
    this.direct = UnsafeRowDecoder.supports(required, partition, recordType);
  }

  @Override
  public Iterator<InternalRow> apply(PartitionedFile file) {
    Iterator<InternalRow> rows = read(file);
    if (direct) {
      return rows;
    }
    StructType full = new StructType();
    for (StructField f : required.fields()) {
      full = full.add(f);
    }
    for (StructField f : partition.fields()) {
      full = full.add(f);
    }
    UnsafeProjection project = UnsafeProjection.create(full);
    JoinedRow joined = new JoinedRow();
    InternalRow values = file.partitionValues();
    return rows.map(new AbstractFunction1<InternalRow, InternalRow>() {
      @Override
      public InternalRow apply(InternalRow row) {
        return project.apply(joined.apply(row, values));
      }
    });
  }

  private Iterator<InternalRow> read(PartitionedFile file) {
    Configuration c = conf.value().get();
    Path path = file.toPath();
    InternalRow values = file.partitionValues();
    try {
      boolean count = required.fields().length == 0;
      // Spark's pieces carry the file's length; a piece made elsewhere may leave it 0.
      long fileLength = file.fileSize() > 0 ? file.fileSize()
          : path.getFileSystem(c).getFileStatus(path).getLen();
      FileRange range = FileRange.of(c, path, file.start(), file.length(), fileLength, count);
      UnsafeRowDecoder unsafe = direct ? UnsafeRowDecoder.plan(required, partition, recordType)
          : null;
      InternalRow empty = direct ? unsafe.partitionOnly(values) : EMPTY_ROW;
      if (range.isEmpty()) {
        return new Counted(0, empty);
      }
      if (count && range.records >= 0) {
        metrics.recordsCounted.add(range.records);
        return new Counted(range.records, empty);
      }
      SplitReader reader = new SplitReader(c, path, range.start, range.length, fileLength);
      TaskContext task = TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener((TaskCompletionListener) ctx -> closeQuietly(reader));
      }
      return new Decoded(reader, path, values, unsafe);
    } catch (IOException e) {
      throw unchecked(e);
    }
  }

  /**
   * Throws *e* itself, unwrapped, where Java allows only unchecked exceptions: Spark's file scan
   * tells a missing file (skipped under {@code spark.sql.files.ignoreMissingFiles}) by its class,
   * FileNotFoundException, as Scala code throws it.
   */
  private static RuntimeException unchecked(IOException e) {
    return TFRecordReadFunction.<RuntimeException>throwAs(e);
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E throwAs(Throwable e) throws E {
    throw (E) e;
  }

  private static void closeQuietly(SplitReader reader) {
    try {
      reader.close();
    } catch (IOException e) {
      // the task is over; nothing to report to
    }
  }

  /** {@code n} copies of one row (no data columns). */
  private static final class Counted extends AbstractIterator<InternalRow> {
    private final InternalRow row;
    private long left;

    Counted(long n, InternalRow row) {
      this.left = n;
      this.row = row;
    }

    @Override
    public boolean hasNext() {
      return left > 0;
    }

    @Override
    public InternalRow next() {
      if (left <= 0) {
        throw new NoSuchElementException();
      }
      left--;
      return row;
    }
  }

  /** The records of a range, decoded. */
  private final class Decoded extends AbstractIterator<InternalRow> {
    private final SplitReader reader;
    private final RowDecoder generic;
    private final UnsafeRowDecoder unsafe;
    private final Path path;
    private final InternalRow partitionValues;
    private boolean ready;
    private boolean done;

    /** @param unsafe the decoder when the schema is {@code direct}, else null */
    Decoded(SplitReader reader, Path path, InternalRow partitionValues, UnsafeRowDecoder unsafe) {
      this.reader = reader;
      this.generic = unsafe == null ? RowDecoder.plan(required, recordType) : null;
      this.unsafe = unsafe;
      this.path = path;
      this.partitionValues = partitionValues;
    }

    @Override
    public boolean hasNext() {
      if (!ready && !done) {
        try {
          ready = reader.reader().next();
        } catch (IOException e) {
          throw unchecked(e);
        }
        if (!ready) {
          done = true;
          metrics.featuresDecoded.add(direct ? unsafe.decodedFeatures()
              : generic.decodedFeatures());
          closeQuietly(reader);
        }
      }
      return ready;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      ready = false;
      metrics.recordsRead.add(1);
      TFRecordReader r = reader.reader();
      try {
        return direct
            ? unsafe.decode(r.getData(), r.getDataOffset(), r.getLength(), partitionValues)
            : generic.decode(r.getData(), r.getDataOffset(), r.getLength());
      } catch (SchemaException e) {
        throw new SchemaException(e.getMessage() + " (the record at byte offset "
            + r.getRecordOffset() + " of " + path + ")", e);
      }
    }
  }
}
