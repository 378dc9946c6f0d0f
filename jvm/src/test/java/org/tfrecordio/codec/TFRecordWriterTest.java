package org.tfrecordio.codec;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.Test;
import org.tfrecordio.testutil.Records;

public class TFRecordWriterTest {

  /**
   * Written by TensorFlow 2.21 {@code tf.io.TFRecordWriter} for the records b"", b"a" and
   * b"TFRecord": per record, length (uint64 LE), masked CRC of the length, data, masked CRC of
   * the data.
   */
  private static final String TENSORFLOW_BYTES =
      "0000000000000000" + "29039807" + /* no data */ "d8ea82a2"
      + "0100000000000000" + "0175de41" + "61" + "786ee428"
      + "0800000000000000" + "ff86240f" + "54465265636f7264" + "8d199601";

  private static byte[] hex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return b;
  }

  private static byte[] write(List<byte[]> records) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TFRecordWriter w = new TFRecordWriter(out)) {
      for (byte[] r : records) {
        w.write(r);
      }
    }
    return out.toByteArray();
  }

  @Test
  public void maskedCrcOfEmptyDataIsTheMaskDelta() {
    // CRC32C("") = 0; rotating 0 gives 0; 0 + 0xa282ead8 = 0xa282ead8.
    CRC32C crc = new CRC32C();
    assertEquals(0L, crc.getValue());
    assertEquals(0xa282ead8, TFRecordCrc.mask(0));
    assertEquals(0xa282ead8, new TFRecordCrc().masked(new byte[0], 0, 0));
  }

  @Test
  public void maskRotatesRightBy15BitsThenAddsTheDelta() {
    // The CRC32C check value: CRC32C("123456789") = 0xe3069283.
    byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
    CRC32C crc = new CRC32C();
    crc.update(check);
    assertEquals(0xe3069283L, crc.getValue());
    // 0xe3069283 rotated right by 15 = 0x2507c60d; + 0xa282ead8 = 0xc78ab0e5 (mod 2^32).
    assertEquals(0x2507c60d, Integer.rotateRight(0xe3069283, 15));
    assertEquals(0xc78ab0e5, TFRecordCrc.mask(0xe3069283));
    assertEquals(0xc78ab0e5, new TFRecordCrc().masked(check, 0, check.length));
    assertEquals(Records.maskedCrc32c(check, 0, check.length), TFRecordCrc.mask(0xe3069283));
  }

  @Test
  public void outputIsByteIdenticalToTensorFlowForAKnownVector() throws IOException {
    byte[] expected = hex(TENSORFLOW_BYTES);
    List<byte[]> records = Arrays.asList(new byte[0], "a".getBytes(StandardCharsets.US_ASCII),
        "TFRecord".getBytes(StandardCharsets.US_ASCII));
    assertArrayEquals(expected, write(records));
    // The independent encoder of the tests agrees, so it can be trusted for bigger inputs.
    assertArrayEquals(expected, Records.frameAll(records));
  }

  @Test
  public void outputMatchesTheSpecEncodingForRandomRecordsOfAllSizes() throws IOException {
    List<byte[]> records = Records.random(1, 200, 3000);
    records.add(Records.randomBytes(2, 300 * 1024)); // larger than the writer's 256 KiB buffer
    records.add(new byte[0]);
    records.add(Records.randomBytes(3, 256 * 1024 - 16)); // exactly fills the buffer
    records.add(Records.randomBytes(4, 17));
    assertArrayEquals(Records.frameAll(records), write(records));
  }

  @Test
  public void writeReturnsTheRecordOffsetAndTracksPositionAndCount() throws IOException {
    List<byte[]> records = Records.random(5, 50, 100);
    long[] bounds = Records.boundaries(records);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TFRecordWriter w = new TFRecordWriter(out)) {
      for (int i = 0; i < records.size(); i++) {
        assertEquals(bounds[i], w.write(records.get(i)));
        assertEquals(bounds[i + 1], w.getPosition());
        assertEquals(i + 1, w.getRecordCount());
      }
    }
  }

  @Test
  public void writeWithOffsetAndLengthWritesOnlyThatSlice() throws IOException {
    byte[] big = Records.randomBytes(6, 100);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TFRecordWriter w = new TFRecordWriter(out)) {
      w.write(big, 10, 30);
    }
    assertArrayEquals(Records.frame(Arrays.copyOfRange(big, 10, 40)), out.toByteArray());
  }

  @Test
  public void flushWritesBufferedRecordsWithoutClosing() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    TFRecordWriter w = new TFRecordWriter(out);
    byte[] r = Records.randomBytes(7, 10);
    w.write(r);
    assertEquals(0, out.size());
    w.flush();
    assertArrayEquals(Records.frame(r), out.toByteArray());
    w.write(r);
    w.close();
    assertArrayEquals(Records.concat(Records.frame(r), Records.frame(r)), out.toByteArray());
  }
}
