package org.tfrecordio.spark.source;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.compress.GzipCodec;
import org.apache.hadoop.util.ReflectionUtils;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.codec.TFRecordIndex;
import org.tfrecordio.hadoop.FileRecordWriter;
import org.tfrecordio.hadoop.SplitReader;

/**
 * How the pieces Spark cuts a file into at arbitrary byte offsets map to records: with an index,
 * every record is in exactly one piece and counted without reading; without one, the piece
 * that starts at 0 reads the file; compressed files are read whole.
 */
public class FileRangeTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();
  private final Configuration conf = new Configuration();

  private Path write(String name, int records, boolean gzip) throws IOException {
    Path file = new Path(tmp.getRoot().getAbsolutePath(), name);
    try (FileRecordWriter w = new FileRecordWriter(conf, file,
        gzip ? ReflectionUtils.newInstance(GzipCodec.class, conf) : null)) {
      for (int i = 0; i < records; i++) {
        w.write(new BytesWritable(new byte[i % 50 + 1]));
      }
    }
    return file;
  }

  private long read(Path file, FileRange r) throws IOException {
    long n = 0;
    if (r.isEmpty()) {
      return 0;
    }
    try (SplitReader reader = new SplitReader(conf, file, r.start, r.length)) {
      BytesWritable v = new BytesWritable();
      while (reader.next(v)) {
        n++;
      }
    }
    return n;
  }

  @Test
  public void indexedPiecesHoldEveryRecordOnceAndKnowTheirCounts() throws IOException {
    Path file = write("a.tfrecord", 1000, false);
    long length = new File(file.toUri().getPath()).length();
    for (long piece : new long[] {1, 7, 100, 4096, length / 3, length}) {
      long counted = 0;
      long read = 0;
      for (long start = 0; start < length; start += piece) {
        FileRange r = FileRange.of(conf, file, start, Math.min(piece, length - start), length, true);
        counted += r.records;
        read += read(file, r);
        assertEquals(r.records, read(file, r));
      }
      assertEquals("pieces of " + piece + " bytes", 1000, counted);
      assertEquals(1000, read);
    }
  }

  @Test
  public void withoutAnIndexThePieceAtZeroReadsTheFile() throws IOException {
    Path file = write("b.tfrecord", 300, false);
    assertTrue(new File(tmp.getRoot(), TFRecordIndex.indexName("b.tfrecord")).delete());
    long length = new File(file.toUri().getPath()).length();
    FileRange first = FileRange.of(conf, file, 0, 100, length, true);
    FileRange second = FileRange.of(conf, file, 100, length - 100, length, true);
    assertEquals(-1, first.records);
    assertEquals(300, read(file, first));
    assertTrue(second.isEmpty());
  }

  @Test
  public void aStaleIndexIsNotUsed() throws IOException {
    Path file = write("c.tfrecord", 10, false);
    Path other = write("d.tfrecord", 5, false);
    File f = new File(file.toUri().getPath());
    Files.write(f.toPath(), Files.readAllBytes(new File(other.toUri().getPath()).toPath()),
        java.nio.file.StandardOpenOption.APPEND);
    FileRange r = FileRange.of(conf, file, 0, f.length(), f.length(), true);
    assertEquals(-1, r.records);
    assertEquals(15, read(file, r));
  }

  @Test
  public void aTruncatedFileIsNotCountedFromItsIndex() throws IOException {
    Path file = write("g.tfrecord", 10, false);
    File f = new File(file.toUri().getPath());
    byte[] data = Files.readAllBytes(f.toPath());
    Files.write(f.toPath(), java.util.Arrays.copyOf(data, data.length - 20));
    FileRange r = FileRange.of(conf, file, 0, f.length(), f.length(), true);
    assertEquals(-1, r.records);
  }

  /** {@code file} rewritten without an index to the same length: 2 records of 232 bytes. */
  private void rewriteToTheSameLength(Path file) throws IOException {
    Path other = new Path(tmp.getRoot().getAbsolutePath(), "other.tfrecord");
    try (FileRecordWriter w = new FileRecordWriter(conf, other, null)) {
      w.write(new BytesWritable(new byte[216]));
      w.write(new BytesWritable(new byte[216]));
    }
    Files.copy(new File(other.toUri().getPath()).toPath(),
        new File(file.toUri().getPath()).toPath(), StandardCopyOption.REPLACE_EXISTING);
  }

  @Test
  public void aFileRewrittenToTheSameLengthIsNotCountedFromItsOldIndex() throws IOException {
    Path file = new Path(tmp.getRoot().getAbsolutePath(), "s.tfrecord");
    try (FileRecordWriter w = new FileRecordWriter(conf, file, null)) {
      for (int i = 0; i < 4; i++) {
        w.write(new BytesWritable(new byte[100])); // 4 records of 116 bytes: 464
      }
    }
    rewriteToTheSameLength(file);
    long length = new File(file.toUri().getPath()).length();
    assertEquals(464, length);
    FileRange whole = FileRange.of(conf, file, 0, length, length, true);
    assertEquals(-1, whole.records);
    assertEquals(2, read(file, whole));
    long counted = 0;
    long read = 0;
    for (long start = 0; start < length; start += 100) {
      FileRange piece = FileRange.of(conf, file, start, Math.min(100, length - start), length,
          true);
      counted += Math.max(piece.records, 0);
      read += read(file, piece);
    }
    assertEquals(0, counted);
    assertEquals(2, read);
  }

  @Test
  public void aFileGoneSinceItWasListedIsNotCountedFromItsIndex() throws IOException {
    Path file = write("gone.tfrecord", 10, false);
    long length = new File(file.toUri().getPath()).length();
    assertTrue(new File(file.toUri().getPath()).delete());
    assertThrows(FileNotFoundException.class,
        () -> FileRange.of(conf, file, 0, length, length, true));
    assertThrows(FileNotFoundException.class,
        () -> FileRange.of(conf, file, 0, length / 2, length, true));
  }

  @Test
  public void anIndexWrittenWithoutATrailerIsStillCounted() throws IOException {
    Path file = write("h.tfrecord", 500, false);
    File index = new File(tmp.getRoot(), TFRecordIndex.indexName("h.tfrecord"));
    String text = new String(Files.readAllBytes(index.toPath()), StandardCharsets.US_ASCII);
    assertTrue(text.endsWith("\n# 500 records\n"));
    Files.write(index.toPath(), text.substring(0, text.lastIndexOf('#'))
        .getBytes(StandardCharsets.US_ASCII));
    long length = new File(file.toUri().getPath()).length();
    assertEquals(500, FileRange.of(conf, file, 0, length, length, true).records);
  }

  @Test
  public void aWholeFilePieceIsReadWithoutItsIndexUnlessCounting() throws IOException {
    Path file = write("f.tfrecord", 20, false);
    long length = new File(file.toUri().getPath()).length();
    assertEquals(-1, FileRange.of(conf, file, 0, length, length, false).records);
    assertEquals(20, FileRange.of(conf, file, 0, length, length, true).records);
    assertEquals(20, read(file, FileRange.of(conf, file, 0, length, length, false)));
  }

  @Test
  public void compressedFilesAreReadWholeByThePieceAtZero() throws IOException {
    Path file = write("e.tfrecord.gz", 200, true);
    long length = file.getFileSystem(conf).getFileStatus(file).getLen();
    assertEquals(200, read(file, FileRange.of(conf, file, 0, 10, length, true)));
    assertTrue(FileRange.of(conf, file, 10, 10, length, true).isEmpty());
  }
}
