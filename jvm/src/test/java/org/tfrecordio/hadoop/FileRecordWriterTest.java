package org.tfrecordio.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
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

  private static String[] sorted(String[] names) {
    Arrays.sort(names);
    return names;
  }
}
