package org.tfrecordio.codec;

import java.io.IOException;

/**
 * A TFRecord stream is damaged: a CRC mismatch, an impossible length, a truncated record, or a
 * compressed stream that cannot be decompressed past some point. The message names the file and
 * the byte offset of the record. In a compressed file the offset counts bytes of the
 * uncompressed stream: it is the offset of the first record that could not be read whole.
 */
public class CorruptRecordException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String source;
  private final long offset;
  private final String reason;

  public CorruptRecordException(String source, long offset, String reason) {
    super("corrupt TFRecord in " + source + " at byte offset " + offset + ": " + reason);
    this.source = source;
    this.offset = offset;
    this.reason = reason;
  }

  /** The file (or other source) that holds the damaged record. */
  public String getSource() {
    return source;
  }

  /** Byte offset of the damaged record in the uncompressed stream. */
  public long getOffset() {
    return offset;
  }

  /** What is wrong, without the file and offset. */
  public String getReason() {
    return reason;
  }
}
