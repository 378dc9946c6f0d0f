package org.tfrecordio.spark;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.math.BigDecimal;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;
import org.tfrecordio.example.SchemaException;

/**
 * The decoder that writes UnsafeRows itself gives, byte for byte, the row that the generic
 * {@link RowDecoder} gives once Spark's projection has made it an UnsafeRow (partition values
 * appended), and fails with the same messages.
 */
public class UnsafeRowDecoderTest {
  private static final StructType WRITTEN = StructType.fromDDL(
      "id bigint, flag boolean, n int, x double, f float, s string, b binary, d date, "
      + "t timestamp, price decimal(6,2), big decimal(30,2), missing string, "
      + "longs array<bigint>, ints array<int>, tags array<string>, xs array<float>, "
      + "empty array<double>");
  private static final StructType PARTITION = StructType.fromDDL(
      "year int, region string, day date, amount decimal(25,3), gone string");

  private static InternalRow written() {
    return new GenericInternalRow(new Object[] {7L, true, -3, 0.5, 2.5f,
        UTF8String.fromString("héllo"), new byte[] {0, 1, 2}, 19782, 1_700_000_000_000_000L,
        Decimal.apply(new BigDecimal("-12.50"), 6, 2),
        Decimal.apply(new BigDecimal("123456789012345678901234.56"), 30, 2), null,
        new GenericArrayData(new long[] {1L, -2L, 3L}), new GenericArrayData(new int[] {4, 5}),
        new GenericArrayData(new Object[] {UTF8String.fromString("a"),
            UTF8String.fromString("bc")}),
        new GenericArrayData(new float[] {1.5f, -2f}), new GenericArrayData(new double[0])});
  }

  private static InternalRow partitionValues() {
    return new GenericInternalRow(new Object[] {2024, UTF8String.fromString("eu"), 19000,
        Decimal.apply(new BigDecimal("1.250"), 25, 3), null});
  }

  private static byte[] encode(InternalRow row, StructType schema) {
    InternalRowEncoder e = InternalRowEncoder.plan(schema, RowEncoder.EXAMPLE);
    int n = e.encode(row);
    return Arrays.copyOf(e.buffer(), n);
  }

  private static StructType concat(StructType a, StructType b) {
    StructType out = new StructType();
    for (StructField f : a.fields()) {
      out = out.add(f);
    }
    for (StructField f : b.fields()) {
      out = out.add(f);
    }
    return out;
  }

  /** The generic decoder's row joined to the partition values, through Spark's projection. */
  private static UnsafeRow viaProjection(byte[] record, StructType read, StructType partition,
      InternalRow values) {
    InternalRow row = RowDecoder.plan(read, RowEncoder.EXAMPLE).decode(record, 0, record.length);
    return UnsafeProjection.create(concat(read, partition)).apply(new JoinedRow(row, values))
        .copy();
  }

  private static void assertSameRows(StructType read, byte[] record) {
    UnsafeRow expected = viaProjection(record, read, PARTITION, partitionValues());
    UnsafeRow actual = UnsafeRowDecoder.plan(read, PARTITION, RowEncoder.EXAMPLE)
        .decode(record, 0, record.length, partitionValues());
    assertEquals(read.simpleString(), expected, actual);
  }

  @Test
  public void everySupportedTypeDecodesToTheProjectedRow() {
    assertSameRows(WRITTEN, encode(written(), WRITTEN));
  }

  @Test
  public void conversionsBetweenFeatureKindsAndColumnTypesMatchTheGenericDecoder() {
    StructType read = StructType.fromDDL("id double, n bigint, x float, f double, d int, "
        + "longs array<double>, ints array<smallint>, xs array<double>, empty array<float>");
    assertSameRows(read, encode(written(), WRITTEN));
  }

