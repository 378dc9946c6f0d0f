package org.tfrecordio.mapreduce;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.hadoop.TFRecordConfig;
import org.tfrecordio.hadoop.TFRecordCounter;
import org.tfrecordio.testutil.HadoopApi;
import org.tfrecordio.testutil.LocalJobs;
import org.tfrecordio.testutil.Records;

/**
 * A plain MapReduce job (LocalJobRunner): TFRecordInputFormat, identity mapper, no reducers,
 * TFRecordOutputFormat.
 */
public class LocalMapReduceJobTest {
  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  @Test
  public void identityJobCopiesEveryRecordOnceIntoIndexedPartFiles() throws Exception {
    Configuration conf = LocalJobs.conf(tmp.getRoot());
    Path in = new Path(tmp.getRoot().toURI().toString(), "in");
    Path out = new Path(tmp.getRoot().toURI().toString(), "out");
    List<byte[]> a = Records.random(1, 300, 200);
    List<byte[]> b = Records.random(2, 100, 200);
    List<byte[]> damaged = Records.random(3, 10, 20);
    HadoopApi.MAPREDUCE.write(conf, in, a, b, damaged);
    // Damage the data of one record of the third file.
    File third = new File(LocalJobs.local(in), HadoopApi.MAPREDUCE.partName(2, ".tfrecord"));
    byte[] bytes = Records.readLocal(third);
    long[] bounds = Records.boundaries(damaged);
    bytes[(int) bounds[4] + 11] ^= 1; // length checksum of record 4
    Records.writeLocal(third, bytes);

    Job job = Job.getInstance(conf, "tfrecord identity");
    job.getConfiguration().set(TFRecordConfig.CORRUPT_POLICY, "skip");
    job.setInputFormatClass(TFRecordInputFormat.class);
    job.setOutputFormatClass(TFRecordOutputFormat.class);
    job.setMapperClass(Mapper.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(BytesWritable.class);
    job.setOutputValueClass(NullWritable.class);
    FileInputFormat.setInputPaths(job, in);
    FileInputFormat.setMaxInputSplitSize(job, 16 * 1024); // several splits of the first file
    FileOutputFormat.setOutputPath(job, out);
    assertTrue("job succeeded", job.waitForCompletion(false));

    List<byte[]> expected = new ArrayList<>(a);
    expected.addAll(b);
    expected.addAll(damaged.subList(0, 4));
    expected.addAll(damaged.subList(5, damaged.size()));

    File outDir = LocalJobs.local(out);
    List<String> parts = LocalJobs.files(outDir, ".tfrecord");
    assertTrue("one part file per split, more than one per big file: " + parts,
        parts.size() > 3);
    assertTrue(new File(outDir, "_SUCCESS").isFile());
    List<byte[]> written = new ArrayList<>();
    for (String part : parts) {
      assertTrue(part, part.matches("part-m-\\d{5}\\.tfrecord"));
      written.addAll(LocalJobs.readIndexedFile(new File(outDir, part)));
    }
    Records.assertRecords(LocalJobs.sorted(expected), LocalJobs.sorted(written));

    assertEquals(expected.size(),
        job.getCounters().findCounter(TaskCounter.MAP_INPUT_RECORDS).getValue());
    assertEquals(1, job.getCounters().findCounter(TFRecordCounter.CORRUPT_RECORDS_SKIPPED)
        .getValue());
    assertEquals(bounds[5] - bounds[4],
        job.getCounters().findCounter(TFRecordCounter.CORRUPT_BYTES_SKIPPED).getValue());
  }
}
