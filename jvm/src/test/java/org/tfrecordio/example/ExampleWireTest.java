package org.tfrecordio.example;

import static org.hamcrest.CoreMatchers.containsString;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.Test;

/**
 * The Example wire codec without Spark: {@link WireSink} writes protobuf's bytes,
 * {@link RecordScanner} and {@link FeatureView} read them back under protobuf's parsing rules.
 * Expected bytes are written out by hand from the protobuf encoding rules.
 */
public class ExampleWireTest {
  /** Example{features{feature{"a": int64_list{1, 2}}}}, packed, as protobuf serializes it. */
  private static final byte[] EXAMPLE_A12 =
      bytes(0x0a, 0x0d, 0x0a, 0x0b, 0x0a, 0x01, 'a', 0x12, 0x06, 0x1a, 0x04, 0x0a, 0x02, 1, 2);

  private static byte[] bytes(int... b) {
    byte[] r = new byte[b.length];
    for (int i = 0; i < b.length; i++) {
      r[i] = (byte) b[i];
    }
    return r;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Scans {@code record} for feature {@code name} and decodes it. */
  private static FeatureValues decode(byte[] record, String name, int[] kind) {
    ByteKeyMap keys = new ByteKeyMap();
    byte[] key = utf8(name);
    int id = keys.add(key, 0, key.length);
    RecordScanner scanner = new RecordScanner(false, keys, null, false);
    scanner.scan(record, 0, record.length);
    FeatureValues values = new FeatureValues();
    if (!scanner.context.has(id, scanner.record)) {
      return null;
    }
    FeatureView view = new FeatureView();
    scanner.feature(scanner.context, id, view);
    kind[0] = view.kind;
    view.read(values);
    return values;
  }

  @Test
  public void sinkWritesTheBytesProtobufSerializes() {
    WireSink s = new WireSink(4); // grows as needed
    int example = s.begin(ExampleWire.TAG1_LEN); // Example.features
    int entry = s.begin(ExampleWire.TAG1_LEN); // Features.feature map entry
    byte[] key = ExampleWire.keyField(utf8("a"));
    s.bytes(key, 0, key.length);
    int value = s.begin(ExampleWire.TAG2_LEN); // the entry's value: a Feature
    int list = s.begin(ExampleWire.TAG3_LEN); // Feature.int64_list
    int packed = s.begin(ExampleWire.TAG1_LEN); // Int64List.value, packed
    s.varint(1);
    s.varint(2);
    s.end(packed);
    s.end(list);
    s.end(value);
    s.end(entry);
    s.end(example);
    assertArrayEquals(EXAMPLE_A12, Arrays.copyOf(s.buf, s.pos));
  }

  @Test
  public void lengthsOf128BytesAndMoreMoveTheContent() {
    WireSink s = new WireSink(8);
    int mark = s.begin(ExampleWire.TAG1_LEN);
    byte[] content = new byte[300];
    Arrays.fill(content, (byte) 7);
    s.bytes(content, 0, content.length);
    s.end(mark);
    assertEquals(1 + 2 + 300, s.pos);
    assertArrayEquals(bytes(0x0a, 0xac, 0x02), Arrays.copyOf(s.buf, 3));
    assertEquals(7, s.buf[3]);
  }

  @Test
  public void scannerFindsAFeatureAndViewDecodesItsValues() {
    int[] kind = new int[1];
    FeatureValues v = decode(EXAMPLE_A12, "a", kind);
    assertEquals(ExampleWire.INT64, kind[0]);
    assertEquals(2, v.n);
    assertEquals(1L, v.longs[0]);
    assertEquals(2L, v.longs[1]);
  }

  @Test
  public void absentFeatureIsNotFound() {
    assertEquals(null, decode(EXAMPLE_A12, "b", new int[1]));
  }

  @Test
  public void unpackedInt64ValuesAreAcceptedAsProtobufDoes() {
    // int64_list{value: 5, value: 300} written unpacked: 08 05 08 ac 02
    byte[] list = bytes(0x08, 0x05, 0x08, 0xac, 0x02);
    byte[] record = example("x", 0x1a, list);
    int[] kind = new int[1];
    FeatureValues v = decode(record, "x", kind);
    assertEquals(ExampleWire.INT64, kind[0]);
    assertEquals(2, v.n);
    assertEquals(5L, v.longs[0]);
    assertEquals(300L, v.longs[1]);
  }

  @Test
  public void packedFloatsAndBytesListsDecode() {
    byte[] floats = bytes(0x0a, 0x04, 0x00, 0x00, 0x80, 0x3f); // packed 1.0f
    FeatureValues f = decode(example("f", 0x12, floats), "f", new int[1]);
    assertEquals(1, f.n);
    assertEquals(1.0f, f.floats[0], 0f);
    byte[] strings = bytes(0x0a, 0x02, 'h', 'i', 0x0a, 0x00); // "hi", ""
    int[] kind = new int[1];
    FeatureValues b = decode(example("s", 0x0a, strings), "s", kind);
    assertEquals(ExampleWire.BYTES, kind[0]);
    assertEquals(2, b.n);
    assertEquals("hi", new String(b.buf, b.starts[0], b.lens[0], StandardCharsets.UTF_8));
    assertEquals(0, b.lens[1]);
  }

  @Test
  public void theLastOfDuplicateMapKeysWins() {
    byte[] first = example("k", 0x1a, bytes(0x0a, 0x01, 1));
    byte[] second = example("k", 0x1a, bytes(0x0a, 0x01, 9));
    // Two Example.features fields merge; their map entries' last key wins.
    FeatureValues v = decode(concat(first, second), "k", new int[1]);
    assertEquals(1, v.n);
    assertEquals(9L, v.longs[0]);
  }

  @Test
  public void unknownFieldsAreSkipped() {
    byte[] unknown = bytes(0x20, 0x07, 0x2a, 0x01, 0x00); // field 4 varint, field 5 bytes
    FeatureValues v = decode(concat(unknown, EXAMPLE_A12), "a", new int[1]);
    assertEquals(2, v.n);
  }

  @Test
  public void truncatedMessageIsASchemaException() {
    byte[] cut = Arrays.copyOf(EXAMPLE_A12, EXAMPLE_A12.length - 3);
    SchemaException e =
        assertThrows(SchemaException.class, () -> decode(cut, "a", new int[1]));
    assertThat(e.getMessage(), containsString("not a valid protobuf message"));
  }

  @Test
  public void utf8ValidationRejectsOverlongsAndSurrogates() {
    byte[] text = utf8("h\u00e9llo \u4e16\u754c \ud83d\ude00");
    assertTrue(ExampleWire.validUtf8(text, 0, text.length));
    assertFalse(ExampleWire.validUtf8(bytes(0xc0, 0xaf), 0, 2)); // overlong '/'
    assertFalse(ExampleWire.validUtf8(bytes(0xed, 0xa0, 0x80), 0, 3)); // a surrogate
    assertFalse(ExampleWire.validUtf8(bytes(0xe4, 0xb8), 0, 2)); // truncated
  }

  @Test
  public void utf8OrderIsCodePointOrder() {
    assertTrue(ExampleWire.compareUtf8(utf8("a"), utf8("b")) < 0);
    assertTrue(ExampleWire.compareUtf8(utf8("\uffff"), utf8("\ud83d\ude00")) < 0);
    assertTrue(ExampleWire.compareUtf8(utf8("ab"), utf8("a")) > 0);
    assertEquals(0, ExampleWire.compareUtf8(utf8("x"), utf8("x")));
  }

  /** Example{features{feature{name: Feature{field listTag: list}}}}. */
  private static byte[] example(String name, int listTag, byte[] list) {
    WireSink s = new WireSink(16);
    int example = s.begin(ExampleWire.TAG1_LEN);
    int entry = s.begin(ExampleWire.TAG1_LEN);
    byte[] key = utf8(name);
    s.header(ExampleWire.TAG1_LEN, key.length);
    s.bytes(key, 0, key.length);
    int feature = s.begin(ExampleWire.TAG2_LEN);
    s.header(listTag, list.length);
    s.bytes(list, 0, list.length);
    s.end(feature);
    s.end(entry);
    s.end(example);
    return Arrays.copyOf(s.buf, s.pos);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] r = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }
}
