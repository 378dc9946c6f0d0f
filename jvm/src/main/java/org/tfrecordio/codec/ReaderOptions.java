package org.tfrecordio.codec;

/**
 * What a {@link TFRecordReader} checks and how it reacts to damage. Knows no configuration
 * system (the Hadoop layer maps its keys onto these).
 */
public final class ReaderOptions {
  /** Default largest record: 256 MiB. */
  public static final long DEFAULT_MAX_RECORD_BYTES = 256L * 1024 * 1024;

  long maxRecordBytes = DEFAULT_MAX_RECORD_BYTES;
  boolean skipCorrupt;
  boolean verify = true;
  int bufferBytes = 1 << 20;
  String maxRecordBytesName = "maxRecordBytes";
  String skipAdvice = "read with the skip policy to read past damaged records";

  public ReaderOptions maxRecordBytes(long max) {
    if (max <= 0 || max > Integer.MAX_VALUE - 64) {
      throw new IllegalArgumentException(maxRecordBytesName + " must be between 1 and "
          + (Integer.MAX_VALUE - 64) + ", not " + max);
    }
    this.maxRecordBytes = max;
    return this;
  }

  public ReaderOptions skipCorrupt(boolean skip) {
    this.skipCorrupt = skip;
    return this;
  }

  public ReaderOptions verify(boolean verify) {
    this.verify = verify;
    return this;
  }

  /** Initial size of the read buffer (it grows for larger records). */
  public ReaderOptions bufferBytes(int bytes) {
    this.bufferBytes = Math.max(bytes, 64);
    return this;
  }

  /**
   * How messages name the setting of the largest record, and what they advise under the
   * fail policy (e.g. the configuration key that selects the skip policy).
   */
  public ReaderOptions messages(String maxRecordBytesName, String skipAdvice) {
    this.maxRecordBytesName = maxRecordBytesName;
    this.skipAdvice = skipAdvice;
    return this;
  }

  /** Parses a policy name ({@code fail} or {@code skip}). */
  public ReaderOptions corruptPolicy(String policy) {
    if ("skip".equalsIgnoreCase(policy)) {
      return skipCorrupt(true);
    }
    if ("fail".equalsIgnoreCase(policy)) {
      return skipCorrupt(false);
    }
    throw new IllegalArgumentException(
        "the corrupt policy must be 'fail' or 'skip', not '" + policy + "'");
  }

  public long getMaxRecordBytes() {
    return maxRecordBytes;
  }

  public boolean isSkipCorrupt() {
    return skipCorrupt;
  }
}
