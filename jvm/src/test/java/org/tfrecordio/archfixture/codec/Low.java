package org.tfrecordio.archfixture.codec;

import org.tfrecordio.archfixture.spark.High;

/** A deliberate violation for ArchitectureTest: a low package reaching up to a high one. */
public final class Low {
  private Low() {}

  /** The upward dependency (and, with {@link High#low}, a package cycle). */
  public static String up() {
    return High.name();
  }
}
