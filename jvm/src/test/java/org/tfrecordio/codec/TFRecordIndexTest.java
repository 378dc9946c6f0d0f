package org.tfrecordio.codec;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.Test;
import org.tfrecordio.testutil.Records;

public class TFRecordIndexTest {

  private static long[] read(String index, long dataLength) throws IOException {
    return TFRecordIndex.read(
        new ByteArrayInputStream(index.getBytes(StandardCharsets.US_ASCII)), dataLength);
  }

  @Test
  public void indexOfAFileIsItsNamePrefixedWithUnderscoreAndSuffixedTfindex() {
    assertEquals("_part-r-00000.tfrecord.tfindex", TFRecordIndex.indexName("part-r-00000.tfrecord"));
  }

  @Test
  public void writerWritesOneOffsetAndFramedLengthLinePerRecordThenTheTrailer()
      throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TFRecordIndex.Writer w = new TFRecordIndex.Writer(out)) {
      w.add(0, 0);
      w.add(16, 1);
      w.add(33, 8);
      w.add(5_000_000_000L, 123_456);
    }
    assertEquals("0 16\n16 17\n33 24\n5000000000 123472\n# 4 records\n",
        new String(out.toByteArray(), StandardCharsets.US_ASCII));
  }

  @Test
  public void readGivesRecordStartsFollowedByTheFileLength() throws IOException {
    List<byte[]> records = Records.random(1, 50, 100);
    long[] bounds = Records.boundaries(records);
    StringBuilder index = new StringBuilder();
    for (int i = 0; i < records.size(); i++) {
      index.append(bounds[i]).append(' ').append(bounds[i + 1] - bounds[i]).append('\n');
    }
    assertArrayEquals(bounds, read(index.toString(), bounds[records.size()]));
  }

  @Test
  public void writtenIndexReadsBack() throws IOException {
    List<byte[]> records = Records.random(2, 3000, 50); // more lines than the first array holds
    long[] bounds = Records.boundaries(records);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TFRecordIndex.Writer w = new TFRecordIndex.Writer(out)) {
      for (int i = 0; i < records.size(); i++) {
        w.add(bounds[i], records.get(i).length);
      }
    }
    assertArrayEquals(bounds,
        TFRecordIndex.read(new ByteArrayInputStream(out.toByteArray()), bounds[records.size()]));
  }

  @Test
  public void emptyIndexMatchesAnEmptyFileOnly() throws IOException {
    assertArrayEquals(new long[] {0}, read("", 0));
    assertNull(read("", 16));
  }

  @Test
  public void indexNotEndingAtTheFileLengthIsRejected() throws IOException {
    assertNull(read("0 16\n16 20\n", 35)); // file longer: appended to
    assertNull(read("0 16\n16 20\n", 37)); // file shorter: truncated
  }

  @Test
  public void indexWithGapsOverlapsOrAWrongFirstOffsetIsRejected() throws IOException {
    assertNull(read("0 16\n17 20\n", 37)); // gap
    assertNull(read("0 20\n16 20\n", 36)); // overlap
    assertNull(read("4 16\n20 16\n", 36)); // first record not at 0
    assertNull(read("16 16\n0 16\n", 32)); // out of order
  }

  @Test
  public void malformedIndexIsRejected() throws IOException {
    assertNull(read("0 8\n", 8)); // shorter than the 16 bytes of framing
    assertNull(read("0 16", 16)); // no final newline
    assertNull(read("0 16\r\n", 16));
    assertNull(read("0  16\n", 16));
    assertNull(read("0\t16\n", 16));
    assertNull(read("0 16 7\n", 16));
    assertNull(read("0\n", 16));
    assertNull(read(" 16\n", 16));
    assertNull(read("-0 16\n", 16));
    assertNull(read("0 0x10\n", 16));
    assertNull(read("0 1234567890123456789012\n", 16)); // would overflow a long
    assertNull(read("garbage", 16));
  }

  private static long count(String index, long dataLength) throws IOException {
    return TFRecordIndex.count(
        new ByteArrayInputStream(index.getBytes(StandardCharsets.US_ASCII)), dataLength);
  }

  @Test
  public void countOfAWrittenIndexIsItsNumberOfRecords() throws IOException {
    List<byte[]> records = Records.random(3, 20000, 50); // an index over several read chunks
    long[] bounds = Records.boundaries(records);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TFRecordIndex.Writer w = new TFRecordIndex.Writer(out)) {
      for (int i = 0; i < records.size(); i++) {
        w.add(bounds[i], records.get(i).length);
      }
    }
    assertEquals(records.size(), TFRecordIndex.count(
        new ByteArrayInputStream(out.toByteArray()), bounds[records.size()]));
  }

  @Test
  public void countRejectsAnIndexThatDoesNotEndAtTheFileLength() throws IOException {
    assertEquals(2, count("0 16\n16 20\n", 36));
    assertEquals(-1, count("0 16\n16 20\n", 40)); // file longer: appended to
    assertEquals(-1, count("0 16\n16 20\n", 30)); // file shorter: truncated
    assertEquals(-1, count("0 16\n16 20", 36)); // index cut mid-line
    assertEquals(-1, count("0 16\n16 2x\n", 36)); // last line malformed
    assertEquals(-1, count("4 32\n", 36)); // a single record must start at 0
    assertEquals(0, count("", 0));
    assertEquals(-1, count("", 16));
  }

  private static long countFromTail(String index, long dataLength) {
    byte[] b = index.getBytes(StandardCharsets.US_ASCII);
    int n = Math.min(b.length, TFRecordIndex.TAIL_BYTES);
    return TFRecordIndex.countFromTail(
        Arrays.copyOfRange(b, b.length - n, b.length), n == b.length, dataLength);
  }

  @Test
  public void writtenIndexEndsWithATrailerStatingItsCount() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TFRecordIndex.Writer w = new TFRecordIndex.Writer(out)) {
      w.add(0, 3);
      w.add(19, 0);
    }
    assertEquals("0 19\n19 16\n# 2 records\n",
        new String(out.toByteArray(), StandardCharsets.US_ASCII));
    assertArrayEquals(new long[] {0, 19, 35}, read("0 19\n19 16\n# 2 records\n", 35));
  }

  @Test
  public void countFromTheTailOfALargeIndexReadsOnlyItsLastBytes() throws IOException {
    List<byte[]> records = Records.random(3, 20000, 50);
    long[] bounds = Records.boundaries(records);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TFRecordIndex.Writer w = new TFRecordIndex.Writer(out)) {
      for (int i = 0; i < records.size(); i++) {
        w.add(bounds[i], records.get(i).length);
      }
    }
    byte[] index = out.toByteArray();
    byte[] tail = Arrays.copyOfRange(index, index.length - TFRecordIndex.TAIL_BYTES, index.length);
    assertEquals(records.size(), TFRecordIndex.countFromTail(tail, false, bounds[records.size()]));
    assertEquals(records.size(),
        TFRecordIndex.count(new ByteArrayInputStream(index), bounds[records.size()]));
  }

  @Test
  public void countFromTailRejectsAnIndexThatDoesNotEndAtTheFileLength() {
    assertEquals(2, countFromTail("0 16\n16 20\n# 2 records\n", 36));
    assertEquals(-1, countFromTail("0 16\n16 20\n# 2 records\n", 40)); // appended to
    assertEquals(-1, countFromTail("0 16\n16 20\n# 2 records\n", 30)); // truncated
    assertEquals(-1, countFromTail("0 16\n16 2x\n# 2 records\n", 36)); // last entry malformed
    assertEquals(-1, countFromTail("0 16\n16 20\n# 2 recs\n", 36)); // trailer malformed
    assertEquals(-1, countFromTail("4 32\n# 1 records\n", 36)); // one record must start at 0
    assertEquals(-1, countFromTail("0 16\n16 20\n# 1 records\n", 36)); // count != lines
    assertEquals(0, countFromTail("# 0 records\n", 0));
    assertEquals(-1, countFromTail("# 0 records\n", 16));
  }

  @Test
  public void anIndexWithoutATrailerIsCountedFromItsLines() throws IOException {
    assertEquals(TFRecordIndex.NO_TRAILER, countFromTail("0 16\n16 20\n", 36));
    assertEquals(TFRecordIndex.NO_TRAILER, countFromTail("0 16\n16 20\n# 2 rec", 36)); // cut
    assertEquals(2, count("0 16\n16 20\n", 36));
    assertEquals(2, count("0 16\n16 20\n# 2 records\n", 36));
    assertEquals(-1, count("0 16\n16 20\n# 3 records\n", 36));
  }

  @Test
  public void readRefusesAMalformedOrWrongTrailer() throws IOException {
    assertNull(read("0 16\n16 20\n# 3 records\n", 36));
    assertNull(read("0 16\n# 1 records\n16 20\n", 36)); // entries after the trailer
    assertNull(read("0 16\n16 20\n# 2 records\nx", 36));
    assertNull(read("0 16\n16 20\n# two records\n", 36));
  }

  @Test
  public void anIndexDescribingMoreThanTheFileIsRejectedWithoutReadingTheRest()
      throws IOException {
    int[] read = {0};
    java.io.InputStream endless = new java.io.InputStream() { // "0 16\n16 16\n32 16\n"...
      private long next;
      private byte[] line = new byte[0];
      private int at;

      @Override
      public int read() {
        if (read[0] == 16 << 20) {
          return -1; // (ends, so that reading it all fails rather than hangs)
        }
        if (at == line.length) {
          line = (next + " 16\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII);
          next += 16;
          at = 0;
        }
        read[0]++;
        return line[at++];
      }
    };
    org.junit.Assert.assertNull(TFRecordIndex.read(endless, 32));
    org.junit.Assert.assertTrue(read[0] + " bytes read", read[0] < (1 << 20));
  }
}
