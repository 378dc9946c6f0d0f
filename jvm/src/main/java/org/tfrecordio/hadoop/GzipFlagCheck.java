package org.tfrecordio.hadoop;

import java.io.IOException;
import org.apache.hadoop.io.compress.Decompressor;

/**
 * A gzip {@link Decompressor} that refuses a member whose header sets a reserved flag bit, as
 * RFC 1952 asks (zlib and TensorFlow refuse it too; Hadoop's built-in gzip decompressor reads
 * it as if the bits were clear). The member is refused at its header, before any byte of its
 * data is decompressed. Every call is otherwise passed to the wrapped decompressor, which the
 * caller still owns (and returns to the {@code CodecPool}).
 */
final class GzipFlagCheck implements Decompressor {
  /** What the refused member's error says. */
  static final String RESERVED_FLAGS =
      "the gzip header sets reserved flag bits (RFC 1952): the member cannot be read";

  private static final int RESERVED_BITS = 0xE0;

  private final Decompressor inner;
  private final byte[] head = new byte[4];
  private int headLength; // bytes of the current member's header seen, up to head.length
  private boolean refused;

  GzipFlagCheck(Decompressor inner) {
    this.inner = inner;
  }

  @Override
  public void setInput(byte[] b, int off, int len) {
    int n = Math.min(len, head.length - headLength);
    System.arraycopy(b, off, head, headLength, n);
    headLength += n;
    inner.setInput(b, off, len);
  }

  @Override
  public int decompress(byte[] b, int off, int len) throws IOException {
    if (refused || (headLength == head.length && (head[0] & 0xff) == 0x1f
        && (head[1] & 0xff) == 0x8b && (head[3] & RESERVED_BITS) != 0)) {
      refused = true;
      throw new IOException(RESERVED_FLAGS);
    }
    return inner.decompress(b, off, len);
  }

  /** The next input begins another member. */
  @Override
  public void reset() {
    headLength = 0;
    refused = false;
    inner.reset();
  }

  @Override
  public boolean needsInput() {
    return inner.needsInput();
  }

  @Override
  public void setDictionary(byte[] b, int off, int len) {
    inner.setDictionary(b, off, len);
  }

  @Override
  public boolean needsDictionary() {
    return inner.needsDictionary();
  }

  @Override
  public boolean finished() {
    return inner.finished();
  }

  @Override
  public int getRemaining() {
    return inner.getRemaining();
  }

  @Override
  public void end() {
    inner.end();
  }
}
