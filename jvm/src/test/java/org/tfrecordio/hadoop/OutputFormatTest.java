package org.tfrecordio.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.junit.Before;
import org.junit.Test;
import org.tfrecordio.testutil.BothApisTest;
import org.tfrecordio.testutil.HadoopApi;
import org.tfrecordio.testutil.Records;

/**
 * Both OutputFormats under their output committer: what a committed job leaves in the output
 * directory (part files and their hidden indexes), what an aborted task attempt leaves (nothing),
 * and that the output reads back through both InputFormats.
 */
public class OutputFormatTest extends BothApisTest {
  private Configuration conf;
  private Path out;
  private File outDir;

  @Before
  public void setUp() {
    conf = new Configuration();
    out = new Path(tmp.getRoot().toURI().toString(), "out");
    outDir = new File(tmp.getRoot(), "out");
  }

  /** The output directory's entries, without the checksum files of the local file system. */
  private Set<String> listing() {
    Set<String> names = new TreeSet<>();
    for (String name : outDir.list()) {
      if (!name.endsWith(".crc")) {
        names.add(name);
      }
    }
    return names;
  }

  private static Set<String> setOf(String... names) {
    return new TreeSet<>(Arrays.asList(names));
  }

  private String part(int task) {
    return api.partName(task, ".tfrecord");
  }

  private String index(int task) {
    return "_" + part(task) + ".tfindex";
  }

  @Test
  public void committedOutputReadsBackThroughBothInputFormats() throws IOException {
    List<byte[]> a = Records.random(1, 100, 300);
    List<byte[]> b = Records.random(2, 50, 300);
    api.write(conf, out, a, b);
    List<byte[]> expected = new ArrayList<>(a);
    expected.addAll(b);
    for (HadoopApi reader : HadoopApi.values()) {
      Records.assertRecords("read by " + reader, expected, reader.read(conf, out).records());
      Records.assertRecords("read by " + reader + " in 200-byte splits", expected,
          reader.read(conf, out, 200).records());
    }
  }

  @Test
  public void committedOutputIsOnePartFilePerTaskWithItsHiddenIndex() throws IOException {
    api.write(conf, out, Records.random(3, 10, 50), Records.random(4, 10, 50));
    assertEquals(setOf(part(0), index(0), part(1), index(1), "_SUCCESS"), listing());
  }

  @Test
  public void localOutputHasNoChecksumFilesForPartsAndIndexes() throws IOException {
    api.write(conf, out, Records.random(3, 10, 50), Records.random(4, 10, 50));
    Set<String> crcs = new TreeSet<>();
    for (String name : outDir.list()) {
      if (name.endsWith(".crc") && !name.equals("._SUCCESS.crc")) { // the committer's marker
        crcs.add(name);
      }
    }
    assertEquals(setOf(), crcs);
  }

  @Test
  public void partFileHoldsExactlyTheTFRecordFramingOfTheRecords() throws IOException {
    List<byte[]> records = Records.random(5, 100, 1000);
    api.write(conf, out, records);
    assertArrayEquals(Records.frameAll(records), Records.readLocal(new File(outDir, part(0))));
  }

  @Test
  public void indexListsOffsetAndFramedLengthOfEveryRecordThenTheirCount() throws IOException {
    List<byte[]> records = Records.random(6, 30, 100);
    api.write(conf, out, records);
    long[] bounds = Records.boundaries(records);
    StringBuilder expected = new StringBuilder();
    for (int i = 0; i < records.size(); i++) {
      expected.append(bounds[i]).append(' ').append(records.get(i).length + 16).append('\n');
    }
    expected.append("# 30 records\n");
    assertEquals(expected.toString(), new String(
        Records.readLocal(new File(outDir, index(0))), StandardCharsets.US_ASCII));
  }

