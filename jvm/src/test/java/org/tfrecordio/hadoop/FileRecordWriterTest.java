package org.tfrecordio.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.compress.DefaultCodec;
import org.apache.hadoop.io.compress.GzipCodec;
import org.apache.hadoop.util.ReflectionUtils;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.testutil.Records;

public class FileRecordWriterTest {
  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  private final Configuration conf = new Configuration();

  @Test
  public void writesOnlyTheValidBytesOfABytesWritable() throws IOException {
    byte[] data = Records.randomBytes(1, 10);
    BytesWritable record = new BytesWritable(data);
    record.setCapacity(100); // the backing array is now longer than the record
    assertEquals(100, record.getBytes().length);
    File file = new File(tmp.getRoot(), "a.tfrecord");
    try (FileRecordWriter w = new FileRecordWriter(conf, new Path(file.toURI()), null)) {
      w.write(record);
    }
    assertArrayEquals(Records.frame(data), Records.readLocal(file));
    assertEquals("0 26\n# 1 records\n", new String(Records.readLocal(new File(tmp.getRoot(),
        "_a.tfrecord.tfindex")), StandardCharsets.US_ASCII));
  }

  @Test
  public void extensionIsTheConfiguredOnePlusTheCodecs() {
    assertEquals(".tfrecord", FileRecordWriter.extension(conf, null));
    assertEquals(".tfrecord.gz",
        FileRecordWriter.extension(conf, ReflectionUtils.newInstance(GzipCodec.class, conf)));
    assertEquals(".tfrecord.deflate",
        FileRecordWriter.extension(conf, ReflectionUtils.newInstance(DefaultCodec.class, conf)));
    Configuration custom = new Configuration(conf);
    custom.set(TFRecordConfig.OUTPUT_EXTENSION, ".records");
    assertEquals(".records.gz",
        FileRecordWriter.extension(custom, ReflectionUtils.newInstance(GzipCodec.class, conf)));
  }

  @Test
  public void compressedFilesGetNoIndex() throws IOException {
    File file = new File(tmp.getRoot(), "a.tfrecord.gz");
    try (FileRecordWriter w = new FileRecordWriter(conf, new Path(file.toURI()),
        ReflectionUtils.newInstance(GzipCodec.class, conf))) {
      w.write(new BytesWritable(new byte[3]));
    }
    // (and, on the local file system, no .a.tfrecord.gz.crc checksum file)
    assertEquals(Arrays.asList("a.tfrecord.gz"), Arrays.asList(sorted(tmp.getRoot().list())));
  }

  @Test
  public void refusesToOverwriteAnExistingFile() throws IOException {
    File file = tmp.newFile("a.tfrecord");
    assertThrows(IOException.class,
        () -> new FileRecordWriter(conf, new Path(file.toURI()), null).close());
    assertFalse(new File(tmp.getRoot(), "_a.tfrecord.tfindex").exists());
  }

  @Test
  public void closingTwiceReturnsTheCompressorOnceSoOtherWritersKeepTheirOwn() throws IOException {
    DefaultCodec zlib = ReflectionUtils.newInstance(DefaultCodec.class, conf);
    List<byte[]> records = Records.random(3, 60, 20_000);
    Path first = new Path(new File(tmp.getRoot(), "a.tfrecord.deflate").toURI());
    Path second = new Path(new File(tmp.getRoot(), "b.tfrecord.deflate").toURI());
    Path third = new Path(new File(tmp.getRoot(), "c.tfrecord.deflate").toURI());
    FileRecordWriter a = new FileRecordWriter(conf, first, zlib);
    a.write(new BytesWritable(records.get(0)));
    a.close();
    FileRecordWriter b = new FileRecordWriter(conf, second, zlib); // takes a's compressor
    for (byte[] r : records.subList(0, 30)) {
      b.write(new BytesWritable(r));
    }
    a.close(); // again, as a framework's failure path does: nothing happens
    FileRecordWriter c = new FileRecordWriter(conf, third, zlib);
    for (byte[] r : records.subList(30, 60)) {
      b.write(new BytesWritable(r));
      c.write(new BytesWritable(r));
    }
    b.close();
    c.close();
    Records.assertRecords(records.subList(0, 1), readAll(first));
    Records.assertRecords(records, readAll(second));
    Records.assertRecords(records.subList(30, 60), readAll(third));
  }

  @Test
  public void writingAfterCloseIsRefused() throws IOException {
    File file = new File(tmp.getRoot(), "a.tfrecord");
    FileRecordWriter w = new FileRecordWriter(conf, new Path(file.toURI()), null);
    w.close();
    IOException e = assertThrows(IOException.class, () -> w.write(new BytesWritable(new byte[1])));
    assertEquals("write to a closed TFRecord writer", e.getMessage());
  }

  private List<byte[]> readAll(Path file) throws IOException {
    List<byte[]> out = new ArrayList<>();
    try (SplitReader reader = new SplitReader(conf, file, 0, Long.MAX_VALUE / 2)) {
      BytesWritable value = new BytesWritable();
      while (reader.next(value)) {
        out.add(value.copyBytes());
      }
    }
    return out;
  }

  private static String[] sorted(String[] names) {
    Arrays.sort(names);
    return names;
  }
}
