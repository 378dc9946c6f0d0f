package org.tfrecordio.archfixture.spark;

import org.tfrecordio.archfixture.codec.Low;

/** A deliberate violation for ArchitectureTest: the high side of {@link Low}'s cycle. */
public final class High {
  private High() {}

  /** What {@link Low#up} reaches up for. */
  public static String name() {
    return "high";
  }

  /** The downward dependency, allowed by itself. */
  public static String low() {
    return Low.up();
  }
}
