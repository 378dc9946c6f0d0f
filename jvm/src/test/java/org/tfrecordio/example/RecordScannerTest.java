package org.tfrecordio.example;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.Test;

/**
 * One {@link RecordScanner} over many records: it remembers each entry position's key from the
 * records before, which must never change what it finds when the next record lists its
 * features in another order, leaves some out, adds unknown ones or repeats a key.
 */
public class RecordScannerTest {
  /** An Example whose features are {@code names[i]: int64_list{values[i]}}, in that order. */
  private static byte[] example(String[] names, long[] values) {
    WireSink s = new WireSink(16);
    int example = s.begin(ExampleWire.TAG1_LEN);
    for (int i = 0; i < names.length; i++) {
      int entry = s.begin(ExampleWire.TAG1_LEN);
      byte[] key = ExampleWire.keyField(names[i].getBytes(StandardCharsets.UTF_8));
      s.bytes(key, 0, key.length);
      int feature = s.begin(ExampleWire.TAG2_LEN);
      int list = s.begin(ExampleWire.TAG3_LEN);
      int packed = s.begin(ExampleWire.TAG1_LEN);
      s.varint(values[i]);
      s.end(packed);
      s.end(list);
      s.end(feature);
      s.end(entry);
    }
    s.end(example);
    return Arrays.copyOf(s.buf, s.pos);
  }

  private static int id(ByteKeyMap keys, String name) {
    byte[] b = name.getBytes(StandardCharsets.UTF_8);
    return keys.find(b, 0, b.length);
  }

  /** The int64 value of feature {@code name} in the scanned record, or null if absent. */
  private static Long value(RecordScanner scanner, ByteKeyMap keys, String name) {
    int id = id(keys, name);
    if (id < 0 || !scanner.context.has(id, scanner.record)) {
      return null;
    }
    FeatureView view = new FeatureView();
    scanner.feature(scanner.context, id, view);
    FeatureValues values = new FeatureValues();
    view.read(values);
    return values.longs[values.n - 1];
  }

  private static ByteKeyMap wanted(String... names) {
    ByteKeyMap keys = new ByteKeyMap();
    for (String n : names) {
      byte[] b = n.getBytes(StandardCharsets.UTF_8);
      keys.add(b, 0, b.length);
    }
    return keys;
  }

  @Test
  public void findsWantedFeaturesWhateverOrderEachRecordListsThemIn() {
    ByteKeyMap keys = wanted("x", "id");
    RecordScanner scanner = new RecordScanner(false, keys, null, false);
    String[][] layouts = {
      {"id", "s", "v", "x"}, {"id", "s", "v", "x"}, {"x", "id"}, {"s", "x", "v", "id"},
      {"id", "x"}, {"v", "s"}, {"id", "s", "v", "x"},
    };
    for (int r = 0; r < layouts.length; r++) {
      String[] names = layouts[r];
      long[] values = new long[names.length];
      for (int i = 0; i < names.length; i++) {
        values[i] = 100L * r + names[i].charAt(0);
      }
      scanner.scan(example(names, values), 0, example(names, values).length);
      for (String want : new String[] {"x", "id"}) {
        int at = Arrays.asList(names).indexOf(want);
        Long expected = at < 0 ? null : values[at];
        assertEquals("record " + r + ", feature " + want, expected, value(scanner, keys, want));
      }
    }
  }

  @Test
  public void aRepeatedKeyTakesItsLastValueAfterRecordsThatListedItOnce() {
    ByteKeyMap keys = wanted("x");
    RecordScanner scanner = new RecordScanner(false, keys, null, false);
    byte[] once = example(new String[] {"x", "y"}, new long[] {1, 2});
    scanner.scan(once, 0, once.length);
    assertEquals(Long.valueOf(1), value(scanner, keys, "x"));
    byte[] twice = example(new String[] {"x", "x"}, new long[] {3, 4});
    scanner.scan(twice, 0, twice.length);
    assertEquals(Long.valueOf(4), value(scanner, keys, "x"));
  }

  @Test
  public void unknownKeysAreAddedOnceWithStableIdsWhenAsked() {
    ByteKeyMap keys = new ByteKeyMap();
    RecordScanner scanner = new RecordScanner(false, keys, null, true);
    byte[] first = example(new String[] {"a", "b"}, new long[] {1, 2});
    scanner.scan(first, 0, first.length);
    byte[] second = example(new String[] {"b", "c", "a"}, new long[] {5, 6, 7});
    scanner.scan(second, 0, second.length);
    assertEquals(3, keys.size());
    assertEquals(0, id(keys, "a"));
    assertEquals(1, id(keys, "b"));
    assertEquals(2, id(keys, "c"));
    assertEquals(Long.valueOf(7), value(scanner, keys, "a"));
    assertEquals(Long.valueOf(5), value(scanner, keys, "b"));
    assertEquals(Long.valueOf(6), value(scanner, keys, "c"));
    assertEquals(3, scanner.context.count);
  }

  @Test
  public void aKeyThatOnlySharesItsLengthWithThePredictedOneIsNotMistakenForIt() {
    ByteKeyMap keys = wanted("ab");
    RecordScanner scanner = new RecordScanner(false, keys, null, false);
    byte[] first = example(new String[] {"ab"}, new long[] {1});
    scanner.scan(first, 0, first.length);
    byte[] second = example(new String[] {"ac"}, new long[] {2});
    scanner.scan(second, 0, second.length);
    assertFalse(scanner.context.has(id(keys, "ab"), scanner.record));
    byte[] third = example(new String[] {"ab"}, new long[] {3});
    scanner.scan(third, 0, third.length);
    assertTrue(scanner.context.has(id(keys, "ab"), scanner.record));
  }
}
