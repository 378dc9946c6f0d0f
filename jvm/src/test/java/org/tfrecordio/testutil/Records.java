package org.tfrecordio.testutil;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;

/**
 * Test records and an encoder of the TFRecord framing written straight from the format's
 * definition, independent of the library's writer:
 *
 * <pre>
 *   uint64 length (little endian)
 *   uint32 masked_crc32c(length)
 *   byte   data[length]
 *   uint32 masked_crc32c(data)
 *   masked_crc = ((crc &gt;&gt; 15) | (crc &lt;&lt; 17)) + 0xa282ead8   (32-bit arithmetic)
 * </pre>
 */
public final class Records {
  private Records() {}

  /** The masked CRC32C of TFRecord: the CRC rotated right by 15 bits plus 0xa282ead8. */
  public static int maskedCrc32c(byte[] b, int off, int len) {
    CRC32C crc = new CRC32C();
    crc.update(b, off, len);
    long c = crc.getValue(); // unsigned 32-bit value
    long rotated = ((c >>> 15) | (c << 17)) & 0xffffffffL;
    return (int) ((rotated + 0xa282ead8L) & 0xffffffffL);
  }

  /** The framed bytes of one record. */
  public static byte[] frame(byte[] data) {
    ByteBuffer b = ByteBuffer.allocate(data.length + 16).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(data.length);
    b.putInt(maskedCrc32c(b.array(), 0, 8));
    b.put(data);
    b.putInt(maskedCrc32c(data, 0, data.length));
    return b.array();
  }

  /** The framed bytes of a whole file of records. */
  public static byte[] frameAll(List<byte[]> records) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] r : records) {
      out.write(frame(r), 0, r.length + 16);
    }
    return out.toByteArray();
  }

  /** A header (length and its masked CRC) announcing {@code length} bytes, CRC correct. */
  public static byte[] header(long length) {
    ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(length);
    b.putInt(maskedCrc32c(b.array(), 0, 8));
    return b.array();
  }

  /** Start offset of each record in the framed file, followed by the file's length. */
  public static long[] boundaries(List<byte[]> records) {
    long[] b = new long[records.size() + 1];
    for (int i = 0; i < records.size(); i++) {
      b[i + 1] = b[i] + records.get(i).length + 16;
    }
    return b;
  }

  /** {@code count} records of random bytes, of random lengths from 0 to {@code maxLength}. */
  public static List<byte[]> random(long seed, int count, int maxLength) {
    Random rnd = new Random(seed);
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      byte[] r = new byte[rnd.nextInt(maxLength + 1)];
      rnd.nextBytes(r);
      records.add(r);
    }
    return records;
  }

  /** One record of {@code length} random bytes. */
  public static byte[] randomBytes(long seed, int length) {
    byte[] r = new byte[length];
    new Random(seed).nextBytes(r);
    return r;
  }

  /** {@code count} empty records. */
  public static List<byte[]> empty(int count) {
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      records.add(new byte[0]);
    }
    return records;
  }

  /** Asserts that two record lists are equal, record by record. */
  public static void assertRecords(String message, List<byte[]> expected, List<byte[]> actual) {
    for (int i = 0; i < Math.min(expected.size(), actual.size()); i++) {
      assertArrayEquals(message + ": record " + i, expected.get(i), actual.get(i));
    }
    assertEquals(message + ": number of records", expected.size(), actual.size());
  }

  public static void assertRecords(List<byte[]> expected, List<byte[]> actual) {
    assertRecords("records", expected, actual);
  }

  /** Reads a local file. */
  public static byte[] readLocal(java.io.File file) throws IOException {
    return Files.readAllBytes(file.toPath());
  }

  /**
   * Replaces a local file's content behind Hadoop's back, and removes the {@code .NAME.crc}
   * checksum file that Hadoop's LocalFileSystem keeps next to it, so that reads see the new
   * bytes instead of failing the local checksum.
   */
  public static void writeLocal(java.io.File file, byte[] content) throws IOException {
    Files.write(file.toPath(), content);
    Files.deleteIfExists(file.toPath().resolveSibling("." + file.getName() + ".crc"));
  }

  /** Deletes a local file and its Hadoop checksum file. */
  public static void deleteLocal(java.io.File file) throws IOException {
    Files.delete(file.toPath());
    Files.deleteIfExists(file.toPath().resolveSibling("." + file.getName() + ".crc"));
  }

  public static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.write(p, 0, p.length);
    }
    return out.toByteArray();
  }
}
