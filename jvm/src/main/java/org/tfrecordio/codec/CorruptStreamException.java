package org.tfrecordio.codec;

import java.io.IOException;

/**
 * Thrown by an input stream whose encoding is damaged (for example a compressed stream that
 * cannot be decompressed any further): every byte the stream returned before is as decoded, and
 * nothing more can be read from it. {@link TFRecordReader} turns it into a
 * {@link CorruptRecordException} at the first record that could not be read whole.
 */
public class CorruptStreamException extends IOException {
  private static final long serialVersionUID = 1L;

  public CorruptStreamException(String message, Throwable cause) {
    super(message, cause);
  }
}
