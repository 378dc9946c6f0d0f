package org.tfrecordio.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.codec.CorruptRecordException;
import org.tfrecordio.testutil.Compressed.Format;
import org.tfrecordio.testutil.Records;

/**
 * A seeded mutation fuzzer of our own files, read with the InputFormats' reader
 * ({@link SplitReader}, which both Hadoop APIs share) under both policies.
 *
 * <p>Two kinds of variant. Framing mutations (bit flips, overwrites, truncation, inserted and
 * appended bytes, a length field with its CRC recomputed) are applied to the framed records,
 * which are then stored plain, as gzip or zlib (by the JDK or by Hadoop's codecs) or as two
 * gzip members: the decoded stream is known, so the expectation is exact (the records kept, the
 * error offset, the skipped bytes). Stream mutations (bit flips and overwrites anywhere, in the
 * header or trailer, truncation, inserted and appended bytes, a damaged second member) are
 * applied to the compressed bytes: the reader must return only original records, in order, a
 * prefix under the fail policy ending in an error at the offset of the first record not
 * returned; under the skip policy that prefix, then only original records (not necessarily in
 * order: past damage in a deflate stream, back-references can replay earlier output, whole
 * records with valid CRCs included).
 *
 * <p>For every variant: no allocation beyond a bound (thread-allocated bytes), a read buffer no
 * larger than twice the maximum record, and a time limit on the whole run (a hang guard).
 *
 * <p>{@code -Dtfrecord.fuzz.variants=N} (default 3000) and {@code -Dtfrecord.fuzz.seed=S}, e.g.
 * {@code SBT_OPTS="-Dtfrecord.fuzz.variants=100000" bin/sbt "core/testOnly *MutationFuzzTest"}.
 */
public class MutationFuzzTest {
  private static final int MAX_RECORD = 64 * 1024;
  private static final long ALLOCATION_LIMIT = 24L << 20;

  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  private final Map<String, Integer> counts = new TreeMap<>();
  private long slowestNanos;
  private String slowest = "";

  private static final Configuration FAIL = newConf("fail");
  private static final Configuration SKIP = newConf("skip");

  private static Configuration conf(String policy) {
    return policy.equals("fail") ? FAIL : SKIP;
  }

  private static Configuration newConf(String policy) {
    Configuration c = new Configuration();
    c.set(TFRecordConfig.CORRUPT_POLICY, policy);
    c.setLong(TFRecordConfig.MAX_RECORD_BYTES, MAX_RECORD);
    c.setInt(TFRecordConfig.READ_BUFFER_BYTES, 4096);
    // The raw local file system: no checksum side files to open for every variant.
    c.set("fs.file.impl", org.apache.hadoop.fs.RawLocalFileSystem.class.getName());
    c.setBoolean("fs.file.impl.disable.cache", true);
    return c;
  }

  /** What reading one file gave. */
  private static final class Result {
    final List<byte[]> records = new ArrayList<>();
    CorruptRecordException error;
    long skippedRecords;
    long skippedBytes;
    int bufferCapacity;
  }

  private static Result read(Configuration conf, Path path) throws IOException {
    Result r = new Result();
    try (SplitReader reader = new SplitReader(conf, path, 0, Long.MAX_VALUE / 2)) {
      BytesWritable value = new BytesWritable();
      try {
        while (reader.next(value)) {
          r.records.add(value.copyBytes());
        }
      } catch (CorruptRecordException e) {
        r.error = e;
      }
      r.skippedRecords = reader.reader().getSkippedRecords();
      r.skippedBytes = reader.reader().getSkippedBytes();
      r.bufferCapacity = reader.reader().getBufferCapacity();
    }
    return r;
  }

  /** A framing mutation: the mutated framed bytes and what it damaged. */
  private static final class Mutation {
    String name;
    byte[] bytes;
    // Records lost (overlapping the damage), in the original numbering.
    boolean[] lost;
    // Whether the stream holds damage (an error under fail), and where (index of the record
    // before which it lies: the error offset is bounds[firstDamaged]).
    int firstDamaged = -1;
  }