  @Test
  public void aPrunedSchemaDecodesOnlyItsFeatures() {
    StructType read = StructType.fromDDL("s string, xs array<float>");
    UnsafeRowDecoder decoder = UnsafeRowDecoder.plan(read, new StructType(), RowEncoder.EXAMPLE);
    byte[] record = encode(written(), WRITTEN);
    UnsafeRow row = decoder.decode(record, 0, record.length, new GenericInternalRow(0));
    assertEquals("héllo", row.getUTF8String(0).toString());
    assertEquals(2, row.getArray(1).numElements());
    assertEquals(2, decoder.decodedFeatures());
  }

  @Test
  public void theOutputRowIsRewrittenForEachRecord() {
    StructType schema = StructType.fromDDL("s string, v array<bigint>");
    UnsafeRowDecoder decoder = UnsafeRowDecoder.plan(schema, new StructType(),
        RowEncoder.EXAMPLE);
    byte[] longer = encode(new GenericInternalRow(new Object[] {
        UTF8String.fromString("a much longer string"), new GenericArrayData(new long[] {1, 2})}),
        schema);
    byte[] shorter = encode(new GenericInternalRow(new Object[] {
        UTF8String.fromString("b"), new GenericArrayData(new long[] {9})}), schema);
    decoder.decode(longer, 0, longer.length, new GenericInternalRow(0));
    UnsafeRow row = decoder.decode(shorter, 0, shorter.length, new GenericInternalRow(0));
    assertEquals("b", row.getUTF8String(0).toString());
    assertEquals(1, row.getArray(1).numElements());
    assertEquals(9L, row.getArray(1).getLong(0));
  }

  @Test
  public void partitionOnlyRowsCarryThePartitionValues() {
    UnsafeRow row = UnsafeRowDecoder.plan(new StructType(), PARTITION, RowEncoder.EXAMPLE)
        .partitionOnly(partitionValues());
    assertEquals(2024, row.getInt(0));
    assertEquals("eu", row.getUTF8String(1).toString());
    assertTrue(row.isNullAt(4));
  }

  @Test
  public void byteArrayRecordsAreCopiedWhole() {
    StructType schema = StructType.fromDDL("byte_array binary");
    byte[] record = {9, 8, 7};
    UnsafeRow row = UnsafeRowDecoder.plan(schema, new StructType(), RowEncoder.BYTE_ARRAY)
        .decode(record, 0, record.length, new GenericInternalRow(0));
    assertEquals(Arrays.toString(record), Arrays.toString(row.getBinary(0)));
  }

  @Test
  public void errorsAreTheGenericDecodersErrors() {
    byte[] record = encode(written(), WRITTEN);
    String[] schemas = {"t int", "t array<smallint>", "missing string NOT NULL", "s bigint",
        "longs bigint", "xs array<bigint>", "tags array<int>"};
    for (String ddl : schemas) {
      StructType read = StructType.fromDDL(ddl);
      StructType schema = read;
      SchemaException generic = assertThrows(ddl, SchemaException.class,
          () -> RowDecoder.plan(schema, RowEncoder.EXAMPLE).decode(record, 0, record.length));
      SchemaException direct = assertThrows(ddl, SchemaException.class,
          () -> UnsafeRowDecoder.plan(schema, new StructType(), RowEncoder.EXAMPLE)
              .decode(record, 0, record.length, new GenericInternalRow(0)));
      assertEquals(ddl, generic.getMessage(), direct.getMessage());
    }
  }

  @Test
  public void vectorsSequenceExamplesAndDecimalArraysAreLeftToTheGenericDecoder() {
    StructType plain = StructType.fromDDL("id bigint, tags array<string>");
    assertTrue(UnsafeRowDecoder.supports(plain, PARTITION, RowEncoder.EXAMPLE));
    assertFalse(UnsafeRowDecoder.supports(plain, new StructType(), RowEncoder.SEQUENCE_EXAMPLE));
    assertFalse(UnsafeRowDecoder.supports(StructType.fromDDL("p array<decimal(6,2)>"),
        new StructType(), RowEncoder.EXAMPLE));
    assertFalse(UnsafeRowDecoder.supports(plain, StructType.fromDDL("p array<int>"),
        RowEncoder.EXAMPLE));
  }
}
