package org.tfrecordio.example;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import java.nio.charset.StandardCharsets;
import org.junit.Test;

/** Feature names to dense ids, looked up from byte ranges. */
public class ByteKeyMapTest {
  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  public void idsAreDenseInOrderOfAddition() {
    ByteKeyMap m = new ByteKeyMap();
    assertEquals(0, m.add(utf8("a"), 0, 1));
    assertEquals(1, m.add(utf8("bb"), 0, 2));
    assertEquals(2, m.size());
    assertArrayEquals(utf8("bb"), m.key(1));
  }

  @Test
  public void lookupUsesARangeOfALargerArray() {
    ByteKeyMap m = new ByteKeyMap();
    m.add(utf8("label"), 0, 5);
    byte[] record = utf8("xxlabelyy");
    assertEquals(0, m.find(record, 2, 5));
    assertEquals(-1, m.find(record, 2, 4));
    assertEquals(-1, m.find(record, 0, 0));
  }

  @Test
  public void manyKeysSurviveGrowth() {
    ByteKeyMap m = new ByteKeyMap();
    for (int i = 0; i < 1000; i++) {
      byte[] k = utf8("feature/" + i);
      assertEquals(i, m.add(k, 0, k.length));
    }
    for (int i = 0; i < 1000; i++) {
      byte[] k = utf8("feature/" + i);
      assertEquals(i, m.find(k, 0, k.length));
    }
  }
}