  private static Mutation mutateFraming(Random rnd, List<byte[]> records, long[] bounds,
      byte[] framed) {
    Mutation m = new Mutation();
    int n = records.size();
    m.lost = new boolean[n];
    int len = framed.length;
    switch (rnd.nextInt(6)) {
      case 0: { // bit flip
        int p = rnd.nextInt(len);
        m.bytes = framed.clone();
        m.bytes[p] ^= (byte) (1 << rnd.nextInt(8));
        m.name = "flip";
        damageRange(m, bounds, p, p + 1);
        break;
      }
      case 1: { // overwrite with different bytes
        int p = rnd.nextInt(len);
        int k = Math.min(1 + rnd.nextInt(24), len - p);
        m.bytes = framed.clone();
        for (int i = p; i < p + k; i++) {
          m.bytes[i] ^= (byte) (1 + rnd.nextInt(255));
        }
        m.name = "overwrite";
        damageRange(m, bounds, p, p + k);
        break;
      }
      case 2: { // truncation
        int c = rnd.nextInt(len);
        m.bytes = Arrays.copyOf(framed, c);
        m.name = "truncate";
        for (int i = 0; i < n; i++) {
          m.lost[i] = bounds[i + 1] > c;
        }
        int at = Arrays.binarySearch(bounds, c);
        if (at < 0) { // not on a boundary: the record cut is damaged
          m.firstDamaged = -at - 2;
        }
        break;
      }
      case 3: { // inserted bytes
        int p = rnd.nextInt(len + 1);
        byte[] junk = new byte[1 + rnd.nextInt(40)];
        rnd.nextBytes(junk);
        m.bytes = Records.concat(Arrays.copyOf(framed, p), junk,
            Arrays.copyOfRange(framed, p, len));
        m.name = "insert";
        int at = Arrays.binarySearch(bounds, p);
        m.firstDamaged = at >= 0 ? at : -at - 2;
        if (at < 0) {
          m.lost[m.firstDamaged] = true;
        }
        break;
      }
      case 4: { // appended bytes
        byte[] junk = new byte[1 + rnd.nextInt(40)];
        rnd.nextBytes(junk);
        m.bytes = Records.concat(framed, junk);
        m.name = "append";
        m.firstDamaged = n;
        break;
      }
      default: { // a length field with its CRC recomputed
        int j = rnd.nextInt(n);
        long old = records.get(j).length;
        long[] choices = {old + 1 + rnd.nextInt(16), Math.max(0, old - 1 - rnd.nextInt(16)),
            rnd.nextInt(MAX_RECORD + 1), 256L << 20, len - bounds[j] - 16 + rnd.nextInt(8) - 4};
        long length = choices[rnd.nextInt(choices.length)];
        if (length == old || length < 0) {
          length = old + 1;
        }
        m.bytes = framed.clone();
        System.arraycopy(Records.header(length), 0, m.bytes, (int) bounds[j], 12);
        m.name = "length";
        m.lost[j] = true;
        m.firstDamaged = j;
        break;
      }
    }
    return m;
  }

  private static void damageRange(Mutation m, long[] bounds, int lo, int hi) {
    for (int i = 0; i < m.lost.length; i++) {
      if (bounds[i] < hi && bounds[i + 1] > lo) {
        m.lost[i] = true;
        if (m.firstDamaged < 0) {
          m.firstDamaged = i;
        }
      }
    }
  }

  private static byte[] encode(int encoding, byte[] plain, Random rnd) throws IOException {
    switch (encoding) {
      case 0:
        return plain;
      case 1:
        return Format.GZIP.jdk(plain);
      case 2:
        return Format.GZIP.hadoop(plain);
      case 3:
        return Format.ZLIB.jdk(plain);
      case 4:
        return Format.ZLIB.hadoop(plain);
      default: { // two gzip members, split anywhere
        int p = rnd.nextInt(plain.length + 1);
        return Records.concat(Format.GZIP.jdk(Arrays.copyOf(plain, p)),
            Format.GZIP.hadoop(Arrays.copyOfRange(plain, p, plain.length)));
      }
    }
  }

  private static final String[] ENCODINGS = {"plain", "gzip-jdk", "gzip-hadoop", "zlib-jdk",
      "zlib-hadoop", "gzip-members"};

  private Path file(int encoding) {
    String ext = encoding == 0 ? "" : (encoding == 3 || encoding == 4) ? ".deflate" : ".gz";
    return new Path(new File(tmp.getRoot(), "variant.tfrecord" + ext).toURI().toString());
  }

  private void write(Path path, byte[] bytes) throws IOException {
    Records.writeLocal(new File(path.toUri()), bytes);
  }

