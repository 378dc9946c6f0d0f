package org.tfrecordio.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;

import java.io.File;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/** The decompressed bytes of a compressed file, as the split reader reads its records. */
public class CompressedInputTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  /**
   * A file of no bytes at all holds no records, whatever its name says, as the Python readers
   * have it (and TensorFlow): not a damaged gzip or zlib stream that fails the task.
   */
  @Test
  public void anEmptyCompressedFileHoldsNoRecords() throws IOException {
    for (String policy : new String[] {"fail", "skip"}) {
      for (String name : new String[] {"empty.tfrecord.gz", "empty.tfrecord.deflate"}) {
        File f = tmp.newFile(policy + "-" + name);
        Configuration conf = new Configuration();
        conf.set(TFRecordConfig.CORRUPT_POLICY, policy);
        try (SplitReader reader = new SplitReader(conf, new Path(f.toURI()), 0, 0)) {
          assertFalse(policy + " " + name, reader.next(new BytesWritable()));
          assertEquals(policy + " " + name, 0, reader.reader().getSkippedRecords());
          assertEquals(policy + " " + name, 0, reader.reader().getSkippedBytes());
        }
      }
    }
  }
}
