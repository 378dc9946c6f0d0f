package org.tfrecordio.mapred;

import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.JobClient;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RunningJob;
import org.apache.hadoop.mapred.lib.IdentityMapper;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.testutil.HadoopApi;
import org.tfrecordio.testutil.LocalJobs;
import org.tfrecordio.testutil.Records;

/** A job of the old API (LocalJobRunner), as Hive runs them: identity map, no reducers. */
public class LocalMapredJobTest {
  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  @Test
  public void identityJobCopiesEveryRecordOnceIntoIndexedPartFiles() throws Exception {
    JobConf job = new JobConf(LocalJobs.conf(tmp.getRoot()));
    Path in = new Path(tmp.getRoot().toURI().toString(), "in");
    Path out = new Path(tmp.getRoot().toURI().toString(), "out");
    List<byte[]> a = Records.random(1, 200, 300);
    List<byte[]> b = Records.random(2, 50, 300);
    HadoopApi.MAPRED.write(job, in, a, b);

    job.setJobName("tfrecord identity (mapred)");
    job.setInputFormat(TFRecordInputFormat.class);
    job.setOutputFormat(TFRecordOutputFormat.class);
    job.setMapperClass(IdentityMapper.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(BytesWritable.class);
    job.setOutputValueClass(NullWritable.class);
    // The local runner asks the old API for one split per file (it sets mapreduce.job.maps to
    // 1); a small block size makes several. An uncached file system sees this setting.
    job.setLong("fs.local.block.size", 8 * 1024);
    job.setBoolean("fs.file.impl.disable.cache", true);
    FileInputFormat.setInputPaths(job, in);
    FileOutputFormat.setOutputPath(job, out);
    RunningJob running = JobClient.runJob(job);
    assertTrue("job succeeded", running.isSuccessful());

    List<byte[]> expected = new ArrayList<>(a);
    expected.addAll(b);
    File outDir = LocalJobs.local(out);
    List<String> parts = LocalJobs.files(outDir, ".tfrecord");
    assertTrue("more part files than input files: " + parts, parts.size() > 2);
    List<byte[]> written = new ArrayList<>();
    for (String part : parts) {
      assertTrue(part, part.matches("part-\\d{5}\\.tfrecord"));
      written.addAll(LocalJobs.readIndexedFile(new File(outDir, part)));
    }
    Records.assertRecords(LocalJobs.sorted(expected), LocalJobs.sorted(written));
  }
}
