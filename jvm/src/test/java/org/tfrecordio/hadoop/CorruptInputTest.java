package org.tfrecordio.hadoop;

import static org.hamcrest.CoreMatchers.containsString;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Before;
import org.junit.Test;
import org.tfrecordio.codec.CorruptRecordException;
import org.tfrecordio.testutil.BothApisTest;
import org.tfrecordio.testutil.HadoopApi;
import org.tfrecordio.testutil.HadoopApi.Read;
import org.tfrecordio.testutil.Records;

/**
 * Damaged input through both InputFormats: the fail policy names the file and offset; the skip
 * policy reads every good record and reports what it skipped in the job's counters
 * ({@link TFRecordCounter}, through the task context's reporter).
 */
public class CorruptInputTest extends BothApisTest {
  private Configuration conf;
  private Path out;
  private Path data;
  private File dataFile;
  private List<byte[]> records;
  private long[] bounds;

  @Before
  public void setUp() throws IOException {
    conf = new Configuration();
    conf.setInt(TFRecordConfig.READ_BUFFER_BYTES, 64);
    out = new Path(tmp.getRoot().toURI().toString(), "out");
    data = new Path(out, api.partName(0, ".tfrecord"));
    dataFile = new File(tmp.getRoot(), "out/" + api.partName(0, ".tfrecord"));
    records = Records.random(3, 12, 12);
    records.set(3, Records.randomBytes(4, 20));
    records.set(7, Records.randomBytes(5, 90)); // larger than the read buffer
    bounds = Records.boundaries(records);
    api.write(conf, out, records);
  }

  /** Flips one bit of the data file, at {@code at} bytes into record {@code record}. */
  private void damage(int record, int at) throws IOException {
    byte[] bytes = Records.readLocal(dataFile);
    bytes[(int) bounds[record] + at] ^= 0x10;
    Records.writeLocal(dataFile, bytes); // same length: the index still matches
  }

  private long framed(int record) {
    return bounds[record + 1] - bounds[record];
  }

  private List<byte[]> recordsWithout(int... damaged) {
    List<byte[]> expected = new ArrayList<>(records);
    for (int i = damaged.length - 1; i >= 0; i--) {
      expected.remove(damaged[i]);
    }
    return expected;
  }

  @Test
  public void failPolicyStopsAtTheDamagedRecordNamingFileAndOffset() throws IOException {
    damage(3, 12 + 5);
    CorruptRecordException e =
        assertThrows(CorruptRecordException.class, () -> api.read(conf, out));
    assertEquals(bounds[3], e.getOffset());
    assertThat(e.getMessage(), containsString(dataFile.getName()));
    assertThat(e.getMessage(), containsString("byte offset " + bounds[3]));
  }

  @Test
  public void failPolicyFailsOnADamagedRecordWhereverTheSplitsBegin() throws IOException {
    byte[] intact = Records.readLocal(dataFile);
    for (int damaged : new int[] {3, 7}) { // a small record, one larger than the read buffer
      Records.writeLocal(dataFile, intact);
      damage(damaged, 12 + 5);
      for (long size = 1; size <= bounds[records.size()]; size++) {
        long s = size;
        String what = "record " + damaged + " damaged, split size " + size;
        CorruptRecordException e = assertThrows(what,
            CorruptRecordException.class, () -> api.read(conf, data, s));
        assertEquals(what, bounds[damaged], e.getOffset());
      }
    }
  }

  @Test
  public void failPolicyFailsOnADamagedHeaderAtTheStartOfASplit() throws IOException {
    damage(5, 9); // length checksum
    CorruptRecordException e =
        assertThrows(CorruptRecordException.class, () -> api.read(conf, data, 1));
    assertEquals(bounds[5], e.getOffset());
  }

  @Test
  public void failPolicyFailsOnADamagedIndexBoundaryEvenWithResyncOn() throws IOException {
    damage(5, 9); // length checksum of a record that starts a split cut from the index
    conf.setBoolean(TFRecordConfig.SPLIT_RESYNC, true);
    CorruptRecordException e =
        assertThrows(CorruptRecordException.class, () -> api.read(conf, data, 1));
    assertEquals(bounds[5], e.getOffset());
  }

  @Test
  public void skipPolicyReadsAllGoodRecordsAndCountsTheSkippedOnes() throws IOException {
    damage(3, 12 + 5); // data
    damage(7, 10); // length checksum
    conf.set(TFRecordConfig.CORRUPT_POLICY, "skip");
    Read read = api.read(conf, out);
    Records.assertRecords(recordsWithout(3, 7), read.records());
    assertEquals(2, read.skippedRecords);
    assertEquals(framed(3) + framed(7), read.skippedBytes);
  }

  @Test
  public void skipPolicyCountsEachDamagedRecordOnceWhateverTheSplits() throws IOException {
    damage(0, 12); // data of the first record
    damage(5, 3); // length field
    damage(7, 12 + 89); // last data byte of the large record
    conf.set(TFRecordConfig.CORRUPT_POLICY, "skip");
    for (long size = 1; size <= bounds[records.size()] + 1; size++) {
      Read read = api.read(conf, data, size);
      String what = "split size " + size;
      Records.assertRecords(what, recordsWithout(0, 5, 7), read.records());
      assertEquals(what, 3, read.skippedRecords);
      assertEquals(what, framed(0) + framed(5) + framed(7), read.skippedBytes);
    }
  }

