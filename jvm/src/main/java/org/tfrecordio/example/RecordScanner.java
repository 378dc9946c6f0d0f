package org.tfrecordio.example;

import java.util.Arrays;

/**
 * Finds the map entries of one Example or SequenceExample record: for each feature (context or
 * Example feature) and each feature list, the byte range of its map entry, the last one winning
 * when a name repeats, as protobuf has it. Names come from {@link ByteKeyMap}s; unknown names
 * are skipped, or added when the scanner is told to (schema inference).
 */
public final class RecordScanner {
  /** The entries of one map (Features.feature or FeatureLists.feature_list) in one record. */
  public static final class Entries {
    public final ByteKeyMap keys;
    public final boolean addUnknown;
    public int[] stamp = new int[8];
    public int[] start = new int[8];
    public int[] end = new int[8];
    /**
     * The value field of the entry, when it has exactly one (else valueStart is -1 and the
     * entry is parsed again, merging its values).
     */
    public int[] valueStart = new int[8];
    public int[] valueEnd = new int[8];
    /**
     * What the previous records held at each entry position (its key's bytes and id, -1 for a
     * key not wanted): records of one dataset list their features in the same order, so a
     * key is usually matched by one comparison, without hashing. At most
     * {@link #PREDICTED_POSITIONS} positions are remembered.
     */
    private byte[][] predictedKey = new byte[8][];
    private int[] predictedId = new int[8];
    /** Ids present in the current record, in first-seen order. */
    public int[] touched = new int[8];
    public int count;

    public Entries(ByteKeyMap keys, boolean addUnknown) {
      this.keys = keys;
      this.addUnknown = addUnknown;
      grow(keys.size());
    }

    private void grow(int size) {
      if (size > stamp.length) {
        int n = Math.max(size, stamp.length * 2);
        stamp = Arrays.copyOf(stamp, n);
        start = Arrays.copyOf(start, n);
        end = Arrays.copyOf(end, n);
        valueStart = Arrays.copyOf(valueStart, n);
        valueEnd = Arrays.copyOf(valueEnd, n);
      }
    }

    /** True if id has an entry in the current record. */
    public boolean has(int id, int record) {
      return id < stamp.length && stamp[id] == record;
    }

    public void put(int id, int record, int s, int e, int vs, int ve) {
      if (id >= stamp.length) {
        grow(id + 1);
      }
      if (stamp[id] != record) {
        stamp[id] = record;
        if (count == touched.length) {
          touched = Arrays.copyOf(touched, count * 2);
        }
        touched[count++] = id;
      }
      start[id] = s;
      end[id] = e;
      valueStart[id] = vs;
      valueEnd[id] = ve;
    }

    /**
     * The id of the key {@code b[off, off + len)} of the map entry at {@code position} in the
     * current record; -1 if the key is not wanted. An unknown key is added first when the
     * scanner was told to add them.
     */
    public int lookup(int position, byte[] b, int off, int len) {
      if (position < predictedId.length) {
        byte[] k = predictedKey[position];
        if (k != null && k.length == len && same(k, b, off, len)) {
          return predictedId[position];
        }
      }
      int id = keys.find(b, off, len);
      if (id < 0 && addUnknown) {
        id = keys.add(b, off, len);
      }
      if (position < PREDICTED_POSITIONS) {
        if (position >= predictedId.length) {
          int n = Math.min(PREDICTED_POSITIONS, Math.max(position + 1, predictedId.length * 2));
          predictedKey = Arrays.copyOf(predictedKey, n);
          predictedId = Arrays.copyOf(predictedId, n);
        }
        byte[] k = predictedKey[position];
        if (k == null || k.length != len) {
          k = predictedKey[position] = new byte[len];
        }
        System.arraycopy(b, off, k, 0, len);
        predictedId[position] = id;
      }
      return id;
    }
  }

  /** Whether {@code k} equals {@code b[off, off + len)} ({@code k.length == len}). */
  private static boolean same(byte[] k, byte[] b, int off, int len) {
    if (len > 16) {
      return Arrays.equals(k, 0, len, b, off, off + len);
    }
    for (int i = 0; i < len; i++) {
      if (k[i] != b[off + i]) {
        return false;
      }
    }
    return true;
  }

  /** Entry positions per map whose keys are remembered ({@link Entries#lookup}). */
  static final int PREDICTED_POSITIONS = 1024;

  public final boolean sequence;
  public final Entries context;
  public final Entries featureLists;
  /** Stamp of the current record (never 0, so fresh slots never match). */
  public int record;
  public byte[] buf;
  private final WireReader top = new WireReader();
  private final WireReader map = new WireReader();
  private final WireReader entry = new WireReader();

  public RecordScanner(boolean sequence, ByteKeyMap contextKeys, ByteKeyMap featureListKeys,
      boolean addUnknown) {
    this.sequence = sequence;
    this.context = new Entries(contextKeys, addUnknown);
    this.featureLists = sequence ? new Entries(featureListKeys, addUnknown) : null;
  }

