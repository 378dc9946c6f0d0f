package org.tfrecordio.codec;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/** The masked CRC32C checksums of the TFRecord framing. */
public final class TFRecordCrc {
  private static final int MASK_DELTA = 0xa282ead8;
  // Little-endian views of byte arrays: one load or store per field.
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle INT_LE =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  private final CRC32C crc = new CRC32C();

  /** Returns the masked CRC32C of {@code len} bytes of {@code b} starting at {@code off}. */
  public int masked(byte[] b, int off, int len) {
    crc.reset();
    crc.update(b, off, len);
    return mask((int) crc.getValue());
  }

  /** Masks a raw CRC32C value as TFRecord does: rotate right by 15 bits, add a constant. */
  public static int mask(int crc) {
    return ((crc >>> 15) | (crc << 17)) + MASK_DELTA;
  }

  static long getLongLE(byte[] b, int off) {
    return (long) LONG_LE.get(b, off);
  }

  static int getIntLE(byte[] b, int off) {
    return (int) INT_LE.get(b, off);
  }

  static void putLongLE(byte[] b, int off, long v) {
    LONG_LE.set(b, off, v);
  }

  static void putIntLE(byte[] b, int off, int v) {
    INT_LE.set(b, off, v);
  }
}
