package org.tfrecordio.hadoop;

import static org.hamcrest.CoreMatchers.containsString;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Test;
import org.tfrecordio.codec.CorruptRecordException;
import org.tfrecordio.testutil.BothApisTest;
import org.tfrecordio.testutil.Compressed.Format;
import org.tfrecordio.testutil.HadoopApi.Read;
import org.tfrecordio.testutil.Records;

/**
 * Headers whose length checksum is valid but whose length is hostile: skipping resumes at the
 * byte after the damaged header, a length is never trusted for an allocation, and resynchronising
 * over many such headers takes time linear in the file. Plain, gzip and zlib files.
 */
public class HostileLengthTest extends BothApisTest {
  private static final long MIB = 1 << 20;

  private String[] extensions() {
    return new String[] {"", Format.GZIP.extension, Format.ZLIB.extension};
  }

  private byte[] encode(String extension, byte[] framed) throws IOException {
    if (extension.isEmpty()) {
      return framed;
    }
    return extension.equals(Format.GZIP.extension) ? Format.GZIP.hadoop(framed)
        : Format.ZLIB.jdk(framed);
  }

  private Path dir(String name) {
    return new Path(new File(tmp.getRoot(), name).toURI().toString());
  }

  private Path write(String dirName, String extension, byte[] framed) throws IOException {
    File d = new File(tmp.getRoot(), dirName);
    d.mkdirs();
    File f = new File(d, "part.tfrecord" + extension);
    Records.writeLocal(f, encode(extension, framed));
    return new Path(f.toURI().toString());
  }

  private static Configuration skip() {
    Configuration c = new Configuration();
    c.set(TFRecordConfig.CORRUPT_POLICY, "skip");
    return c;
  }

  /** Record {@code k}'s header replaced by a valid one announcing {@code length} bytes. */
  private static byte[] withHeader(byte[] framed, long[] bounds, int k, long length) {
    byte[] copy = framed.clone();
    System.arraycopy(Records.header(length), 0, copy, (int) bounds[k], 12);
    return copy;
  }

  @Test
  public void skipAfterALongValidLengthWhoseDataFailsResumesAfterTheHeader() throws IOException {
    List<byte[]> records = Records.random(3, 300, 100);
    byte[] framed = Records.frameAll(records);
    long[] bounds = Records.boundaries(records);
    List<byte[]> expected = new ArrayList<>(records);
    expected.remove(100);
    // Announces all but the last 50 bytes of the file: the length fits, the data CRC fails.
    long fits = framed.length - bounds[100] - 16 - 50;
    for (long length : new long[] {fits, MIB, 256 * MIB}) {
      for (String ext : extensions()) {
        String name = "long-" + length + ext.replace('.', '-');
        write(name, ext, withHeader(framed, bounds, 100, length));
        Read read = api.read(skip(), dir(name));
        Records.assertRecords(name, expected, read.records());
        assertEquals(name, 1, read.skippedRecords);
        assertEquals(name, bounds[101] - bounds[100], read.skippedBytes);
      }
    }
  }

  @Test
  public void longValidLengthFailsAtItsHeaderUnderTheFailPolicy() throws IOException {
    List<byte[]> records = Records.random(4, 50, 100);
    byte[] framed = Records.frameAll(records);
    long[] bounds = Records.boundaries(records);
    for (String ext : extensions()) {
      Path path = write("fail" + ext.replace('.', '-'), ext,
          withHeader(framed, bounds, 20, 64 * MIB));
      CompressedDamageTest.Outcome o =
          CompressedDamageTest.readUntilError(new Configuration(), path);
      Records.assertRecords(ext, records.subList(0, 20), o.records);
      assertEquals(ext, bounds[20], o.error.getOffset());
      assertThat(o.error.getMessage(), containsString("truncated record: " + 64 * MIB));
    }
  }

  /** Bytes this thread allocated while running {@code action}. */
  private static long allocatedBy(IORunnable action) throws IOException {
    com.sun.management.ThreadMXBean bean =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long id = Thread.currentThread().getId();
    long before = bean.getThreadAllocatedBytes(id);
    action.run();
    return bean.getThreadAllocatedBytes(id) - before;
  }