  /** Scans the record {@code b[off, off + len)}. */
  public void scan(byte[] b, int off, int len) {
    buf = b;
    if (++record == 0) {
      record = 1;
      Arrays.fill(context.stamp, 0);
      if (featureLists != null) {
        Arrays.fill(featureLists.stamp, 0);
      }
    }
    context.count = 0;
    if (featureLists != null) {
      featureLists.count = 0;
    }
    WireReader r = top.reset(b, off, off + len);
    while (r.more()) {
      int tag = r.tag();
      if (tag == ExampleWire.TAG1_LEN) {
        int e = r.len();
        scanMap(context, r.valueStart, e);
      } else if (sequence && tag == ExampleWire.TAG2_LEN) {
        int e = r.len();
        scanMap(featureLists, r.valueStart, e);
      } else {
        r.skip(tag);
      }
    }
  }

  private void scanMap(Entries entries, int start, int end) {
    WireReader r = map.reset(buf, start, end);
    int position = 0;
    while (r.more()) {
      int tag = r.tag();
      if (tag != ExampleWire.TAG1_LEN) {
        r.skip(tag);
        continue;
      }
      int entryEnd = r.len();
      int entryStart = r.valueStart;
      int keyStart = entryStart;
      int keyLen = 0;
      int values = 0;
      int vs = -1;
      int ve = -1;
      byte[] b = buf;
      // The usual layout, key then value, both shorter than 128 bytes: no general parse.
      int k = entryStart + 2;
      if (k <= entryEnd && b[entryStart] == ExampleWire.TAG1_LEN && b[entryStart + 1] >= 0) {
        int keyEnd = k + b[entryStart + 1];
        if (keyEnd + 2 <= entryEnd && b[keyEnd] == ExampleWire.TAG2_LEN && b[keyEnd + 1] >= 0
            && keyEnd + 2 + b[keyEnd + 1] == entryEnd) {
          int id = entries.lookup(position++, b, k, keyEnd - k);
          if (id >= 0) {
            entries.put(id, record, entryStart, entryEnd, keyEnd + 2, entryEnd);
          }
          continue;
        }
      }
      WireReader er = entry.reset(buf, entryStart, entryEnd);
      while (er.more()) {
        int t = er.tag();
        if (t == ExampleWire.TAG1_LEN) {
          int e = er.len();
          keyStart = er.valueStart;
          keyLen = e - keyStart;
        } else if (t == ExampleWire.TAG2_LEN) {
          ve = er.len();
          vs = er.valueStart;
          values++;
        } else {
          er.skip(t);
        }
      }
      int id = entries.lookup(position++, buf, keyStart, keyLen);
      if (id < 0) {
        continue;
      }
      if (values > 1) {
        vs = -1; // merge the value fields when asked for them
      } else if (values == 0) {
        vs = ve = entryStart; // no value: an empty message
      }
      entries.put(id, record, entryStart, entryEnd, vs, ve);
    }
  }

  /** Puts the Feature of entry {@code id} of {@code entries} into {@code view}. */
  public void feature(Entries entries, int id, FeatureView view) {
    int vs = entries.valueStart[id];
    if (vs >= 0) {
      view.reset(buf);
      view.merge(vs, entries.valueEnd[id]);
    } else {
      feature(entries.start[id], entries.end[id], view);
    }
  }

  /**
   * Merges the value(s) of the map entry {@code [start, end)} into {@code view}: the Feature of
   * a Features entry (reset first).
   */
  public void feature(int start, int end, FeatureView view) {
    view.reset(buf);
    WireReader er = entry.reset(buf, start, end);
    while (er.more()) {
      int t = er.tag();
      if (t == ExampleWire.TAG2_LEN) {
        int e = er.len();
        view.merge(er.valueStart, e);
      } else {
        er.skip(t);
      }
    }
  }

  /** The step Features of a FeatureLists entry {@code [start, end)}, as byte ranges. */
  public int steps(int start, int end, Steps steps) {
    steps.n = 0;
    WireReader er = entry.reset(buf, start, end);
    while (er.more()) {
      int t = er.tag();
      if (t == ExampleWire.TAG2_LEN) {
        int e = er.len();
        WireReader lr = map.reset(buf, er.valueStart, e);
        while (lr.more()) {
          int lt = lr.tag();
          if (lt == ExampleWire.TAG1_LEN) {
            int se = lr.len();
            steps.add(lr.valueStart, se);
          } else {
            lr.skip(lt);
          }
        }
      } else {
        er.skip(t);
      }
    }
    return steps.n;
  }

  /** Byte ranges of the steps (Feature messages) of one feature list. */
  public static final class Steps {
    public int n;
    public int[] start = new int[16];
    public int[] end = new int[16];

    public void add(int s, int e) {
      if (n == start.length) {
        start = Arrays.copyOf(start, n * 2);
        end = Arrays.copyOf(end, n * 2);
      }
      start[n] = s;
      end[n++] = e;
    }
  }
}
