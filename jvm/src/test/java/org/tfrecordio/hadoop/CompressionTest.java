package org.tfrecordio.hadoop;

import static org.hamcrest.CoreMatchers.containsString;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.zip.DeflaterOutputStream;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import java.util.zip.InflaterInputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.DefaultCodec;
import org.apache.hadoop.io.compress.GzipCodec;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.junit.Before;
import org.junit.Test;
import org.tfrecordio.testutil.BothApisTest;
import org.tfrecordio.testutil.HadoopApi;
import org.tfrecordio.testutil.HadoopApi.Read;
import org.tfrecordio.testutil.Records;

/**
 * Compressed TFRecord files: written through both OutputFormats with Hadoop's output
 * compression settings, named after the codec, never indexed, read back whole (one split);
 * and the {@code tfrecord.input.compression} setting that overrides the file name.
 */
public class CompressionTest extends BothApisTest {
  private Configuration conf;
  private Path out;
  private File outDir;
  private List<byte[]> records;

  @Before
  public void setUp() {
    conf = new Configuration();
    out = new Path(tmp.getRoot().toURI().toString(), "out");
    outDir = new File(tmp.getRoot(), "out");
    records = Records.random(1, 200, 300);
  }

  private Configuration compressing(Class<?> codec) {
    Configuration c = new Configuration(conf);
    c.setBoolean(FileOutputFormat.COMPRESS, true);
    if (codec != null) {
      c.set(FileOutputFormat.COMPRESS_CODEC, codec.getName());
    }
    return c;
  }

  private Set<String> listing() {
    Set<String> names = new TreeSet<>();
    for (String name : outDir.list()) {
      if (!name.endsWith(".crc")) {
        names.add(name);
      }
    }
    return names;
  }

