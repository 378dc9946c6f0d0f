package org.tfrecordio.spark;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;
import org.tfrecordio.example.SchemaException;

/** Feature values converted to a field's leaf type, as both decoders read them. */
public class LeafValuesTest {
  private static final StructType TEXT = StructType.fromDDL("d string");
  private static final StructType DECIMAL = StructType.fromDDL("d decimal(10,2)");

  /** An Example whose bytes feature {@code d} holds {@code text}. */
  private static byte[] record(String text) {
    InternalRowEncoder e = InternalRowEncoder.plan(TEXT, RowEncoder.EXAMPLE);
    int n = e.encode(new GenericInternalRow(new Object[] {UTF8String.fromString(text)}));
    return Arrays.copyOf(e.buffer(), n);
  }

  /**
   * A decimal string's exponent is no length to compute with: {@code 1E99999999} (ten bytes)
   * would have the value scaled by 10^99999999 before its size was checked, a task busy for
   * minutes. Its digits are checked against the type first, so it fails at once.
   */
  @Test(timeout = 20_000)
  public void aDecimalStringWithAHugeExponentIsRefusedAtOnce() {
    for (String text : new String[] {"1E99999999", "1E-99999999", "-7.5E+999999999",
        "5E-2147483647"}) {
      byte[] r = record(text);
      SchemaException generic = assertThrows(text, SchemaException.class,
          () -> RowDecoder.plan(DECIMAL, RowEncoder.EXAMPLE).decode(r, 0, r.length));
      assertTrue(generic.getMessage(), generic.getMessage().contains("doesn't fit "
          + "decimal(10,2) exactly"));
      SchemaException direct = assertThrows(text, SchemaException.class,
          () -> UnsafeRowDecoder.plan(DECIMAL, new StructType(), RowEncoder.EXAMPLE)
              .decode(r, 0, r.length, new GenericInternalRow(0)));
      assertEquals(text, generic.getMessage(), direct.getMessage());
    }
    for (String[] exact : new String[][] {{"0E-99999999", "0.00"}, {"0E+99999999", "0.00"},
        {"1.5000", "1.50"}, {"12345678.9E-0", "12345678.90"}, {"1E7", "10000000.00"},
        {"-2.50E-1", "-0.25"}}) {
      byte[] r = record(exact[0]);
      assertEquals(exact[0], exact[1], RowDecoder.plan(DECIMAL, RowEncoder.EXAMPLE)
          .decode(r, 0, r.length).getDecimal(0, 10, 2).toString());
    }
    for (String inexact : new String[] {"1E8", "0.001", "123456789", "1.005"}) {
      byte[] r = record(inexact);
      assertThrows(inexact, SchemaException.class,
          () -> RowDecoder.plan(DECIMAL, RowEncoder.EXAMPLE).decode(r, 0, r.length));
    }
  }
}
