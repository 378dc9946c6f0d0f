package org.tfrecordio.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Before;
import org.junit.Test;
import org.tfrecordio.codec.CorruptRecordException;
import org.tfrecordio.testutil.BothApisTest;
import org.tfrecordio.testutil.HadoopApi;
import org.tfrecordio.testutil.HadoopApi.Read;
import org.tfrecordio.testutil.HadoopApi.SplitRead;
import org.tfrecordio.testutil.Records;

/**
 * How both InputFormats cut TFRecord files into splits: whatever the split size, the splits of a
 * file together hold each of its records exactly once, in order.
 */
public class InputSplitsTest extends BothApisTest {
  private Configuration conf;
  private Path out;
  private Path data;
  private File dataFile;
  private File indexFile;

  /**
   * Random records (about 500 bytes framed: small, so that every split size can be tried),
   * some empty, some larger than the 64-byte read buffer of these tests.
   */
  private static List<byte[]> records() {
    List<byte[]> records = Records.random(42, 16, 24);
    records.set(3, Records.randomBytes(1, 100));
    records.set(4, new byte[0]);
    records.set(10, new byte[0]);
    records.set(15, Records.randomBytes(2, 70));
    return records;
  }

  @Before
  public void setUp() {
    conf = new Configuration();
    conf.setInt(TFRecordConfig.READ_BUFFER_BYTES, 64);
    out = new Path(tmp.getRoot().toURI().toString(), "out");
    data = new Path(out, api.partName(0, ".tfrecord"));
    dataFile = new File(tmp.getRoot(), "out/" + api.partName(0, ".tfrecord"));
    indexFile = new File(tmp.getRoot(), "out/_" + api.partName(0, ".tfrecord") + ".tfindex");
  }

  private void write(List<byte[]> records) throws IOException {
    api.write(conf, out, records);
    assertTrue(dataFile + " written", dataFile.isFile());
  }

  /** Splits cover the file without gaps or overlaps, in order. */
  private static void assertContiguous(String what, Read read, long fileLength) {
    long expectedStart = 0;
    for (SplitRead s : read.splits) {
      assertEquals(what + ": split " + s + " start", expectedStart, s.start);
      expectedStart = s.start + s.length;
    }
    assertEquals(what + ": end of the last split", fileLength, expectedStart);
  }

  /**
   * Reads the data file with every split size from 1 byte to past the file size; checks each
   * plan. (The file, not its directory, is the input here: without Hadoop's native library,
   * listing a local directory runs a shell command per file for its permissions, too slow for
   * this many listings.)
   */
  private void assertEveryRecordOnceAtEverySplitSize(List<byte[]> records, boolean onBoundaries)
      throws IOException {
    long[] bounds = Records.boundaries(records);
    long length = bounds[bounds.length - 1];
    assertEquals(length, dataFile.length());
    List<Long> starts = new ArrayList<>();
    for (long b : bounds) {
      starts.add(b);
    }
    for (long size = 1; size <= length + 20; size++) {
      String what = "split size " + size;
      Read read = api.read(conf, data, size);
      assertContiguous(what, read, length);
      Records.assertRecords(what, records, read.records());
      for (SplitRead s : read.splits) {
        if (onBoundaries) {
          assertTrue(what + ": " + s + " starts on a record boundary", starts.contains(s.start));
          assertFalse(what + ": " + s + " is empty", s.records.isEmpty());
        }
      }
      if (size >= length) {
        assertEquals(what + ": one split", 1, read.splits.size());
      } else if (size <= length / 2) {
        assertTrue(what + ": several splits", read.splits.size() > 1);
      }
    }
  }

  @Test
  public void everyRecordReadExactlyOnceInOrderForEverySplitSizeWithTheIndex()
      throws IOException {
    List<byte[]> records = records();
    write(records);
    assertTrue(indexFile.isFile());
    assertEveryRecordOnceAtEverySplitSize(records, true);
  }

  @Test
  public void oneByteSplitsGiveOneSplitPerRecordWithTheIndex() throws IOException {
    List<byte[]> records = records();
    write(records);
    Read read = api.read(conf, out, 1);
    assertEquals(records.size(), read.splits.size());
    for (int i = 0; i < records.size(); i++) {
      Records.assertRecords("split " + i, records.subList(i, i + 1), read.splits.get(i).records);
    }
  }