  /** Resync splitting alone: no index to cut splits at record boundaries. */
  private void resyncWithoutIndex() throws IOException {
    Records.deleteLocal(new File(tmp.getRoot(), "out/_" + api.partName(0, ".tfrecord")
        + ".tfindex"));
    conf.setBoolean(TFRecordConfig.SPLIT_RESYNC, true);
  }

  @Test
  public void failPolicyFailsOnADamagedRecordWhereverResyncSplitsBegin() throws IOException {
    resyncWithoutIndex();
    byte[] intact = Records.readLocal(dataFile);
    for (int damaged : new int[] {3, 5, 7}) {
      for (int at : new int[] {9, 12 + 5}) { // the length's checksum, the data
        Records.writeLocal(dataFile, intact);
        damage(damaged, at);
        for (long size = 1; size <= bounds[records.size()]; size++) {
          long s = size;
          String what = "record " + damaged + " damaged at " + at + ", split size " + size;
          CorruptRecordException e = assertThrows(what,
              CorruptRecordException.class, () -> api.read(conf, data, s));
          assertEquals(what, bounds[damaged], e.getOffset());
        }
      }
    }
  }

  @Test
  public void skipPolicyCountsEachDamagedRecordOnceWhateverTheResyncSplits() throws IOException {
    resyncWithoutIndex();
    damage(0, 12); // data of the first record
    damage(5, 12 + 2); // data
    damage(7, 12 + 89); // last data byte of the large record
    conf.set(TFRecordConfig.CORRUPT_POLICY, "skip");
    for (long size = 1; size <= bounds[records.size()] + 1; size++) {
      Read read = api.read(conf, data, size);
      String what = "split size " + size;
      Records.assertRecords(what, recordsWithout(0, 5, 7), read.records());
      assertEquals(what, 3, read.skippedRecords);
      // each damaged record's bytes as far as the split that found it goes
      assertTrue(what, read.skippedBytes >= 3
          && read.skippedBytes <= framed(0) + framed(5) + framed(7));
    }
  }

  @Test
  public void skipPolicyCountsATruncatedLastRecord() throws IOException {
    byte[] bytes = Records.readLocal(dataFile);
    int cut = 10;
    Records.writeLocal(dataFile, Arrays.copyOf(bytes, bytes.length - cut));
    conf.set(TFRecordConfig.CORRUPT_POLICY, "skip");
    Read read = api.read(conf, out, 20); // the index no longer matches: one split
    Records.assertRecords(recordsWithout(records.size() - 1), read.records());
    assertEquals(1, read.skippedRecords);
    assertEquals(framed(records.size() - 1) - cut, read.skippedBytes);
  }

  @Test
  public void undamagedInputCountsNothing() throws IOException {
    conf.set(TFRecordConfig.CORRUPT_POLICY, "skip");
    Read read = api.read(conf, out, 30);
    Records.assertRecords(records, read.records());
    assertEquals(0, read.skippedRecords);
    assertEquals(0, read.skippedBytes);
  }

  @Test
  public void truncatedFileFailsWithOffsetUnderTheFailPolicy() throws IOException {
    byte[] bytes = Records.readLocal(dataFile);
    Records.writeLocal(dataFile, Arrays.copyOf(bytes, (int) bounds[11] + 12 + 3));
    CorruptRecordException e =
        assertThrows(CorruptRecordException.class, () -> api.read(conf, out));
    assertEquals(bounds[11], e.getOffset());
    assertThat(e.getMessage(), containsString("truncated"));
  }

  @Test
  public void maxRecordBytesSettingRejectsLargerRecords() throws IOException {
    conf.setLong(TFRecordConfig.MAX_RECORD_BYTES, 89);
    CorruptRecordException e =
        assertThrows(CorruptRecordException.class, () -> api.read(conf, out));
    assertEquals(bounds[7], e.getOffset());
    assertThat(e.getMessage(), containsString(TFRecordConfig.MAX_RECORD_BYTES));
    conf.setLong(TFRecordConfig.MAX_RECORD_BYTES, 90);
    Records.assertRecords(records, api.read(conf, out).records());
  }

  @Test
  public void withChecksumsUnverifiedDamagedDataIsReadAsIs() throws IOException {
    damage(3, 12 + 5);
    conf.setBoolean(TFRecordConfig.VERIFY_CHECKSUMS, false);
    List<byte[]> read = api.read(conf, out).records();
    assertEquals(records.size(), read.size());
    byte[] altered = records.get(3).clone();
    altered[5] ^= 0x10;
    assertArrayEquals(altered, read.get(3));
  }

  @Test
  public void unknownPolicyIsRejected() {
    conf.set(TFRecordConfig.CORRUPT_POLICY, "ignore");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> api.read(conf, out));
    assertThat(e.getMessage(), containsString(TFRecordConfig.CORRUPT_POLICY));
  }
}
