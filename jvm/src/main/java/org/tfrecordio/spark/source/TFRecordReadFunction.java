package org.tfrecordio.spark.source;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.NoSuchElementException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.spark.TaskContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.hadoop.SplitReader;
import org.tfrecordio.spark.RowDecoder;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;

/**
 * The reader that {@code buildReader} returns: in an executor, turns one piece of a file into
 * rows of the required schema. Pieces are read exactly as the InputFormat reads splits
 * ({@link FileRange}, {@link SplitReader}); only the required features are decoded; when no
 * column is required (count, or partition columns only) and the file's index is valid, the
 * piece's records are counted from the index and never read.
 */
final class TFRecordReadFunction extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
    implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final InternalRow EMPTY_ROW = new GenericInternalRow(0);

  private final Broadcast<SerializableConf> conf;
  private final StructType required;
  private final String recordType;
  private final ReadMetrics metrics;

  TFRecordReadFunction(Broadcast<SerializableConf> conf, StructType required, String recordType,
      ReadMetrics metrics) {
    this.conf = conf;
    this.required = required;
    this.recordType = recordType;
    this.metrics = metrics;
  }

  @Override
  public Iterator<InternalRow> apply(PartitionedFile file) {
    Configuration c = conf.value().get();
    Path path = file.toPath();
    try {
      boolean count = required.fields().length == 0;
      FileRange range = FileRange.of(c, path, file.start(), file.length(), count);
      if (range.isEmpty()) {
        return new Counted(0);
      }
      if (count && range.records >= 0) {
        metrics.recordsCounted.add(range.records);
        return new Counted(range.records);
      }
      SplitReader reader = new SplitReader(c, path, range.start, range.length);
      TaskContext task = TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener((TaskCompletionListener) ctx -> closeQuietly(reader));
      }
      return new Decoded(reader, RowDecoder.plan(required, recordType), path);
    } catch (IOException e) {
      throw new UncheckedIOException(e.getMessage(), e);
    }
  }

  private static void closeQuietly(SplitReader reader) {
    try {
      reader.close();
    } catch (IOException e) {
      // the task is over; nothing to report to
    }
  }

  /** {@code n} rows of no columns. */
  private static final class Counted extends AbstractIterator<InternalRow> {
    private long left;

    Counted(long n) {
      this.left = n;
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
      return EMPTY_ROW;
    }
  }

  /** The records of a range, decoded. */
  private final class Decoded extends AbstractIterator<InternalRow> {
    private final SplitReader reader;
    private final RowDecoder decoder;
    private final Path path;
    private final BytesWritable record = new BytesWritable();
    private boolean ready;
    private boolean done;

    Decoded(SplitReader reader, RowDecoder decoder, Path path) {
      this.reader = reader;
      this.decoder = decoder;
      this.path = path;
    }

    @Override
    public boolean hasNext() {
      if (!ready && !done) {
        try {
          ready = reader.next(record);
        } catch (IOException e) {
          throw new UncheckedIOException(e.getMessage(), e);
        }
        if (!ready) {
          done = true;
          metrics.featuresDecoded.add(decoder.decodedFeatures());
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
      try {
        return decoder.decode(record.getBytes(), 0, record.getLength());
      } catch (SchemaException e) {
        throw new SchemaException(e.getMessage() + " (the record at byte offset "
            + reader.reader().getRecordOffset() + " of " + path + ")", e);
      }
    }
  }
}