  @Test
  public void everyRecordReadExactlyOnceInOrderForEverySplitSizeByResyncWithoutIndex()
      throws IOException {
    List<byte[]> records = records();
    write(records);
    Records.deleteLocal(indexFile);
    conf.setBoolean(TFRecordConfig.SPLIT_RESYNC, true);
    assertEveryRecordOnceAtEverySplitSize(records, false);
  }

  @Test
  public void indexSplitsAreExactEvenWhenPayloadsContainTFRecordFraming() throws IOException {
    // Each payload is itself a framed record: byte-offset resync could be fooled, the index not.
    List<byte[]> records = new ArrayList<>();
    for (byte[] inner : Records.random(7, 8, 12)) {
      records.add(Records.frame(inner));
    }
    write(records);
    assertEveryRecordOnceAtEverySplitSize(records, true);
  }

  @Test
  public void fileOfEmptyRecordsSplitsExactlyWithTheIndex() throws IOException {
    List<byte[]> records = Records.empty(12);
    write(records);
    assertEveryRecordOnceAtEverySplitSize(records, true);
  }

  @Test
  public void fileOfEmptyRecordsSplitsExactlyByResync() throws IOException {
    List<byte[]> records = Records.empty(12);
    write(records);
    Records.deleteLocal(indexFile);
    conf.setBoolean(TFRecordConfig.SPLIT_RESYNC, true);
    assertEveryRecordOnceAtEverySplitSize(records, false);
  }

  @Test
  public void recordsLargerThanTheBufferAndTheSplitAreEachReadByOneSplit() throws IOException {
    List<byte[]> records = Arrays.asList(Records.randomBytes(8, 5000),
        Records.randomBytes(10, 7000), Records.randomBytes(11, 6000));
    write(records);
    Read read = api.read(conf, out, 100);
    assertEquals("one split per record", 3, read.splits.size());
    for (int i = 0; i < 3; i++) {
      Records.assertRecords("split " + i, records.subList(i, i + 1), read.splits.get(i).records);
    }

    Records.deleteLocal(indexFile);
    conf.setBoolean(TFRecordConfig.SPLIT_RESYNC, true);
    read = api.read(conf, out, 100);
    assertTrue(read.splits.size() > 100);
    Records.assertRecords("resync", records, read.records());
  }

  @Test
  public void withoutIndexOrResyncEachFileIsOneSplit() throws IOException {
    List<byte[]> a = Records.random(12, 30, 50);
    List<byte[]> b = Records.random(13, 20, 50);
    List<byte[]> c = Records.random(14, 10, 50);
    api.write(conf, out, a, b, c);
    for (int task = 0; task < 3; task++) {
      Records.deleteLocal(new File(tmp.getRoot(), "out/_" + api.partName(task, ".tfrecord")
          + ".tfindex"));
    }
    for (long size : new long[] {1, 10, 100, 1000}) {
      Read read = api.read(conf, out, size);
      assertEquals("split size " + size, 3, read.splits.size());
      List<List<byte[]>> byFile = Arrays.asList(a, b, c);
      for (int i = 0; i < 3; i++) {
        SplitRead s = read.splits.get(i);
        assertEquals(api.partName(i, ".tfrecord"), s.path.getName());
        assertEquals(0, s.start);
        assertEquals(Records.boundaries(byFile.get(i))[byFile.get(i).size()], s.length);
        Records.assertRecords(s.toString(), byFile.get(i), s.records);
      }
    }
  }

  @Test
  public void aSubdirectoryIsLeftOutAsHadoopSaysOrRefusedNamingTheSettings() throws IOException {
    List<byte[]> records = records();
    write(records);
    assertTrue(new File(tmp.getRoot(), "out/nested").mkdir());
    IOException refused = assertThrows(IOException.class, () -> api.read(conf, out, 1000));
    assertTrue(refused.getMessage(), refused.getMessage().startsWith("Not a file: ")
        && refused.getMessage().contains("out/nested (an input directory's subdirectory: set "
            + "mapreduce.input.fileinputformat.input.dir.recursive=true to read it, or "
            + "mapreduce.input.fileinputformat.input.dir.nonrecursive.ignore.subdirs=true"));
    conf.setBoolean("mapreduce.input.fileinputformat.input.dir.nonrecursive.ignore.subdirs",
        true);
    Read read = api.read(conf, out, 1000);
    assertEquals(1, read.splits.size());
    Records.assertRecords(records, read.records());
  }

