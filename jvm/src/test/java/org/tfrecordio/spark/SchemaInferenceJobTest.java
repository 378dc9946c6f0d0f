package org.tfrecordio.spark;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.spark.rdd.InputFileBlockHolder;
import org.junit.After;
import org.junit.Test;
import org.tfrecordio.example.SchemaException;
import scala.Tuple2;

/** The per-split summaries of schema inference, as an executor computes them. */
public class SchemaInferenceJobTest {
  private static final byte[] EMPTY_EXAMPLE = new byte[0];
  private static final byte[] NOT_AN_EXAMPLE = {0x0a, 0x05, 'a', 'b'};

  @After
  public void tearDown() {
    InputFileBlockHolder.unset();
  }

  private static Iterator<Tuple2<BytesWritable, NullWritable>> pairs(byte[]... records) {
    return Arrays.stream(records)
        .map(r -> new Tuple2<>(new BytesWritable(r), NullWritable.get())).iterator();
  }

  private static SchemaException summarizeFailure(byte[]... records) {
    SchemaInferenceJob.Summarize summarize =
        new SchemaInferenceJob.Summarize(false, Set.of(), new boolean[] {true});
    return assertThrows(SchemaException.class, () -> summarize.call(0, pairs(records)));
  }

  @Test
  public void aRecordThatDoesNotParseIsNamedByItsFileAndSplit() {
    // What Spark's Hadoop RDDs set while a task reads an input split of a file.
    InputFileBlockHolder.set("file:/data/part-00007.tfrecord", 4096, 1024);
    SchemaException e = summarizeFailure(EMPTY_EXAMPLE, EMPTY_EXAMPLE, NOT_AN_EXAMPLE);
    assertTrue(e.getMessage(), e.getMessage().startsWith("record 2 of the input split of "
        + "file:/data/part-00007.tfrecord from byte 4096 (counting from 0) is not a valid "
        + "Example: "));
  }

  /**
   * A record whose map entries parse but one of whose features does not (a packed float list
   * of 5 bytes) is named like any other record that does not parse: by its number, file and
   * split, not only by what is wrong with it.
   */
  @Test
  public void aRecordWithAFeatureThatDoesNotParseIsNamedByItsFileAndSplit() {
    byte[] badFeature = {0x0a, 0x10, // features
        0x0a, 0x0e, // feature map entry
        0x0a, 0x01, 'f', // key "f"
        0x12, 0x09, // value: Feature
        0x12, 0x07, // float_list
        0x0a, 0x05, 0, 0, (byte) 0x80, 0x3f, 0}; // 5 bytes of packed floats
    InputFileBlockHolder.set("file:/data/part-00003.tfrecord", 512, 1024);
    SchemaException e = summarizeFailure(EMPTY_EXAMPLE, badFeature);
    assertTrue(e.getMessage(), e.getMessage().startsWith("record 1 of the input split of "
        + "file:/data/part-00003.tfrecord from byte 512 (counting from 0) is not a valid "
        + "Example: "));
    assertTrue(e.getMessage(), e.getMessage().contains("packed floats of 5 bytes"));
  }

  @Test
  public void aRecordThatDoesNotParseOutsideAFileSplitIsNamedByItsNumber() {
    SchemaException e = summarizeFailure(EMPTY_EXAMPLE, NOT_AN_EXAMPLE);
    assertTrue(e.getMessage(), e.getMessage().startsWith("record 1 is not a valid Example: "));
  }

  @Test
  public void recordsOfAnEmptySplitSummarizeToNothing() throws Exception {
    List<SchemaInference.Summary> out = new java.util.ArrayList<>();
    new SchemaInferenceJob.Summarize(false, Set.of(), new boolean[] {true})
        .call(0, pairs()).forEachRemaining(out::add);
    assertEquals(1, out.size());
    assertEquals(0, out.get(0).records);
    assertEquals(0, SchemaInference.schema(out.get(0), Set.of(), false).fields().length);
  }
}
