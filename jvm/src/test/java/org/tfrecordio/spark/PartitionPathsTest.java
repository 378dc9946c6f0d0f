package org.tfrecordio.spark;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;

import java.util.Arrays;
import org.apache.hadoop.fs.Path;
import org.junit.Test;
import org.tfrecordio.example.SchemaException;

/** The partition path codec alone: no file system involved. */
public class PartitionPathsTest {
  @Test
  public void escapingAndUnescapingRoundTripAsSparkEscapes() {
    String v = "a/b=c%d:e";
    String escaped = PartitionPaths.escape(v);
    assertEquals("a%2Fb%3Dc%25d%3Ae", escaped);
    assertEquals(v, PartitionPaths.unescape(escaped));
    assertEquals("plain", PartitionPaths.escape("plain"));
  }

  @Test
  public void segmentValueIsUnescapedAndTheDefaultPartitionIsNull() {
    assertEquals("x y", PartitionPaths.value("col=x y"));
    assertEquals("a/b", PartitionPaths.value("col=a%2Fb"));
    assertNull(PartitionPaths.value("col=" + PartitionPaths.DEFAULT_PARTITION));
  }

  @Test
  public void valuesOfAFileComeFromItsLastDirectories() {
    Path file = new Path("hdfs://nn/data/year=2024/month=07/part-0.tfrecord");
    assertArrayEquals(new String[] {"2024", "07"},
        PartitionPaths.valuesOf(file, Arrays.asList("year", "month")));
  }

  @Test
  public void fileOutsideThePartitionDirectoriesIsASchemaException() {
    Path file = new Path("hdfs://nn/data/other/part-0.tfrecord");
    assertThrows(SchemaException.class,
        () -> PartitionPaths.valuesOf(file, Arrays.asList("year")));
  }
}