  private static List<byte[]> baseRecords(Random rnd) {
    List<byte[]> records = Records.random(rnd.nextLong(), 1 + rnd.nextInt(40), rnd.nextInt(400));
    if (rnd.nextInt(4) == 0) {
      records.set(rnd.nextInt(records.size()), Records.randomBytes(rnd.nextLong(), 5000));
    }
    return records;
  }

  @Test(timeout = 900_000) // a hang guard; the default run takes well under a minute
  public void mutatedFilesYieldOnlyOriginalRecordsInOrderWithExactOffsets() throws IOException {
    int variants = Integer.getInteger("tfrecord.fuzz.variants", 3000);
    long seed = Long.getLong("tfrecord.fuzz.seed", 20261123L);
    int only = Integer.getInteger("tfrecord.fuzz.only", -1); // to replay one variant
    Random rnd = new Random(seed);
    for (int v = 0; v < variants; v++) {
      checking = only < 0 || v == only;
      List<byte[]> records = baseRecords(rnd);
      long[] bounds = Records.boundaries(records);
      byte[] framed = Records.frameAll(records);
      int encoding = rnd.nextInt(ENCODINGS.length);
      boolean streamMutation = encoding != 0 && rnd.nextBoolean();
      String what;
      long start = System.nanoTime();
      if (streamMutation) {
        byte[] stream = encode(encoding, framed, rnd);
        String kind = mutateStream(rnd, stream, encoding);
        what = "variant " + v + " (seed " + seed + "): " + ENCODINGS[encoding] + " " + kind;
        List<byte[]> expected = records;
        if (kind.equals("damaged-second-member")) { // its records follow the first's
          expected = new ArrayList<>(records);
          expected.addAll(records);
        }
        checkStream(what, expected, Records.boundaries(expected), file(encoding), lastStream);
      } else {
        Mutation m = mutateFraming(rnd, records, bounds, framed);
        what = "variant " + v + " (seed " + seed + "): " + m.name + " then "
            + ENCODINGS[encoding];
        Path path = file(encoding);
        write(path, encode(encoding, m.bytes, rnd));
        checkFraming(what, records, bounds, m, path);
      }
      long took = System.nanoTime() - start;
      if (took > slowestNanos) {
        slowestNanos = took;
        slowest = what;
      }
      counts.merge(what.replaceFirst("variant \\d+ \\(seed \\d+\\): ", ""), 1, Integer::sum);
    }
    System.err.println("MutationFuzzTest: " + variants + " variants, seed " + seed
        + ", slowest " + slowestNanos / 1_000_000 + " ms (" + slowest + "), by kind " + counts);
    assertTrue(only >= 0 || counts.size() > 40);
  }

  private byte[] lastStream;
  private boolean checking = true;

  private String mutateStream(Random rnd, byte[] stream, int encoding) {
    byte[] s = stream.clone();
    int len = s.length;
    String kind;
    switch (rnd.nextInt(8)) {
      case 0:
        s[rnd.nextInt(len)] ^= (byte) (1 << rnd.nextInt(8));
        kind = "flip";
        break;
      case 1: {
        int p = rnd.nextInt(len);
        for (int i = p; i < Math.min(len, p + 1 + rnd.nextInt(16)); i++) {
          s[i] ^= (byte) (1 + rnd.nextInt(255));
        }
        kind = "overwrite";
        break;
      }
      case 2:
        s[rnd.nextInt(Math.min(len, 10))] ^= (byte) (1 + rnd.nextInt(255));
        kind = "header";
        break;
      case 3:
        s[len - 1 - rnd.nextInt(Math.min(len, encoding >= 3 && encoding <= 4 ? 4 : 8))] ^=
            (byte) (1 + rnd.nextInt(255));
        kind = "trailer";
        break;
      case 4:
        s = Arrays.copyOf(s, rnd.nextInt(len));
        kind = "truncate";
        break;
      case 5: {
        int p = rnd.nextInt(len + 1);
        byte[] junk = new byte[1 + rnd.nextInt(32)];
        rnd.nextBytes(junk);
        s = Records.concat(Arrays.copyOf(s, p), junk, Arrays.copyOfRange(s, p, len));
        kind = "insert";
        break;
      }
      case 6: {
        byte[] junk = new byte[1 + rnd.nextInt(32)];
        rnd.nextBytes(junk);
        s = Records.concat(s, junk);
        kind = "append";
        break;
      }
      default: { // a second member (or stream) of the same records, damaged
        byte[] again = stream.clone();
        again[again.length / 2] ^= (byte) (1 + rnd.nextInt(255));
        s = Records.concat(s, again);
        kind = "damaged-second-member";
        break;
      }
    }
    lastStream = s;
    return kind;
  }

