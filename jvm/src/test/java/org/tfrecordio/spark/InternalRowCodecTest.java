package org.tfrecordio.spark;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;
import org.tfrecordio.example.SchemaException;

/**
 * The decoder gives back the internal values the internal-row encoder wrote, decoding only the
 * fields it is asked for. (That the encoder's bytes are the Python codec's is tested from Python,
 * in tests/spark/test_dataframe.py.)
 */
public class InternalRowCodecTest {
  private static final StructType SCHEMA = StructType.fromDDL(
      "id bigint, flag boolean, n int, x double, s string, d date, price decimal(6,2), "
      + "tags array<string>, xs array<float>");

  private static InternalRow internalRow() {
    return new GenericInternalRow(new Object[] {7L, true, -3, 0.5, UTF8String.fromString("héllo"),
        (int) LocalDate.of(2024, 2, 29).toEpochDay(),
        Decimal.apply(new BigDecimal("-12.50"), 6, 2),
        new GenericArrayData(new Object[] {UTF8String.fromString("a"),
            UTF8String.fromString("bc")}),
        new GenericArrayData(new float[] {1.5f, -2f})});
  }

  private static byte[] encode(InternalRow r, StructType schema) {
    InternalRowEncoder e = InternalRowEncoder.plan(schema, RowEncoder.EXAMPLE);
    int n = e.encode(r);
    return Arrays.copyOf(e.buffer(), n);
  }

  @Test
  public void decodingGivesTheInternalValuesBack() {
    byte[] record = encode(internalRow(), SCHEMA);
    RowDecoder decoder = RowDecoder.plan(SCHEMA, RowEncoder.EXAMPLE);
    InternalRow back = decoder.decode(record, 0, record.length);
    assertEquals(7L, back.getLong(0));
    assertTrue(back.getBoolean(1));
    assertEquals(-3, back.getInt(2));
    assertEquals(0.5, back.getDouble(3), 0);
    assertEquals("héllo", back.getUTF8String(4).toString());
    assertEquals(LocalDate.of(2024, 2, 29).toEpochDay(), back.getInt(5));
    assertEquals(new BigDecimal("-12.50"), back.getDecimal(6, 6, 2).toJavaBigDecimal());
    assertEquals("bc", back.getArray(7).getUTF8String(1).toString());
    assertArrayEquals(new float[] {1.5f, -2f}, back.getArray(8).toFloatArray(), 0f);
    assertEquals(9, decoder.decodedFeatures());
  }

  @Test
  public void onlyTheRequestedFeaturesAreDecoded() {
    byte[] record = encode(internalRow(), SCHEMA);
    RowDecoder decoder = RowDecoder.plan(StructType.fromDDL("s string"), RowEncoder.EXAMPLE);
    for (int i = 0; i < 3; i++) {
      assertEquals("héllo", decoder.decode(record, 0, record.length).getUTF8String(0).toString());
    }
    assertEquals(3, decoder.decodedFeatures());
  }

  /**
   * A decimal is written as its text by the general decimal arithmetic spec, as Arrow's cast
   * (the Python encoder) writes it: scientific below 1E-6, with the scale's digits.
   */
  @Test
  public void decimalsAreWrittenAsTheirSpecText() {
    StructType schema = StructType.fromDDL("d decimal(20,10)");
    String[][] cases = {{"0.0000001", "1.000E-7"}, {"0", "0E-10"}, {"-0.00000012", "-1.200E-7"},
        {"0.000001", "0.0000010000"}, {"123.45", "123.4500000000"}};
    for (String[] c : cases) {
      InternalRow r = new GenericInternalRow(new Object[] {
          Decimal.apply(new BigDecimal(c[0]).setScale(10), 20, 10)});
      byte[] record = encode(r, schema);
      String text = new String(record, java.nio.charset.StandardCharsets.ISO_8859_1);
      assertTrue(c[0] + " -> " + text, text.endsWith("\n" + (char) c[1].length() + c[1]));
      InternalRow back = RowDecoder.plan(schema, RowEncoder.EXAMPLE)
          .decode(record, 0, record.length);
      assertEquals(new BigDecimal(c[0]).setScale(10), back.getDecimal(0, 20, 10)
          .toJavaBigDecimal());
    }
  }

  @Test
  public void aNullInsideAnArrayFailsNamingTheColumn() {
    StructType schema = StructType.fromDDL("vals array<bigint>");
    InternalRow r = new GenericInternalRow(new Object[] {
        new GenericArrayData(new Object[] {1L, null})});
    SchemaException e = assertThrows(SchemaException.class, () -> encode(r, schema));
    assertEquals("column 'vals': a null inside a list has no TFRecord form: drop the nulls "
        + "(array_compact) or replace them first", e.getMessage());
  }
}
