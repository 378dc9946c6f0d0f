package org.tfrecordio.tools;

import static org.junit.Assert.assertEquals;

import java.io.File;
import java.io.IOException;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.List;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.testutil.Compressed.Format;
import org.tfrecordio.testutil.Records;

/** The cross-checking entry point: one JSON line per file, in the documented shape. */
public class ReadFilesTest {
  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  private final List<byte[]> records = Records.random(21, 30, 200);
  private final long[] bounds = Records.boundaries(records);

  private String file(String name, byte[] content) throws IOException {
    File f = tmp.newFile(name);
    Records.writeLocal(f, content);
    return f.getPath();
  }

  /** SHA-256 over each record as its 8-byte little-endian length and its bytes. */
  private static String sha256(List<byte[]> records) throws Exception {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    for (byte[] r : records) {
      sha.update(java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN)
          .putLong(r.length).array());
      sha.update(r);
    }
    StringBuilder s = new StringBuilder();
    for (byte b : sha.digest()) {
      s.append(String.format("%02x", b));
    }
    return s.toString();
  }

  /** The start of a line whose error object is still open (the line minus its last brace). */
  private static String start(String path, List<byte[]> read, String errorStart)
      throws Exception {
    String l = line(path, read, 0, 0, errorStart);
    return l.substring(0, l.length() - 1);
  }

  private static String line(String path, List<byte[]> read, long skippedRecords,
      long skippedBytes, String error) throws Exception {
    return "{\"path\": " + ReadFiles.quote(path) + ", \"records\": " + read.size()
        + ", \"sha256\": \"" + sha256(read) + "\", \"skipped_records\": " + skippedRecords
        + ", \"skipped_bytes\": " + skippedBytes + ", \"error\": " + error + "}";
  }

  @Test
  public void intactFileGivesItsRecordCountAndHash() throws Exception {
    String path = file("a.tfrecord", Records.frameAll(records));
    assertEquals(line(path, records, 0, 0, "null"),
        ReadFiles.read(ReadFiles.configuration("fail", "auto"), path));
  }

  @Test
  public void damagedFileUnderFailGivesThePrefixAndTheOffset() throws Exception {
    byte[] framed = Records.frameAll(records);
    framed[(int) bounds[7] + 14] ^= 1;
    String path = file("b.tfrecord", framed);
    String json = ReadFiles.read(ReadFiles.configuration("fail", "auto"), path);
    String expectedStart = start(path, records.subList(0, 7), "{\"offset\": " + bounds[7]
        + ", \"message\": ");
    assertEquals(expectedStart, json.substring(0, expectedStart.length()));
  }

  @Test
  public void damagedFileUnderSkipGivesTheOtherRecordsAndTheCounts() throws Exception {
    byte[] framed = Records.frameAll(records);
    framed[(int) bounds[7] + 14] ^= 1;
    String path = file("c.tfrecord", framed);
    List<byte[]> kept = new java.util.ArrayList<>(records);
    kept.remove(7);
    assertEquals(line(path, kept, 1, bounds[8] - bounds[7], "null"),
        ReadFiles.read(ReadFiles.configuration("skip", "auto"), path));
  }

  @Test
  public void compressionIsChosenByTheOption() throws Exception {
    byte[] gz = Format.GZIP.jdk(Records.frameAll(records));
    String path = file("d.bin", Arrays.copyOf(gz, gz.length - 4)); // trailer cut
    String json = ReadFiles.read(ReadFiles.configuration("fail", "gzip"), path);
    String expectedStart = start(path, records, "{\"offset\": " + bounds[30]
        + ", \"message\": ");
    assertEquals(expectedStart, json.substring(0, expectedStart.length()));
  }

  @Test
  public void missingFileIsAnErrorWithoutOffset() throws Exception {
    String path = new File(tmp.getRoot(), "missing.tfrecord").getPath();
    String json = ReadFiles.read(ReadFiles.configuration("fail", "auto"), path);
    String expectedStart = start(path, records.subList(0, 0), "{\"offset\": null, ");
    assertEquals(expectedStart, json.substring(0, expectedStart.length()));
  }
}