  @Test
  public void indexIsHiddenFromFileInputFormatListing() throws IOException {
    api.write(conf, out, Records.random(7, 10, 50));
    assertTrue(new File(outDir, index(0)).isFile());

    Job job = Job.getInstance(conf);
    org.apache.hadoop.mapreduce.lib.input.FileInputFormat.setInputPaths(job, out);
    List<String> listed = new ArrayList<>();
    for (FileStatus f : new ListingMapreduceFormat().list(job)) {
      listed.add(f.getPath().getName());
    }
    assertEquals(Collections.singletonList(part(0)), listed);

    JobConf jobConf = new JobConf(conf);
    org.apache.hadoop.mapred.FileInputFormat.setInputPaths(jobConf, out);
    listed.clear();
    for (FileStatus f : new ListingMapredFormat().list(jobConf)) {
      listed.add(f.getPath().getName());
    }
    assertEquals(Collections.singletonList(part(0)), listed);
  }

  private static final class ListingMapreduceFormat
      extends org.tfrecordio.mapreduce.TFRecordInputFormat {
    List<FileStatus> list(JobContext job) throws IOException {
      return listStatus(job);
    }
  }

  private static final class ListingMapredFormat
      extends org.tfrecordio.mapred.TFRecordInputFormat {
    FileStatus[] list(JobConf job) throws IOException {
      return listStatus(job);
    }
  }

  @Test
  public void abortedTaskAttemptLeavesNoPartFileAndNoIndex() throws IOException {
    HadoopApi.OutputJob job = api.outputJob(conf, out);
    HadoopApi.TaskAttempt attempt = job.task(0, 0);
    attempt.write(Records.random(8, 20, 50));
    attempt.abort();
    job.commitJob();
    assertEquals(setOf("_SUCCESS"), listing());
    Records.assertRecords(Collections.emptyList(), api.read(conf, out).records());
  }

  @Test
  public void retriedTaskPublishesOnlyTheCommittedAttempt() throws IOException {
    List<byte[]> failed = Records.random(9, 20, 50);
    List<byte[]> retried = Records.random(10, 15, 50);
    HadoopApi.OutputJob job = api.outputJob(conf, out);
    HadoopApi.TaskAttempt first = job.task(0, 0);
    first.write(failed);
    first.abort();
    HadoopApi.TaskAttempt second = job.task(0, 1);
    second.write(retried);
    second.commit();
    job.commitJob();
    assertEquals(setOf(part(0), index(0), "_SUCCESS"), listing());
    for (HadoopApi reader : HadoopApi.values()) {
      Records.assertRecords(retried, reader.read(conf, out, 100).records());
    }
  }

  @Test
  public void uncommittedOutputIsNotVisibleInTheOutputDirectory() throws IOException {
    HadoopApi.OutputJob job = api.outputJob(conf, out);
    HadoopApi.TaskAttempt attempt = job.task(0, 0);
    attempt.write(Records.random(11, 5, 50));
    assertFalse(new File(outDir, part(0)).exists());
    assertFalse(new File(outDir, index(0)).exists());
    attempt.commit();
    job.commitJob();
    assertTrue(new File(outDir, part(0)).isFile());
    assertTrue(new File(outDir, index(0)).isFile());
  }

  @Test
  public void noIndexIsWrittenWhenDisabled() throws IOException {
    conf.setBoolean(TFRecordConfig.WRITE_INDEX, false);
    List<byte[]> records = Records.random(12, 10, 50);
    api.write(conf, out, records);
    assertEquals(setOf(part(0), "_SUCCESS"), listing());
    Records.assertRecords(records, api.read(conf, out).records());
  }

  @Test
  public void outputExtensionIsConfigurable() throws IOException {
    conf.set(TFRecordConfig.OUTPUT_EXTENSION, ".tfr");
    List<byte[]> records = Records.random(13, 10, 50);
    api.write(conf, out, records);
    String name = api.partName(0, ".tfr");
    assertEquals(setOf(name, "_" + name + ".tfindex", "_SUCCESS"), listing());
    HadoopApi.Read read = api.read(conf, out, 100);
    assertTrue("the index is found and used for splits", read.splits.size() > 1);
    Records.assertRecords(records, read.records());
  }

  @Test
  public void taskWithoutRecordsWritesAnEmptyFileAndAnIndexOfNoRecords() throws IOException {
    api.write(conf, out, Collections.emptyList());
    assertEquals(setOf(part(0), index(0), "_SUCCESS"), listing());
    assertEquals(0, new File(outDir, part(0)).length());
    assertEquals("# 0 records\n", new String(
        Records.readLocal(new File(outDir, index(0))), StandardCharsets.US_ASCII));
  }
}
