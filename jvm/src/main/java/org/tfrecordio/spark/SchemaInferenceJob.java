package org.tfrecordio.spark;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.rdd.InputFileBlockHolder;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * The Spark job that infers a schema from TFRecord files of Examples or SequenceExamples: each
 * chosen input split is summarized in an executor ({@link SchemaInference#summarize}), the
 * summaries are merged on the driver and turned into a schema by the documented rules.
 */
public final class SchemaInferenceJob {
  private SchemaInferenceJob() {}

  /**
   * Infers the schema of the records of {@code pairs} (one RDD partition per input split).
   *
   * @param binaryFeatures bytes features to type binary rather than string (may be null)
   * @param sampleFraction the fraction of the splits to read, in (0, 1]: evenly spread, at
   *     least one; below 1, every field is nullable
   * @throws org.tfrecordio.example.SchemaException conflicting kinds, a record that does not
   *     parse
   */
  public static StructType infer(JavaPairRDD<BytesWritable, NullWritable> pairs,
      String recordType, List<String> binaryFeatures, double sampleFraction) {
    if (!RowEncoder.EXAMPLE.equals(recordType)
        && !RowEncoder.SEQUENCE_EXAMPLE.equals(recordType)) {
      throw new IllegalArgumentException("schema inference is for Example and SequenceExample "
          + "records, not " + recordType);
    }
    if (!(sampleFraction > 0 && sampleFraction <= 1)) {
      throw new IllegalArgumentException("sample must be in (0, 1], not " + sampleFraction);
    }
    Set<String> binary = new HashSet<>(binaryFeatures == null ? List.of() : binaryFeatures);
    int n = pairs.getNumPartitions();
    boolean[] chosen = new boolean[n];
    boolean sampled = sampleFraction < 1 && n > 1;
    if (sampled) {
      int m = (int) Math.max(1, Math.ceil(n * sampleFraction));
      for (int k = 0; k < m; k++) {
        chosen[(int) ((long) k * n / m)] = true;
      }
    } else {
      Arrays.fill(chosen, true);
    }
    List<SchemaInference.Summary> parts = pairs.mapPartitionsWithIndex(
        new Summarize(RowEncoder.SEQUENCE_EXAMPLE.equals(recordType), binary, chosen), false)
        .collect();
    SchemaInference.Summary total = new SchemaInference.Summary();
    for (SchemaInference.Summary s : parts) {
      total.merge(s);
    }
    return SchemaInference.schema(total, binary, sampled);
  }

  /** Summarizes the records of the chosen partitions. */
  static final class Summarize implements Function2<Integer,
      Iterator<Tuple2<BytesWritable, NullWritable>>, Iterator<SchemaInference.Summary>> {
    private static final long serialVersionUID = 1L;
    private final boolean sequence;
    private final HashSet<String> binary;
    private final boolean[] chosen;

    Summarize(boolean sequence, Set<String> binary, boolean[] chosen) {
      this.sequence = sequence;
      this.binary = new HashSet<>(binary);
      this.chosen = chosen;
    }

    @Override
    public Iterator<SchemaInference.Summary> call(Integer index,
        Iterator<Tuple2<BytesWritable, NullWritable>> pairs) {
      if (!chosen[index]) {
        return Collections.emptyIterator(); // not read: only the file is opened
      }
      Iterator<BytesWritable> records = new Iterator<BytesWritable>() {
        @Override
        public boolean hasNext() {
          return pairs.hasNext();
        }

        @Override
        public BytesWritable next() {
          return pairs.next()._1();
        }
      };
      return Collections.singletonList(
          SchemaInference.summarize(records, sequence, binary, inputSplit())).iterator();
    }

    /**
     * Where the task's records come from, for errors: the file and start of the input split
     * that Spark's Hadoop RDDs record for the task (what {@code input_file_name()} reads), or ""
     * when the records do not come from a file split.
     */
    private static String inputSplit() {
      String file = InputFileBlockHolder.getInputFilePath().toString();
      return file.isEmpty() ? "" : " of the input split of " + file + " from byte "
          + InputFileBlockHolder.getStartOffset() + " (counting from 0)";
    }
  }
}
