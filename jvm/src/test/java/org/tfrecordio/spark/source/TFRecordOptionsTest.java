package org.tfrecordio.spark.source;

import static org.hamcrest.CoreMatchers.containsString;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;

import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.junit.Test;

/** Option names and value spellings: this project's and linkedin/spark-tfrecord's. */
public class TFRecordOptionsTest {
  private final Configuration conf = new Configuration(false);

  @Test
  public void recordTypeIsExampleByDefaultAndMatchedIgnoringCase() {
    assertEquals("Example", TFRecordOptions.of(Map.of()).recordType());
    assertEquals("SequenceExample",
        TFRecordOptions.of(Map.of("recordtype", "sequenceexample")).recordType());
    assertEquals("ByteArray", TFRecordOptions.of(Map.of("recordType", "ByteArray")).recordType());
    assertThrows(IllegalArgumentException.class,
        () -> TFRecordOptions.of(Map.of("recordType", "Examples")));
  }

  @Test
  public void codecTakesClassNamesAndCompressionTakesShortNames() {
    String gzip = "org.apache.hadoop.io.compress.GzipCodec";
    String deflate = "org.apache.hadoop.io.compress.DefaultCodec";
    assertEquals(gzip, TFRecordOptions.of(Map.of("codec", gzip)).codecClass(conf));
    assertEquals(gzip, TFRecordOptions.of(Map.of("compression", "GZIP")).codecClass(conf));
    assertEquals(deflate, TFRecordOptions.of(Map.of("compression", "zlib")).codecClass(conf));
    assertNull(TFRecordOptions.of(Map.of("compression", "none")).codecClass(conf));
    assertNull(TFRecordOptions.of(Map.of()).codecClass(conf));
    assertThrows(IllegalArgumentException.class,
        () -> TFRecordOptions.of(Map.of("codec", "no.such.Codec")).codecClass(conf));
  }

  @Test
  public void inferenceOptions() {
    TFRecordOptions o = TFRecordOptions.of(Map.of("samplingRatio", "0.25",
        "binaryFeatures", "a, b,,c"));
    assertEquals(0.25, o.samplingRatio(), 0);
    assertEquals(List.of("a", "b", "c"), o.binaryFeatures());
    assertEquals(0.5, TFRecordOptions.of(Map.of("sample", "0.5")).samplingRatio(), 0);
    assertThrows(IllegalArgumentException.class,
        () -> TFRecordOptions.of(Map.of("samplingRatio", "0")).samplingRatio());
  }

  @Test
  public void aNearMissOfAnOptionIsWarnedOfNamingTheOption() {
    assertThat(TFRecordOptions.unknownOptionWarning("record_type"),
        containsString("'record_type' is not an option of format(\"tfrecord\"): did you mean "
            + "'recordType'?"));
    assertThat(TFRecordOptions.unknownOptionWarning("compresion"),
        containsString("did you mean 'compression'?"));
    assertThat(TFRecordOptions.unknownOptionWarning("tfrecord.output.indx"),
        containsString("'tfrecord.output.indx' is not a configuration key of tfrecord-io: did "
            + "you mean 'tfrecord.output.index'?"));
  }

  @Test
  public void anUnknownTfrecordKeyIsWarnedOf() {
    assertThat(TFRecordOptions.unknownOptionWarning("tfrecord.output.shards"),
        containsString("'tfrecord.output.shards' is not a configuration key of tfrecord-io "
            + "(those are tfrecord.max.record.bytes, "));
  }

  @Test
  public void knownOptionsInAnyCaseAndOtherHadoopKeysAreNotWarnedOf() {
    for (String key : new String[] {"recordtype", "COMPRESSION", "path", "schema",
        "partitionBy.0", "tfrecord.input.corrupt.policy", "mapreduce.output.fileoutputformat.compress",
        "fs.s3a.endpoint", "mode", "basePath", "__partition_columns"}) {
      assertNull(key, TFRecordOptions.unknownOptionWarning(key));
    }
  }

  @Test
  public void everyOptionGoesIntoTheHadoopConfiguration() {
    TFRecordOptions.of(Map.of("tfrecord.input.corrupt.policy", "skip")).applyTo(conf);
    assertEquals("skip", conf.get("tfrecord.input.corrupt.policy"));
  }
}
