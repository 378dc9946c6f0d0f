package org.tfrecordio.codec;

import java.util.zip.CRC32C;

/** The masked CRC32C checksums of the TFRecord framing. */
public final class TFRecordCrc {
  private static final int MASK_DELTA = 0xa282ead8;

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
    return (b[off] & 0xffL)
        | (b[off + 1] & 0xffL) << 8
        | (b[off + 2] & 0xffL) << 16
        | (b[off + 3] & 0xffL) << 24
        | (b[off + 4] & 0xffL) << 32
        | (b[off + 5] & 0xffL) << 40
        | (b[off + 6] & 0xffL) << 48
        | (b[off + 7] & 0xffL) << 56;
  }

  static int getIntLE(byte[] b, int off) {
    return (b[off] & 0xff)
        | (b[off + 1] & 0xff) << 8
        | (b[off + 2] & 0xff) << 16
        | (b[off + 3] & 0xff) << 24;
  }

  static void putLongLE(byte[] b, int off, long v) {
    for (int i = 0; i < 8; i++) {
      b[off + i] = (byte) (v >>> (8 * i));
    }
  }

  static void putIntLE(byte[] b, int off, int v) {
    for (int i = 0; i < 4; i++) {
      b[off + i] = (byte) (v >>> (8 * i));
    }
  }
}
