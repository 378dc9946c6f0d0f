package org.tfrecordio.spark.source;

import static org.junit.Assert.assertEquals;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.testutil.Records;

/**
 * Which names under an input path are data, as Spark's file index has it: a directory named
 * {@code _col=value} is a partition directory, {@code _x} and {@code .x} are not data, and a
 * path given as it is is read whatever its name.
 */
public class PartitionDiscoveryTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();
  private final Configuration conf = new Configuration();

  /** A tree as save_dataframe(partition_by=["_split"]) writes it, with what Hadoop leaves. */
  private File underscorePartitionedTree() throws IOException {
    File root = tmp.newFolder("data");
    for (String split : new String[] {"train", "test"}) {
      File dir = new File(root, "_split=" + split);
      dir.mkdirs();
      Records.writeLocal(new File(dir, "part-0.tfrecord"), Records.frameAll(Records.random(1, 5, 20)));
      Records.writeLocal(new File(dir, "_part-0.tfrecord.tfindex"), new byte[] {'0', '\n'});
      Records.writeLocal(new File(dir, ".part-0.tfrecord.crc"), new byte[8]);
    }
    Records.writeLocal(new File(root, "_SUCCESS"), new byte[0]);
    File temporary = new File(root, "_temporary/0");
    temporary.mkdirs();
    Records.writeLocal(new File(temporary, "part-9.tfrecord"), Records.frameAll(Records.random(2, 5, 20)));
    File hidden = new File(root, ".staging");
    hidden.mkdirs();
    Records.writeLocal(new File(hidden, "part-8.tfrecord"), Records.frameAll(Records.random(3, 5, 20)));
    return root;
  }

  private static Set<String> names(List<FileStatus> files) {
    Set<String> out = new TreeSet<>();
    for (FileStatus f : files) {
      out.add(f.getPath().getParent().getName() + "/" + f.getPath().getName());
    }
    return out;
  }

  @Test
  public void directoriesNamedUnderscoreColumnEqualsValueArePartitionDirectories()
      throws IOException {
    File root = underscorePartitionedTree();
    PartitionDiscovery.Layout layout = PartitionDiscovery.discover(conf, root.toURI().toString());
    assertEquals(List.of("_split"), layout.columns);
    assertEquals(Set.of("train", "test"), layout.values.get(0));
    assertEquals(2, layout.files);
    assertEquals(Set.of("_split=test/part-0.tfrecord", "_split=train/part-0.tfrecord"),
        names(layout.found));
  }

  @Test
  public void aPathGivenAsItIsIsReadWhateverItsName() throws IOException {
    File root = underscorePartitionedTree();
    PartitionDiscovery.Layout layout =
        PartitionDiscovery.discover(conf, new File(root, "_split=train").toURI().toString());
    assertEquals(List.of(), layout.columns);
    assertEquals(Set.of("_split=train/part-0.tfrecord"), names(layout.found));
  }

  @Test
  public void aGlobLeavesOutTheHiddenNamesItMatches() throws IOException {
    File root = underscorePartitionedTree();
    PartitionDiscovery.Layout layout =
        PartitionDiscovery.discover(conf, new File(root, "*").getAbsolutePath());
    assertEquals(Set.of("_split=test/part-0.tfrecord", "_split=train/part-0.tfrecord"),
        names(layout.found));
  }

  @Test
  public void theInferenceJobsInputFormatReadsTheFilesOfUnderscorePartitionDirectories()
      throws IOException {
    File root = underscorePartitionedTree();
    Job job = Job.getInstance(conf);
    FileInputFormat.setInputPaths(job, new Path(root.toURI()));
    List<String> read = new ArrayList<>();
    for (InputSplit split : new DiscoveredInputFormat().getSplits(job)) {
      Path p = ((FileSplit) split).getPath();
      read.add(p.getParent().getName() + "/" + p.getName());
    }
    read.sort(null);
    assertEquals(List.of("_split=test/part-0.tfrecord", "_split=train/part-0.tfrecord"), read);
  }

  @Test
  public void aFileBeingCopiedIsLeftOut() throws IOException {
    File root = tmp.newFolder("copying");
    Records.writeLocal(new File(root, "part-0.tfrecord"), Records.frameAll(Records.random(1, 5, 20)));
    Records.writeLocal(new File(root, "part-1.tfrecord._COPYING_"), new byte[] {1, 2, 3});
    PartitionDiscovery.Layout layout = PartitionDiscovery.discover(conf, root.toURI().toString());
    assertEquals(Set.of("copying/part-0.tfrecord"), names(layout.found));
  }
}
