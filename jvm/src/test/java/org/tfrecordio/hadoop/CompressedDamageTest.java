package org.tfrecordio.hadoop;

import static org.hamcrest.CoreMatchers.containsString;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.junit.Before;
import org.junit.Test;
import org.tfrecordio.codec.CorruptRecordException;
import org.tfrecordio.testutil.BothApisTest;
import org.tfrecordio.testutil.Compressed.Format;
import org.tfrecordio.testutil.HadoopApi.Read;
import org.tfrecordio.testutil.Records;

/**
 * Damage inside gzip and zlib streams (written by {@code java.util.zip} and by Hadoop's codecs):
 * every record that decodes whole before the damage is read; then, under the fail policy, a
 * {@link CorruptRecordException} names the file and the offset, in the uncompressed stream, of
 * the first record not read whole; under the skip policy the damaged tail is counted
 * ({@link TFRecordCounter}) and the task ends the file normally.
 */
public class CompressedDamageTest extends BothApisTest {
  private List<byte[]> records;
  private byte[] framed;
  private long[] bounds;
  private int files;

  @Before
  public void setUp() {
    records = Records.random(12, 80, 300);
    framed = Records.frameAll(records);
    bounds = Records.boundaries(records);
  }

  /** What one read of a file gave: the records before the error, and the error. */
  static final class Outcome {
    final List<byte[]> records = new ArrayList<>();
    CorruptRecordException error;
  }

  /** Reads a file with the InputFormats' reader, keeping the records read before an error. */
  static Outcome readUntilError(Configuration conf, Path path) throws IOException {
    Outcome o = new Outcome();
    try (SplitReader reader = new SplitReader(conf, path, 0, Long.MAX_VALUE / 2)) {
      BytesWritable value = new BytesWritable();
      while (reader.next(value)) {
        o.records.add(value.copyBytes());
      }
    } catch (CorruptRecordException e) {
      o.error = e;
    }
    return o;
  }

  private Path write(String name, byte[] content) throws IOException {
    File f = new File(tmp.getRoot(), name);
    f.getParentFile().mkdirs();
    Records.writeLocal(f, content);
    return new Path(f.toURI().toString());
  }

  private Path inputDir(Path file) {
    return file.getParent();
  }

  /** The number of records that lie whole within the first {@code decodable} bytes. */
  private int wholeWithin(long decodable) {
    int k = 0;
    while (k < records.size() && bounds[k + 1] <= decodable) {
      k++;
    }
    return k;
  }

  /**
   * Checks one damaged file under both policies: the fail policy reads the whole records before
   * the damage then names the file and offset; the skip policy (through this test's Hadoop API)
   * reads the same records and counts the damaged tail.
   */
  private void check(Format format, byte[] damaged, long decodable, String expectedMessage)
      throws IOException {
    Path path = write(format + "-" + (++files) + "/part" + format.extension, damaged);
    int k = wholeWithin(decodable);

    Outcome fail = readUntilError(new Configuration(), path);
    Records.assertRecords(format + " fail", records.subList(0, k), fail.records);
    assertNotNull(format + ": an error", fail.error);
    assertEquals(format + " offset", bounds[k], fail.error.getOffset());
    assertThat(fail.error.getMessage(), containsString(path.toString()));
    assertThat(fail.error.getMessage(), containsString("byte offset " + bounds[k]));
    assertThat(fail.error.getMessage(), containsString(expectedMessage));

    Configuration skip = new Configuration();
    skip.set(TFRecordConfig.CORRUPT_POLICY, "skip");
    Read read = api.read(skip, inputDir(path));
    Records.assertRecords(format + " skip", records.subList(0, k), read.records());
    assertEquals(format + " skipped records", 1, read.skippedRecords);
    assertEquals(format + " skipped bytes", decodable - bounds[k], read.skippedBytes);
  }

  @Test
  public void truncatedStreamYieldsEveryRecordThatDecodesWhole() throws IOException {
    for (Format f : Format.values()) {
      byte[] cut = Arrays.copyOf(f.jdk(framed), f.jdk(framed).length - 700);
      check(f, cut, f.decodableBeforeTruncation(cut), "Unexpected end of input stream");
    }
  }

  @Test
  public void truncatedStreamWrittenByTheHadoopCodecYieldsEveryRecordThatDecodesWhole()
      throws IOException {
    for (Format f : Format.values()) {
      byte[] cut = Arrays.copyOf(f.hadoop(framed), f.hadoop(framed).length - 5);
      check(f, cut, f.decodableBeforeTruncation(cut), "Unexpected end of input stream");
    }
  }

  @Test
  public void bytesAfterTheLastCompleteStreamFailAtTheEndOfTheRecords() throws IOException {
    byte[] stray = "these bytes are not a stream".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    check(Format.GZIP, Records.concat(Format.GZIP.hadoop(framed), stray), framed.length,
        "not a gzip file");
    check(Format.ZLIB, Records.concat(Format.ZLIB.jdk(framed), stray), framed.length,
        "incorrect header check");
  }