  /** Exact expectations: the decoded stream is the mutated framing. */
  private void checkFraming(String what, List<byte[]> records, long[] bounds, Mutation m,
      Path path) throws IOException {
    if (!checking) {
      return;
    }
    int k = m.firstDamaged < 0 ? countKept(m, records.size()) : m.firstDamaged;
    Result fail = readBounded(what, conf("fail"), path);
    Records.assertRecords(what + " fail", records.subList(0, k), fail.records);
    if (m.firstDamaged < 0) {
      assertEquals(what + ": no error", null, fail.error);
    } else {
      assertTrue(what + ": an error", fail.error != null);
      assertEquals(what + " offset", bounds[m.firstDamaged], fail.error.getOffset());
      assertTrue(what, fail.error.getMessage().contains(path.toString()));
    }

    Result skip = readBounded(what, conf("skip"), path);
    List<byte[]> kept = new ArrayList<>();
    long keptBytes = 0;
    for (int i = 0; i < records.size(); i++) {
      if (!m.lost[i]) {
        kept.add(records.get(i));
        keptBytes += records.get(i).length + 16;
      }
    }
    if (m.firstDamaged < 0) { // a cut on a boundary: the records before it
      kept = kept.subList(0, k);
      keptBytes = bounds[k];
    }
    Records.assertRecords(what + " skip", kept, skip.records);
    assertEquals(what + " skipped bytes", m.bytes.length - keptBytes, skip.skippedBytes);
    assertEquals(what + " skipped at all", m.firstDamaged >= 0, skip.skippedRecords > 0);
  }

  private static int countKept(Mutation m, int n) {
    int k = 0;
    while (k < n && !m.lost[k]) {
      k++;
    }
    return k;
  }

  /** Property expectations: the decoded stream is unknown past the damage. */
  private void checkStream(String what, List<byte[]> records, long[] bounds, Path path,
      byte[] bytes) throws IOException {
    if (!checking) {
      return;
    }
    write(path, bytes);
    Result fail = readBounded(what, conf("fail"), path);
    int k = fail.records.size();
    Records.assertRecords(what + " fail", records.subList(0, Math.min(k, records.size())),
        fail.records);
    if (fail.error != null) {
      assertEquals(what + " offset", bounds[k], fail.error.getOffset());
      assertTrue(what, fail.error.getMessage().contains(path.toString()));
    } else {
      assertEquals(what + ": no error, so every record", records.size(), k);
    }
    Result skip = readBounded(what, conf("skip"), path);
    Records.assertRecords(what + " skip starts with the fail prefix", fail.records,
        skip.records.subList(0, Math.min(k, skip.records.size())));
    // Past damage in a deflate stream, back-references can replay earlier output: whole,
    // CRC-valid copies of earlier records. So after the prefix, only membership is certain.
    for (int i = k; i < skip.records.size(); i++) {
      assertTrue(what + ": skip returned a record that is not an original record",
          contains(records, skip.records.get(i)));
    }
    assertEquals(what + " skipped at all", fail.error != null, skip.skippedRecords > 0);
  }

  private static boolean contains(List<byte[]> records, byte[] record) {
    for (byte[] r : records) {
      if (Arrays.equals(r, record)) {
        return true;
      }
    }
    return false;
  }

  private static void assertInOrderSubsequence(String what, List<byte[]> original,
      List<byte[]> read) {
    int i = 0;
    for (byte[] r : read) {
      while (i < original.size() && !Arrays.equals(original.get(i), r)) {
        i++;
      }
      if (i == original.size()) {
        fail(what + ": a record that is not an original record, or out of order");
      }
      i++;
    }
  }

  /** Reads, checking the memory bound. */
  private Result readBounded(String what, Configuration conf, Path path) throws IOException {
    com.sun.management.ThreadMXBean bean =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long id = Thread.currentThread().getId();
    long before = bean.getThreadAllocatedBytes(id);
    Result r = read(conf, path);
    long allocated = bean.getThreadAllocatedBytes(id) - before;
    assertTrue(what + ": allocated " + allocated, allocated < ALLOCATION_LIMIT);
    assertTrue(what + ": buffer " + r.bufferCapacity, r.bufferCapacity <= 2 * (MAX_RECORD + 16));
    return r;
  }
}