  private static byte[] drain(InputStream in) throws IOException {
    try (InputStream s = in) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      s.transferTo(out);
      return out.toByteArray();
    }
  }

  /** Reads {@code input} whole and in tiny splits: always one split, all records. */
  private void assertReadsBackAsOneSplit(Configuration c, Path input, List<byte[]> expected)
      throws IOException {
    for (HadoopApi reader : HadoopApi.values()) {
      for (long size : new long[] {0, 1, 100}) {
        Read read = reader.read(c, input, size);
        assertEquals(reader + ", split size " + size, 1, read.splits.size());
        Records.assertRecords(reader + ", split size " + size, expected, read.records());
      }
    }
  }

  /** A directory holding one file, named {@code name}, with {@code content}. */
  private Path inputFile(String name, byte[] content) throws IOException {
    File dir = tmp.newFolder();
    Files.write(new File(dir, name).toPath(), content);
    return new Path(dir.toURI().toString());
  }

  @Test
  public void gzipOutputIsNamedTfrecordGzHasNoIndexAndReadsBackAsOneSplit() throws IOException {
    Configuration c = compressing(GzipCodec.class);
    api.write(c, out, records);
    String name = api.partName(0, ".tfrecord.gz");
    assertEquals(new TreeSet<>(Arrays.asList(name, "_SUCCESS")), listing());
    byte[] plain = drain(new GZIPInputStream(
        new ByteArrayInputStream(Records.readLocal(new File(outDir, name)))));
    assertArrayEquals(Records.frameAll(records), plain);
    c.setBoolean(TFRecordConfig.SPLIT_RESYNC, true); // still one split: gzip is not splittable
    assertReadsBackAsOneSplit(c, out, records);
  }

  @Test
  public void deflateOutputIsNamedTfrecordDeflateHasNoIndexAndReadsBack() throws IOException {
    Configuration c = compressing(DefaultCodec.class);
    api.write(c, out, records);
    String name = api.partName(0, ".tfrecord.deflate");
    assertEquals(new TreeSet<>(Arrays.asList(name, "_SUCCESS")), listing());
    byte[] plain = drain(new InflaterInputStream( // zlib stream
        new ByteArrayInputStream(Records.readLocal(new File(outDir, name)))));
    assertArrayEquals(Records.frameAll(records), plain);
    assertReadsBackAsOneSplit(c, out, records);
  }

  @Test
  public void compressionWithoutACodecChoiceUsesHadoopsDefaultCodec() throws IOException {
    // As for Hadoop's own formats: mapred-default.xml sets ...compress.codec to DefaultCodec.
    Configuration c = compressing(null);
    api.write(c, out, records);
    assertEquals(new TreeSet<>(Arrays.asList(api.partName(0, ".tfrecord.deflate"), "_SUCCESS")),
        listing());
    assertReadsBackAsOneSplit(c, out, records);
  }

  @Test
  public void gzipFileWrittenByAnotherProgramReadsBack() throws IOException {
    ByteArrayOutputStream gz = new ByteArrayOutputStream();
    try (GZIPOutputStream z = new GZIPOutputStream(gz)) {
      z.write(Records.frameAll(records));
    }
    assertReadsBackAsOneSplit(conf, inputFile("data.tfrecord.gz", gz.toByteArray()), records);
  }

  /**
   * The names that the Python readers (and so TensorFlow through tfrecord-io, and the command
   * line) take as compressed, {@code .zlib} and {@code .zz} for zlib and the endings in any
   * case, are read as compressed here too, not as damaged uncompressed records: Hadoop's codec
   * factory alone knows only {@code .deflate} and {@code .gz}, in lower case.
   */
  @Test
  public void fileNamesThePythonReadersTakeAsCompressedAreReadAsCompressed() throws IOException {
    ByteArrayOutputStream zlib = new ByteArrayOutputStream();
    try (DeflaterOutputStream z = new DeflaterOutputStream(zlib)) {
      z.write(Records.frameAll(records));
    }
    ByteArrayOutputStream gz = new ByteArrayOutputStream();
    try (GZIPOutputStream z = new GZIPOutputStream(gz)) {
      z.write(Records.frameAll(records));
    }
    for (String name : new String[] {"data.tfrecord.zlib", "data.tfrecord.zz",
        "DATA.TFRECORD.ZLIB", "data.tfrecord.Deflate"}) {
      assertReadsBackAsOneSplit(conf, inputFile(name, zlib.toByteArray()), records);
    }
    assertReadsBackAsOneSplit(conf, inputFile("DATA.TFRECORD.GZ", gz.toByteArray()), records);
  }

  @Test
  public void gzipSettingReadsAGzipFileWhateverItsName() throws IOException {
    api.write(compressing(GzipCodec.class), out, records);
    Path input = inputFile("data.tfrecord",
        Records.readLocal(new File(outDir, api.partName(0, ".tfrecord.gz"))));
    assertThrows("read as uncompressed by its name", IOException.class,
        () -> api.read(conf, input));
    conf.set(TFRecordConfig.INPUT_COMPRESSION, "gzip");
    assertReadsBackAsOneSplit(conf, input, records);
  }

  @Test
  public void zlibSettingReadsADeflateFileWhateverItsName() throws IOException {
    api.write(compressing(DefaultCodec.class), out, records);
    Path input = inputFile("data.tfrecord",
        Records.readLocal(new File(outDir, api.partName(0, ".tfrecord.deflate"))));
    conf.set(TFRecordConfig.INPUT_COMPRESSION, "zlib");
    assertReadsBackAsOneSplit(conf, input, records);
  }

  @Test
  public void noneSettingReadsAnUncompressedFileNamedLikeACompressedOne() throws IOException {
    Path input = inputFile("data.tfrecord.gz", Records.frameAll(records));
    assertThrows("read as gzip by its name", IOException.class, () -> api.read(conf, input));
    conf.set(TFRecordConfig.INPUT_COMPRESSION, "none");
    Records.assertRecords(records, api.read(conf, input).records());
  }

  @Test
  public void codecClassNameSettingIsUsed() throws IOException {
    api.write(compressing(GzipCodec.class), out, records);
    Path input = inputFile("data",
        Records.readLocal(new File(outDir, api.partName(0, ".tfrecord.gz"))));
    conf.set(TFRecordConfig.INPUT_COMPRESSION, GzipCodec.class.getName());
    assertReadsBackAsOneSplit(conf, input, records);
  }

  @Test
  public void unknownCompressionSettingIsRejected() throws IOException {
    api.write(conf, out, records);
    conf.set(TFRecordConfig.INPUT_COMPRESSION, "brotli");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> api.read(conf, out));
    assertThat(e.getMessage(), containsString(TFRecordConfig.INPUT_COMPRESSION));
  }
}