  @Test
  public void gzipTrailerChecksumFailureComesAfterEveryRecord() throws IOException {
    byte[] gz = Format.GZIP.jdk(framed);
    gz[gz.length - 6] ^= 0x01; // the CRC-32 of the trailer
    check(Format.GZIP, gz, framed.length, "damaged gzip stream");
  }

  @Test
  public void zlibTrailerChecksumFailureComesAfterEveryRecord() throws IOException {
    byte[] z = Format.ZLIB.hadoop(framed);
    z[z.length - 1] ^= 0x01; // the Adler-32
    check(Format.ZLIB, z, framed.length, "incorrect data check");
  }

  @Test
  public void invalidBlockInsideTheStreamYieldsEveryRecordBeforeIt() throws IOException {
    int split = (int) bounds[50];
    for (Format f : Format.values()) {
      check(f, invalidBlockAt(f, split), split, "invalid block type");
    }
  }

  /** The records compressed in {@code f}, with a block that does not exist at {@code split}. */
  private byte[] invalidBlockAt(Format f, int split) throws IOException {
    int[] at = new int[1];
    byte[] z = f.flushedBetween(Arrays.copyOf(framed, split),
        Arrays.copyOfRange(framed, split, framed.length), at);
    z[at[0]] |= 0x06; // block type 3, which does not exist
    return z;
  }

  @Test
  public void progressNeverGoesBackWhenTheRecordsBeforeTheDamageAreDecodedAgain()
      throws IOException {
    int split = (int) bounds[50];
    for (Format f : Format.values()) {
      byte[] z = invalidBlockAt(f, split);
      Path path = write("progress-" + f + "/part" + f.extension, z);
      Configuration skip = new Configuration();
      skip.set(TFRecordConfig.CORRUPT_POLICY, "skip");
      try (SplitReader reader = new SplitReader(skip, path, 0, z.length)) {
        BytesWritable value = new BytesWritable();
        float last = reader.getProgress();
        boolean more = true;
        int read = 0;
        while (more) {
          more = reader.next(value);
          read += more ? 1 : 0;
          float progress = reader.getProgress();
          assertTrue(f + " after " + read + " records: " + progress + " < " + last,
              progress >= last && progress <= 1);
          last = progress;
        }
        assertEquals(f + " records", wholeWithin(split), read);
        assertTrue(f + " progress at the end: " + last, last > 0);
      }
    }
  }

  @Test
  public void damagedHeaderOfTheStreamFailsAtOffsetZero() throws IOException {
    byte[] gz = Format.GZIP.hadoop(framed);
    gz[1] ^= 0x20; // the magic
    check(Format.GZIP, gz, 0, "not a gzip file");
    byte[] z = Format.ZLIB.jdk(framed);
    z[1] ^= 0x01; // FCHECK
    check(Format.ZLIB, z, 0, "incorrect header check");
  }

  @Test
  public void damagedSecondGzipMemberYieldsEveryRecordOfTheFirst() throws IOException {
    int split = (int) bounds[30];
    byte[] second = Format.GZIP.jdk(Arrays.copyOfRange(framed, split, framed.length));
    second[0] = 0; // not a gzip header any more
    check(Format.GZIP, Records.concat(Format.GZIP.jdk(Arrays.copyOf(framed, split)), second),
        split, "not a gzip file");
  }

  @Test
  public void reservedGzipFlagBitsFailAtTheHeaderBeforeAnyRecord() throws IOException {
    for (byte[] gz : new byte[][] {Format.GZIP.jdk(framed), Format.GZIP.hadoop(framed)}) {
      gz[3] |= (byte) 0x80; // a reserved FLG bit: RFC 1952 says refuse the member
      check(Format.GZIP, gz, 0, "reserved flag bits");
    }
  }

  @Test
  public void reservedGzipFlagBitsInTheSecondMemberFailBeforeItsFirstRecord()
      throws IOException {
    int split = (int) bounds[30];
    byte[] second = Format.GZIP.jdk(Arrays.copyOfRange(framed, split, framed.length));
    second[3] |= (byte) 0x20;
    check(Format.GZIP, Records.concat(Format.GZIP.jdk(Arrays.copyOf(framed, split)), second),
        split, "reserved flag bits");
  }

  @Test
  public void concatenatedGzipMembersAreReadWholeWithoutError() throws IOException {
    int split = (int) bounds[30];
    byte[] gz = Records.concat(Format.GZIP.jdk(Arrays.copyOf(framed, split)),
        Format.GZIP.hadoop(Arrays.copyOfRange(framed, split, framed.length)));
    Path path = write("members/part.gz", gz);
    Outcome o = readUntilError(new Configuration(), path);
    assertNull(o.error);
    Records.assertRecords(records, o.records);
    Read read = api.read(new Configuration(), inputDir(path));
    Records.assertRecords(records, read.records());
    assertEquals(0, read.skippedRecords);
  }
}
