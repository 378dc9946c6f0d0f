package org.tfrecordio.codec;

import java.io.IOException;
import org.tfrecordio.hadoop.TFRecordConfig;

/**
 * A TFRecord stream is damaged: a CRC mismatch, an impossible length or a truncated record.
 * The message names the file and the byte offset (in the uncompressed stream) of the record.
 */
public class CorruptRecordException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String source;
  private final long offset;

  public CorruptRecordException(String source, long offset, String reason) {
    super("corrupt TFRecord in " + source + " at byte offset " + offset + ": " + reason
        + " (set " + TFRecordConfig.CORRUPT_POLICY
        + "=skip to read past damaged records)");
    this.source = source;
    this.offset = offset;
  }

  /** The file (or other source) that holds the damaged record. */
  public String getSource() {
    return source;
  }

  /** Byte offset of the damaged record in the uncompressed stream. */
  public long getOffset() {
    return offset;
  }
}
