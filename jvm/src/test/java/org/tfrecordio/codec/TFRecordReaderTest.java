package org.tfrecordio.codec;

import static org.hamcrest.CoreMatchers.containsString;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.Test;
import org.tfrecordio.testutil.Records;

public class TFRecordReaderTest {
  private static final String SOURCE = "hdfs://nn/data/part-00007.tfrecord";

  /** A stream that hands out at most {@code chunk} bytes per read, as sockets and HDFS may. */
  private static final class TrickleStream extends InputStream {
    private final byte[] data;
    private final int chunk;
    private int pos;

    TrickleStream(byte[] data, int chunk) {
      this.data = data;
      this.chunk = chunk;
    }

    @Override
    public int read() {
      return pos < data.length ? data[pos++] & 0xff : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (len == 0) {
        return 0;
      }
      if (pos >= data.length) {
        return -1;
      }
      int n = Math.min(Math.min(len, chunk), data.length - pos);
      System.arraycopy(data, pos, b, off, n);
      pos += n;
      return n;
    }
  }

  private static ReaderOptions options() {
    return new ReaderOptions();
  }

  private static TFRecordReader reader(byte[] file, ReaderOptions options) {
    return new TFRecordReader(new ByteArrayInputStream(file), SOURCE, 0, options);
  }

  private static List<byte[]> readAll(TFRecordReader reader) throws IOException {
    List<byte[]> records = new ArrayList<>();
    while (reader.next()) {
      records.add(Arrays.copyOfRange(reader.getData(), reader.getDataOffset(),
          reader.getDataOffset() + reader.getLength()));
    }
    return records;
  }

  private static List<byte[]> readAll(byte[] file, ReaderOptions options)
      throws IOException {
    try (TFRecordReader r = reader(file, options)) {
      return readAll(r);
    }
  }

  private static CorruptRecordException readExpectingCorruption(byte[] file,
      ReaderOptions options) {
    return assertThrows(CorruptRecordException.class, () -> readAll(file, options));
  }

  private static void assertNamesSourceAndOffset(CorruptRecordException e, long offset) {
    assertEquals(SOURCE, e.getSource());
    assertEquals(offset, e.getOffset());
    assertThat(e.getMessage(), containsString(SOURCE));
    assertThat(e.getMessage(), containsString("byte offset " + offset));
  }

  // ---- round trips ----

  @Test
  public void randomRecordsRoundTrip() throws IOException {
    List<byte[]> records = Records.random(11, 500, 2000);
    Records.assertRecords(records, readAll(Records.frameAll(records), options()));
  }

  @Test
  public void readsTheRecordsOfTheTensorFlowVector() throws IOException {
    List<byte[]> records = Arrays.asList(new byte[0], "a".getBytes(StandardCharsets.US_ASCII),
        "TFRecord".getBytes(StandardCharsets.US_ASCII));
    Records.assertRecords(records, readAll(Records.frameAll(records), options()));
  }

  @Test
  public void emptyStreamHasNoRecords() throws IOException {
    assertEquals(0, readAll(new byte[0], options()).size());
  }

  @Test
  public void emptyRecordsRoundTrip() throws IOException {
    List<byte[]> onlyEmpty = Records.empty(100);
    Records.assertRecords(onlyEmpty, readAll(Records.frameAll(onlyEmpty), options()));
    List<byte[]> mixed = Records.random(12, 100, 3); // a quarter of them empty
    Records.assertRecords(mixed, readAll(Records.frameAll(mixed), options().bufferBytes(64)));
  }

