package org.tfrecordio.hadoop;

/** Hadoop counters of the TFRecord input formats. */
public enum TFRecordCounter {
  /** Damaged records (or stretches of damaged bytes) skipped under the skip policy. */
  CORRUPT_RECORDS_SKIPPED,
  /** Bytes skipped under the skip policy. */
  CORRUPT_BYTES_SKIPPED
}
