package org.tfrecordio.example;

import static org.tfrecordio.example.ExampleWire.*;

import java.util.Arrays;

/** Decoded values of one Feature, in scratch arrays reused from record to record. */
public final class FeatureValues {
  public int n;
  public long[] longs = new long[16];
  public float[] floats = new float[16];
  /** BYTES: value i is {@code buf[starts[i], starts[i] + lens[i])}. */
  public int[] starts = new int[16];
  public int[] lens = new int[16];
  public byte[] buf;

  public void addLong(long v) {
    if (n == longs.length) {
      longs = Arrays.copyOf(longs, n * 2);
    }
    longs[n++] = v;
  }

  public void addFloat(float v) {
    if (n == floats.length) {
      floats = Arrays.copyOf(floats, n * 2);
    }
    floats[n++] = v;
  }

  public void ensureFloats(int extra) {
    if (n + extra > floats.length) {
      floats = Arrays.copyOf(floats, Math.max(floats.length * 2, n + extra));
    }
  }

  public void addBytes(int start, int len) {
    if (n == starts.length) {
      starts = Arrays.copyOf(starts, n * 2);
      lens = Arrays.copyOf(lens, n * 2);
    }
    starts[n] = start;
    lens[n++] = len;
  }
}