  @Test
  public void recordsLargerThanTheReadBufferAreReadWhole() throws IOException {
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      records.add(Records.randomBytes(100 + i, i % 3 == 0 ? 5000 + i : i)); // big ones: 5000+
    }
    records.add(Records.randomBytes(200, 49)); // 49 + 16 = 65: one byte over a 64-byte buffer
    records.add(Records.randomBytes(201, 48)); // exactly fills it
    byte[] file = Records.frameAll(records);
    Records.assertRecords(records, readAll(file, options().bufferBytes(64)));
    try (TFRecordReader r = new TFRecordReader(new TrickleStream(file, 7), SOURCE, 0,
        options().bufferBytes(64))) {
      Records.assertRecords("7-byte reads", records, readAll(r));
    }
  }

  @Test
  public void readsCorrectlyFromAStreamThatReturnsFewBytesPerRead() throws IOException {
    List<byte[]> records = Records.random(13, 300, 200);
    byte[] file = Records.frameAll(records);
    for (int chunk : new int[] {1, 3, 13, 100}) {
      try (TFRecordReader r = new TFRecordReader(new TrickleStream(file, chunk), SOURCE, 0,
          options().bufferBytes(128))) {
        Records.assertRecords(chunk + "-byte reads", records, readAll(r));
      }
    }
  }

  @Test
  public void recordOffsetAndPositionFollowTheFraming() throws IOException {
    List<byte[]> records = Records.random(14, 40, 150);
    long[] bounds = Records.boundaries(records);
    try (TFRecordReader r = reader(Records.frameAll(records), options().bufferBytes(64))) {
      for (int i = 0; i < records.size(); i++) {
        assertTrue(r.next());
        assertEquals(bounds[i], r.getRecordOffset());
        assertEquals(bounds[i + 1], r.getPosition());
        assertEquals(records.get(i).length, r.getLength());
      }
      assertFalse(r.next());
      assertEquals(0, r.getSkippedRecords());
    }
  }

  @Test
  public void offsetsCountFromTheGivenStartOffset() throws IOException {
    List<byte[]> records = Records.random(15, 5, 50);
    long[] bounds = Records.boundaries(records);
    try (TFRecordReader r = new TFRecordReader(
        new ByteArrayInputStream(Records.frameAll(records)), SOURCE, 1000, options())) {
      assertTrue(r.next());
      assertEquals(1000, r.getRecordOffset());
      assertTrue(r.next());
      assertEquals(1000 + bounds[1], r.getRecordOffset());
    }
  }

  // ---- ranges ----

  @Test
  public void readingStopsAtTheFirstRecordStartingAtOrAfterTheEnd() throws IOException {
    List<byte[]> records = Records.random(16, 10, 50);
    long[] bounds = Records.boundaries(records);
    byte[] file = Records.frameAll(records);
    try (TFRecordReader r = reader(file, options())) {
      r.setEnd(bounds[3]);
      Records.assertRecords(records.subList(0, 3), readAll(r));
    }
    try (TFRecordReader r = reader(file, options())) {
      r.setEnd(bounds[3] + 1); // record 3 starts before the end: it is read whole
      Records.assertRecords(records.subList(0, 4), readAll(r));
    }
  }

  @Test
  public void syncMovesToTheNextRecordFromInsideOne() throws IOException {
    List<byte[]> records = Records.random(17, 10, 50);
    records.set(2, Records.randomBytes(18, 40));
    long[] bounds = Records.boundaries(records);
    byte[] file = Records.frameAll(records);
    long start = bounds[2] + 5;
    try (TFRecordReader r = new TFRecordReader(
        new ByteArrayInputStream(file, (int) start, file.length), SOURCE, start, options())) {
      assertTrue(r.sync());
      assertEquals(bounds[3], r.getPosition());
      Records.assertRecords(records.subList(3, 10), readAll(r));
    }
  }

  @Test
  public void syncFindsNothingWhenNoRecordStartsBeforeTheEnd() throws IOException {
    List<byte[]> records = Arrays.asList(Records.randomBytes(19, 100), new byte[3]);
    long[] bounds = Records.boundaries(records);
    byte[] file = Records.frameAll(records);
    long start = 10;
    try (TFRecordReader r = new TFRecordReader(
        new ByteArrayInputStream(file, (int) start, file.length), SOURCE, start, options())) {
      r.setEnd(bounds[1]);
      assertFalse(r.sync());
      assertFalse(r.next());
    }
  }

  // ---- lengths ----

  /** Bytes allocated by this thread while {@code body} runs, if the JVM can tell. */
  private static long allocatedBy(ThrowingRunnable body) throws Exception {
    java.lang.management.ThreadMXBean bean = ManagementFactory.getThreadMXBean();
    assumeTrue(bean instanceof com.sun.management.ThreadMXBean);
    com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) bean;
    assumeTrue(threads.isThreadAllocatedMemorySupported());
    threads.setThreadAllocatedMemoryEnabled(true);
    long id = Thread.currentThread().getId();
    long before = threads.getThreadAllocatedBytes(id);
    body.run();
    return threads.getThreadAllocatedBytes(id) - before;
  }

  private interface ThrowingRunnable {
    void run() throws Exception;
  }

  @Test
  public void lengthAboveTheMaximumFailsFastWithoutAllocatingIt() throws Exception {
    List<byte[]> good = Records.random(20, 3, 100);
    long offset = Records.boundaries(good)[3];
    // A header claiming 1 GiB, with a valid length checksum, followed by a little data.
    byte[] file = Records.concat(Records.frameAll(good), Records.header(1L << 30),
        Records.randomBytes(21, 100));
    TFRecordReader r = reader(file, options().maxRecordBytes(1024));
    for (int i = 0; i < 3; i++) {
      assertTrue(r.next());
    }
    CorruptRecordException[] thrown = new CorruptRecordException[1];
    long allocated = allocatedBy(() -> {
      thrown[0] = assertThrows(CorruptRecordException.class, r::next);
    });
    assertNamesSourceAndOffset(thrown[0], offset);
    assertThat(thrown[0].getMessage(), containsString(String.valueOf(1L << 30)));
    assertTrue("allocated " + allocated + " bytes", allocated < 1024 * 1024);
  }

  @Test
  public void lengthOf2To40FailsUnderTheDefaultMaximum() throws Exception {
    byte[] file = Records.concat(Records.header(1L << 40), Records.randomBytes(22, 64));
    TFRecordReader r = reader(file, options());
    CorruptRecordException[] thrown = new CorruptRecordException[1];
    long allocated = allocatedBy(() -> {
      thrown[0] = assertThrows(CorruptRecordException.class, r::next);
    });
    assertNamesSourceAndOffset(thrown[0], 0);
    assertTrue("allocated " + allocated + " bytes", allocated < 1024 * 1024);
  }

  @Test
  public void negativeLengthFailsFast() throws Exception {
    List<byte[]> good = Records.random(23, 2, 10);
    long offset = Records.boundaries(good)[2];
    // 0xffffffffffffffff: negative as a Java long, 2^64 - 1 as TFRecord's uint64.
    byte[] file = Records.concat(Records.frameAll(good), Records.header(-1L), new byte[64]);
    TFRecordReader r = reader(file, options());
    assertTrue(r.next());
    assertTrue(r.next());
    CorruptRecordException[] thrown = new CorruptRecordException[1];
    long allocated = allocatedBy(() -> {
      thrown[0] = assertThrows(CorruptRecordException.class, r::next);
    });
    assertNamesSourceAndOffset(thrown[0], offset);
    assertThat(thrown[0].getMessage(), containsString("18446744073709551615"));
    assertTrue("allocated " + allocated + " bytes", allocated < 1024 * 1024);
  }

  @Test
  public void recordOfExactlyTheMaximumIsAccepted() throws IOException {
    List<byte[]> records = Arrays.asList(Records.randomBytes(24, 1024), new byte[5]);
    Records.assertRecords(records,
        readAll(Records.frameAll(records), options().maxRecordBytes(1024).bufferBytes(64)));
    CorruptRecordException e = readExpectingCorruption(
        Records.frameAll(Arrays.asList(Records.randomBytes(24, 1025))),
        options().maxRecordBytes(1024));
    assertNamesSourceAndOffset(e, 0);
  }

  // ---- damage under the fail policy ----

  /** A file of records where record {@code damaged} has byte {@code at} (from its start) flipped. */
  private static byte[] flipped(List<byte[]> records, int damaged, int at) {
    byte[] file = Records.frameAll(records);
    file[(int) Records.boundaries(records)[damaged] + at] ^= 0x40;
    return file;
  }

  @Test
  public void lengthChecksumMismatchFailsWithFileAndOffset() {
    List<byte[]> records = Records.random(25, 10, 100);
    long offset = Records.boundaries(records)[4];
    CorruptRecordException e = readExpectingCorruption(flipped(records, 4, 9), options());
    assertNamesSourceAndOffset(e, offset);
    assertThat(e.getMessage(), containsString("length checksum"));
  }

  @Test
  public void aRangeBeginningInsideARecordFailsSayingNoRecordBeginsThere() {
    List<byte[]> records = Records.random(35, 10, 100);
    long[] bounds = Records.boundaries(records);
    byte[] file = Records.frameAll(records);
    long start = bounds[3] + 5; // as a split cut from an index of another file would begin
    CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> {
      try (TFRecordReader r = new TFRecordReader(new ByteArrayInputStream(
          Arrays.copyOfRange(file, (int) start, file.length)), SOURCE, start, options())) {
        readAll(r);
      }
    });
    assertNamesSourceAndOffset(e, start);
    assertThat(e.getReason(), containsString("no valid record header where the byte range "
        + "begins (length checksum mismatch): no record begins here, or its header is damaged"));
    assertThat(e.getReason(), containsString("the index does not describe this file"));
  }

  @Test
  public void damagedDataAtARangesStartIsDamageOnly() {
    List<byte[]> records = Records.random(36, 10, 100);
    long start = Records.boundaries(records)[3];
    byte[] file = flipped(records, 3, 12 + 2);
    CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> {
      try (TFRecordReader r = new TFRecordReader(new ByteArrayInputStream(
          Arrays.copyOfRange(file, (int) start, file.length)), SOURCE, start, options())) {
        readAll(r);
      }
    });
    assertNamesSourceAndOffset(e, start);
    assertThat(e.getReason(), containsString("data checksum mismatch ("));
    assertFalse(e.getReason(), e.getReason().contains("byte range"));
  }

  @Test
  public void alteredLengthFieldFailsTheLengthChecksum() {
    List<byte[]> records = Records.random(26, 10, 100);
    long offset = Records.boundaries(records)[6];
    CorruptRecordException e = readExpectingCorruption(flipped(records, 6, 0), options());
    assertNamesSourceAndOffset(e, offset);
  }

  @Test
  public void dataChecksumMismatchFailsWithFileAndOffset() {
    List<byte[]> records = Records.random(27, 10, 100);
    records.set(5, Records.randomBytes(28, 30));
    long offset = Records.boundaries(records)[5];
    CorruptRecordException e = readExpectingCorruption(flipped(records, 5, 12 + 7), options());
    assertNamesSourceAndOffset(e, offset);
    assertThat(e.getMessage(), containsString("data checksum"));
  }

  @Test
  public void dataChecksumMismatchInARecordLargerThanTheBufferFailsWithOffset() {
    List<byte[]> records = Records.random(29, 10, 30);
    records.set(5, Records.randomBytes(30, 3000));
    long offset = Records.boundaries(records)[5];
    CorruptRecordException e =
        readExpectingCorruption(flipped(records, 5, 12 + 2500), options().bufferBytes(64));
    assertNamesSourceAndOffset(e, offset);
  }

  @Test
  public void damagedDataChecksumFieldFailsWithOffset() {
    List<byte[]> records = Records.random(31, 10, 100);
    records.set(8, Records.randomBytes(32, 20));
    long offset = Records.boundaries(records)[8];
    CorruptRecordException e = readExpectingCorruption(flipped(records, 8, 12 + 20 + 1),
        options());
    assertNamesSourceAndOffset(e, offset);
  }

  @Test
  public void truncatedHeaderFailsWithOffset() {
    List<byte[]> records = Records.random(33, 10, 100);
    long offset = Records.boundaries(records)[10];
    byte[] file = Records.concat(Records.frameAll(records),
        Arrays.copyOf(Records.frame(new byte[10]), 5));
    CorruptRecordException e = readExpectingCorruption(file, options());
    assertNamesSourceAndOffset(e, offset);
    assertThat(e.getMessage(), containsString("truncated"));
  }

  @Test
  public void truncatedDataFailsWithOffset() {
    List<byte[]> records = Records.random(34, 10, 100);
    long offset = Records.boundaries(records)[10];
    byte[] file = Records.concat(Records.frameAll(records),
        Arrays.copyOf(Records.frame(Records.randomBytes(35, 40)), 12 + 20));
    CorruptRecordException e = readExpectingCorruption(file, options());
    assertNamesSourceAndOffset(e, offset);
    assertThat(e.getMessage(), containsString("truncated"));
  }

  @Test
  public void truncatedDataOfARecordLargerThanTheBufferFailsWithOffset() {
    List<byte[]> records = Records.random(36, 10, 20);
    long offset = Records.boundaries(records)[10];
    byte[] last = Records.frame(Records.randomBytes(37, 5000));
    for (int cut : new int[] {12 + 10, 12 + 4000, 12 + 5000, 12 + 5000 + 3}) {
      byte[] file = Records.concat(Records.frameAll(records), Arrays.copyOf(last, cut));
      CorruptRecordException e = readExpectingCorruption(file, options().bufferBytes(64));
      assertNamesSourceAndOffset(e, offset);
    }
  }

  @Test
  public void missingDataChecksumFailsWithOffset() {
    List<byte[]> records = Records.random(38, 3, 20);
    long offset = Records.boundaries(records)[3];
    byte[] last = Records.frame(Records.randomBytes(39, 30));
    byte[] file = Records.concat(Records.frameAll(records), Arrays.copyOf(last, 12 + 30));
    assertNamesSourceAndOffset(readExpectingCorruption(file, options()), offset);
  }

  // ---- damage under the skip policy ----

  @Test
  public void skipPolicySkipsDamagedRecordsCountsThemAndReadsAllGoodOnes() throws IOException {
    List<byte[]> records = Records.random(40, 20, 40);
    records.set(9, Records.randomBytes(41, 3000)); // larger than the 64-byte buffer
    long[] bounds = Records.boundaries(records);
    byte[] garbage = Records.randomBytes(42, 7);
    byte[] truncatedTail = Arrays.copyOf(Records.frame(Records.randomBytes(43, 50)), 30);

    byte[] body = Records.frameAll(records);
    body[(int) bounds[3] + 12] ^= 1; // data of record 3
    body[(int) bounds[6] + 10] ^= 1; // length checksum of record 6
    body[(int) bounds[9] + 12 + 2000] ^= 1; // data of large record 9
    // Record 13's header replaced by one claiming 1 GiB, with a valid length checksum.
    System.arraycopy(Records.header(1L << 30), 0, body, (int) bounds[13], 12);
    // 7 bytes of garbage between records 15 and 16, and a truncated record at the end.
    byte[] file = Records.concat(Arrays.copyOfRange(body, 0, (int) bounds[16]), garbage,
        Arrays.copyOfRange(body, (int) bounds[16], body.length), truncatedTail);

    List<byte[]> expected = new ArrayList<>(records);
    for (int damaged : new int[] {13, 9, 6, 3}) {
      expected.remove(damaged);
    }
    long expectedBytes = (bounds[4] - bounds[3]) + (bounds[7] - bounds[6])
        + (bounds[10] - bounds[9]) + (bounds[14] - bounds[13]) + garbage.length
        + truncatedTail.length;

    for (int bufferBytes : new int[] {64, 1 << 20}) {
      try (TFRecordReader r = reader(file, options().skipCorrupt(true)
          .maxRecordBytes(1 << 20).bufferBytes(bufferBytes))) {
        Records.assertRecords("buffer " + bufferBytes, expected, readAll(r));
        assertEquals(6, r.getSkippedRecords());
        assertEquals(expectedBytes, r.getSkippedBytes());
      }
    }
  }

  @Test
  public void skipPolicyParsedFromItsName() throws IOException {
    List<byte[]> records = Records.random(44, 10, 40);
    records.set(2, Records.randomBytes(48, 30));
    byte[] file = flipped(records, 2, 12 + 16 + 1);
    List<byte[]> expected = new ArrayList<>(records);
    expected.remove(2);
    try (TFRecordReader r = reader(file, options().corruptPolicy("SKIP"))) {
      Records.assertRecords(expected, readAll(r));
      assertEquals(1, r.getSkippedRecords());
    }
    assertThrows(CorruptRecordException.class,
        () -> readAll(file, options().corruptPolicy("skip").corruptPolicy("fail")));
  }

  @Test
  public void skipPolicyOnAFileOfOnlyGarbageReadsNothingAndCountsItAll() throws IOException {
    byte[] garbage = Records.randomBytes(45, 1000);
    try (TFRecordReader r = reader(garbage, options().skipCorrupt(true).bufferBytes(64))) {
      assertFalse(r.next());
      assertEquals(1, r.getSkippedRecords());
      assertEquals(1000, r.getSkippedBytes());
    }
  }

  @Test
  public void skippingPastCraftedHeadersGivesUpWithinABudgetNamingTheDamage() {
    // Back-to-back headers whose own CRCs match, each announcing data to the end of the file:
    // checking them all would cost time quadratic in the file's size.
    int size = 4 << 20;
    java.io.ByteArrayOutputStream crafted = new java.io.ByteArrayOutputStream(size);
    crafted.write(new byte[16], 0, 16); // the damage the skipping starts from, at byte 0
    while (crafted.size() + 12 < size) {
      byte[] header = Records.header(size - crafted.size() - 16);
      crafted.write(header, 0, header.length);
    }
    byte[] file = Arrays.copyOf(crafted.toByteArray(), size);
    CorruptRecordException e = readExpectingCorruption(file, options().skipCorrupt(true));
    assertThat(e.getMessage(), containsString("looking for a record from byte offset 1, so "
        + "many record headers look valid but hold damaged data"));
    assertThat(e.getMessage(), containsString(SOURCE));
  }

  // ---- options ----

  @Test
  public void withoutVerificationADataChecksumMismatchIsNotDetected() throws IOException {
    List<byte[]> records = Records.random(46, 5, 40);
    records.set(2, Records.randomBytes(47, 20));
    byte[] file = flipped(records, 2, 12 + 3);
    List<byte[]> read = readAll(file, options().verify(false));
    assertEquals(5, read.size());
    byte[] altered = records.get(2).clone();
    altered[3] ^= 0x40;
    assertArrayEquals(altered, read.get(2));
  }

  @Test
  public void optionsRejectImpossibleValues() {
    assertThrows(IllegalArgumentException.class, () -> options().maxRecordBytes(0));
    assertThrows(IllegalArgumentException.class, () -> options().maxRecordBytes(-5));
    assertThrows(IllegalArgumentException.class, () -> options().maxRecordBytes(1L << 31));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> options().corruptPolicy("ignore"));
    assertThat(e.getMessage(), containsString("'fail' or 'skip'"));
  }
}