  private interface IORunnable {
    void run() throws IOException;
  }

  @Test
  public void smallFileAnnouncing256MiBAllocatesNoRecordBuffer() throws IOException {
    byte[] file = Records.concat(Records.header(256 * MIB), Records.randomBytes(7, 100));
    assertEquals(112, file.length);
    for (String ext : extensions()) {
      String name = "small" + ext.replace('.', '-');
      Path path = write(name, ext, file);
      IORunnable failingRead = () -> {
        CompressedDamageTest.Outcome o =
            CompressedDamageTest.readUntilError(new Configuration(), path);
        assertEquals(0, o.error.getOffset());
      };
      IORunnable skippingRead = () -> {
        Read read = api.read(skip(), dir(name));
        assertEquals(0, read.records().size());
        assertEquals(1, read.skippedRecords);
        assertEquals(112, read.skippedBytes);
      };
      // Once unmeasured: loading classes and filling first-use caches (tens of MB when this
      // class runs alone) is not a buffer for the record.
      failingRead.run();
      skippingRead.run();
      long failing = allocatedBy(failingRead);
      long skipping = allocatedBy(skippingRead);
      assertTrue(ext + ": allocated " + failing, failing < 32 * MIB);
      assertTrue(ext + ": allocated " + skipping, skipping < 32 * MIB);
    }
  }

  @Test
  public void plainFileAnnouncingMoreThanItHoldsFailsBeforeReadingTheBytesAnnounced()
      throws IOException {
    // 4 MiB of data after a valid header announcing 200 MiB: the file's length says, before
    // anything is read for the record, that it cannot hold it.
    byte[] file = Records.concat(Records.header(200 * MIB), new byte[(int) (4 * MIB)]);
    Path path = write("announcing", "", file);
    Configuration conf = new Configuration();
    conf.setInt(TFRecordConfig.READ_BUFFER_BYTES, 64);
    try (SplitReader reader = new SplitReader(conf, path, 0, file.length)) {
      CorruptRecordException e = org.junit.Assert.assertThrows(CorruptRecordException.class,
          () -> reader.next(new org.apache.hadoop.io.BytesWritable()));
      assertEquals(0, e.getOffset());
      assertThat(e.getMessage(), containsString("truncated record: " + 200 * MIB
          + " data bytes announced, the file ends " + 4 * MIB + " bytes into them"));
      assertEquals("read buffer", 64, reader.reader().getBufferCapacity());
    }
  }

  @Test(timeout = 120_000) // a hang guard: the file is read in well under a second
  public void resyncOverManyHeadersAnnouncingMoreThanTheFileIsLinear() throws IOException {
    int headers = (int) (4 * MIB / 12);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] header = Records.header(200 * MIB);
    for (int i = 0; i < headers; i++) {
      out.write(header, 0, 12);
    }
    List<byte[]> tail = Records.random(5, 20, 50);
    byte[] tailBytes = Records.frameAll(tail);
    out.write(tailBytes, 0, tailBytes.length);
    for (String ext : extensions()) {
      String name = "headers" + ext.replace('.', '-');
      write(name, ext, out.toByteArray());
      Read read = api.read(skip(), dir(name));
      Records.assertRecords(name, tail, read.records());
      assertEquals(name, 1, read.skippedRecords);
      assertEquals(name, headers * 12L, read.skippedBytes);
    }
  }

  @Test
  public void lengthLargerThanTheMaximumNamesTheSetting() throws IOException {
    List<byte[]> records = Records.random(6, 10, 100);
    records.set(4, Records.randomBytes(8, 5000));
    Configuration conf = new Configuration();
    conf.setLong(TFRecordConfig.MAX_RECORD_BYTES, 4096);
    for (String ext : extensions()) {
      Path path = write("max" + ext.replace('.', '-'), ext, Records.frameAll(records));
      CorruptRecordException e = CompressedDamageTest.readUntilError(conf, path).error;
      assertEquals(Records.boundaries(records)[4], e.getOffset());
      assertThat(e.getMessage(), containsString(TFRecordConfig.MAX_RECORD_BYTES));
      assertThat(e.getMessage(), containsString(TFRecordConfig.CORRUPT_POLICY + "=skip"));
    }
  }
}
