package org.tfrecordio.spark;

import static org.junit.Assert.assertEquals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.io.BytesWritable;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Feature names that are not valid UTF-8: schema inference skips them (as TensorFlow's parsers
 * and the Python codec do), never merges them with another name into one column, and warns once
 * per task naming them and where they were read.
 */
public class SchemaInferenceNamesTest {
  private static final byte[] REPLACEMENT = "a\ufffd".getBytes(StandardCharsets.UTF_8);

  private final List<String> warnings = Collections.synchronizedList(new ArrayList<>());
  private Logger logger;
  private AbstractAppender appender;

  @Before
  public void captureWarnings() {
    appender = new AbstractAppender("capture", null, null, true, Property.EMPTY_ARRAY) {
      @Override
      public void append(LogEvent event) {
        warnings.add(event.getMessage().getFormattedMessage());
      }
    };
    appender.start();
    logger = (Logger) LogManager.getLogger(SchemaInference.class);
    logger.addAppender(appender);
  }

  @After
  public void stopCapturing() {
    logger.removeAppender(appender);
    appender.stop();
  }

  private static void varint(ByteArrayOutputStream out, long v) {
    while ((v & ~0x7FL) != 0) {
      out.write((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }

  private static byte[] field(int tag, byte[] payload) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(tag);
    varint(out, payload.length);
    out.writeBytes(payload);
    return out.toByteArray();
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  /** A Feature: int64_list of one value (a Long) or bytes_list of one value (a byte[]). */
  private static byte[] feature(Object value) {
    if (value instanceof byte[]) {
      return field(0x0a, field(0x0a, (byte[]) value));
    }
    ByteArrayOutputStream packed = new ByteArrayOutputStream();
    varint(packed, (Long) value);
    return field(0x1a, field(0x0a, packed.toByteArray()));
  }

  /** An Example of features given as name (bytes), value pairs. */
  private static byte[] example(Object... namesAndValues) {
    List<byte[]> entries = new ArrayList<>();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      entries.add(field(0x0a, concat(field(0x0a, (byte[]) namesAndValues[i]),
          field(0x12, feature(namesAndValues[i + 1])))));
    }
    return field(0x0a, concat(entries.toArray(new byte[0][])));
  }

  private static byte[] bytes(int... b) {
    byte[] out = new byte[b.length];
    for (int i = 0; i < b.length; i++) {
      out[i] = (byte) b[i];
    }
    return out;
  }

  private static StructType infer(String where, byte[]... records) {
    SchemaInference.Summary s = SchemaInference.summarize(
        Arrays.stream(records).map(BytesWritable::new).iterator(), false, Set.of(), where);
    return SchemaInference.schema(s, Set.of(), false);
  }

  @Test
  public void featuresWhoseNamesAreNotUtf8AreNotColumns() {
    StructType schema = infer("",
        example(bytes('a', 0xff), 1L, "ok".getBytes(StandardCharsets.UTF_8), 2L),
        example(bytes('b', 0xc3, 0x28), 3L, "ok".getBytes(StandardCharsets.UTF_8), 4L));
    assertEquals(DataTypes.createStructType(List.of(
        DataTypes.createStructField("ok", DataTypes.LongType, false))), schema);
  }

  /**
   * Two names that are not UTF-8 and a valid one that all decode to "a\ufffd" with replacement:
   * the column is the valid name's alone (int64 in every record: a scalar long that is never
   * null), not a mix of the three features' kinds and presence.
   */
  @Test
  public void aNameThatIsNotUtf8IsNeverMergedWithTheValidNameItWouldDecodeTo() {
    StructType schema = infer("",
        example(bytes('a', 0xff), "text".getBytes(StandardCharsets.UTF_8), REPLACEMENT, 1L),
        example(bytes('a', 0xfe), 7L, bytes('a', 0xff), 8L, REPLACEMENT, 2L));
    assertEquals(DataTypes.createStructType(List.of(
        DataTypes.createStructField("a\ufffd", DataTypes.LongType, false))), schema);
  }

  @Test
  public void eachTaskWarnsOnceNamingTheSkippedNamesAndItsFile() {
    infer(" of the input split of file:/data/part-00001.tfrecord from byte 0 (counting from 0)",
        example("ok".getBytes(StandardCharsets.UTF_8), 1L),
        example(bytes('a', 0xff), 1L, bytes('\'', '\\', 0x80), 2L),
        example(bytes('a', 0xff), 3L));
    assertEquals(List.of("Skipped 2 feature(s) whose names are not valid UTF-8, in the records "
        + "of the input split of file:/data/part-00001.tfrecord from byte 0 (counting from 0): "
        + "b'a\\xff' (first in record 1), b'\\'\\\\\\x80' (first in record 1). A name must be "
        + "UTF-8 to be read as a column; TensorFlow's parsers skip them too."), warnings);
  }

  @Test
  public void aTaskWithOnlyUtf8NamesDoesNotWarn() {
    infer("", example(REPLACEMENT, 1L, "ü".getBytes(StandardCharsets.UTF_8), 2L));
    assertEquals(List.of(), warnings);
  }
}