  @Test
  public void indexIsNotUsedWhenDisabled() throws IOException {
    List<byte[]> records = records();
    write(records);
    conf.setBoolean(TFRecordConfig.USE_INDEX, false);
    Read read = api.read(conf, out, 10);
    assertEquals(1, read.splits.size());
    Records.assertRecords(records, read.records());
  }

  @Test
  public void indexOfAFileAppendedToIsIgnored() throws IOException {
    List<byte[]> records = records();
    write(records);
    byte[] extra = Records.randomBytes(15, 33);
    Records.writeLocal(dataFile, Records.concat(Records.readLocal(dataFile), Records.frame(extra)));
    List<byte[]> expected = new ArrayList<>(records);
    expected.add(extra);

    Read read = api.read(conf, out, 10);
    assertEquals("stale index ignored: one split", 1, read.splits.size());
    Records.assertRecords(expected, read.records());

    conf.setBoolean(TFRecordConfig.SPLIT_RESYNC, true);
    for (long size = 1; size < 200; size += 7) {
      Records.assertRecords("resync, split size " + size, expected,
          api.read(conf, out, size).records());
    }
  }

  @Test
  public void indexOfAFileRewrittenShorterIsIgnored() throws IOException {
    List<byte[]> records = records();
    write(records);
    List<byte[]> rewritten = records.subList(0, 10);
    Records.writeLocal(dataFile, Records.frameAll(rewritten));
    Read read = api.read(conf, out, 10);
    assertEquals(1, read.splits.size());
    Records.assertRecords(rewritten, read.records());
  }

  @Test
  public void indexOfAFileRewrittenWithTheSameLengthIsNeverTrustedToMisread()
      throws IOException {
    List<byte[]> records = records();
    write(records);
    // Same records in reverse order: the index still adds up to the file's length, but its
    // boundaries are no longer those of the records.
    List<byte[]> reversed = new ArrayList<>(records);
    Collections.reverse(reversed);
    Records.writeLocal(dataFile, Records.frameAll(reversed));
    assertEquals(Records.boundaries(records)[records.size()], dataFile.length());

    // Under the fail policy a split starting inside a record is an error, not silent loss,
    // that says the index may not describe the file...
    CorruptRecordException e =
        assertThrows(CorruptRecordException.class, () -> api.read(conf, data, 1));
    assertTrue(e.getMessage(), e.getReason().startsWith("no valid record header where the "
        + "byte range begins") && e.getReason().contains("the index does not describe this file"));
    // ...and under the skip policy every record is still read exactly once.
    conf.set(TFRecordConfig.CORRUPT_POLICY, "skip");
    for (long size = 1; size <= dataFile.length(); size += 3) {
      Records.assertRecords("split size " + size, reversed, api.read(conf, data, size).records());
    }
  }

  @Test
  public void malformedIndexIsIgnored() throws IOException {
    List<byte[]> records = records();
    write(records);
    Records.writeLocal(indexFile, "not an index\n".getBytes(StandardCharsets.US_ASCII));
    Read read = api.read(conf, out, 10);
    assertEquals(1, read.splits.size());
    Records.assertRecords(records, read.records());
  }

  @Test
  public void emptyFileIsOneEmptySplit() throws IOException {
    write(Collections.emptyList());
    assertEquals(0, dataFile.length());
    assertEquals("an index of no records", "# 0 records\n".length(), indexFile.length());
    for (long size : new long[] {1, 100}) {
      Read read = api.read(conf, out, size);
      assertEquals(1, read.splits.size());
      assertEquals(0, read.splits.get(0).length);
      assertEquals(0, read.records().size());
    }
  }

  @Test
  public void emptyFilesAmongOthersAddNoRecords() throws IOException {
    List<byte[]> a = Records.random(16, 10, 30);
    List<byte[]> c = Records.random(17, 10, 30);
    api.write(conf, out, a, Collections.emptyList(), c);
    List<byte[]> expected = new ArrayList<>(a);
    expected.addAll(c);
    for (long size : new long[] {1, 50, 10_000}) {
      Records.assertRecords("split size " + size, expected, api.read(conf, out, size).records());
    }
  }
}
