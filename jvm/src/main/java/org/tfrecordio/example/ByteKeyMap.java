package org.tfrecordio.example;

import java.util.Arrays;

/**
 * Feature names (UTF-8 bytes) to dense ids 0, 1, 2..., looked up straight from a record's
 * bytes so that decoding allocates no String per feature.
 */
public final class ByteKeyMap {
  private byte[][] keys = new byte[8][];
  private int[] hashes = new int[8];
  private int size;
  private int[] table = new int[16]; // id + 1, 0 for empty
  private int mask = 15;

  public int size() {
    return size;
  }

  public byte[] key(int id) {
    return keys[id];
  }

  private static int hash(byte[] b, int off, int len) {
    int h = len;
    for (int i = off, end = off + len; i < end; i++) {
      h = 31 * h + b[i];
    }
    h *= 0x9E3779B9;
    return h ^ (h >>> 16);
  }

  /** The id of the key {@code b[off, off + len)}, or -1. */
  public int find(byte[] b, int off, int len) {
    int h = hash(b, off, len);
    int i = h & mask;
    while (true) {
      int slot = table[i];
      if (slot == 0) {
        return -1;
      }
      int id = slot - 1;
      if (hashes[id] == h) {
        byte[] k = keys[id];
        if (k.length == len && Arrays.equals(k, 0, len, b, off, off + len)) {
          return id;
        }
      }
      i = (i + 1) & mask;
    }
  }

  /** Adds a key that is not in the map yet; returns its id. */
  public int add(byte[] b, int off, int len) {
    if (size == keys.length) {
      keys = Arrays.copyOf(keys, size * 2);
      hashes = Arrays.copyOf(hashes, size * 2);
    }
    if ((size + 1) * 2 > table.length) {
      rehash(table.length * 2);
    }
    int id = size++;
    keys[id] = Arrays.copyOfRange(b, off, off + len);
    int h = hash(b, off, len);
    hashes[id] = h;
    insert(id, h);
    return id;
  }

  private void insert(int id, int h) {
    int i = h & mask;
    while (table[i] != 0) {
      i = (i + 1) & mask;
    }
    table[i] = id + 1;
  }

  private void rehash(int capacity) {
    table = new int[capacity];
    mask = capacity - 1;
    for (int id = 0; id < size; id++) {
      insert(id, hashes[id]);
    }
  }
}
