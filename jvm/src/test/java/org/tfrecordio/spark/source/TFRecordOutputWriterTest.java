package org.tfrecordio.spark.source;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.StructType;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.tfrecordio.example.SchemaException;
import org.tfrecordio.spark.InternalRowEncoder;

/** The writer of one output file of a {@code format("tfrecord")} task. */
public class TFRecordOutputWriterTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  private static InternalRow longs(Object... values) {
    return new GenericInternalRow(new Object[] {new GenericArrayData(values)});
  }

  @Test
  public void aRowWithoutTFRecordFormIsNamedByItsPlaceInTheTasksFile() throws Exception {
    StructType schema = StructType.fromDDL("vals array<bigint>");
    File file = new File(tmp.getRoot(), "part-00003-x.tfrecord");
    TFRecordOutputWriter writer = new TFRecordOutputWriter(file.getAbsolutePath(),
        InternalRowEncoder.plan(schema, "Example"), new Configuration(), null);
    try {
      writer.write(longs(1L));
      writer.write(longs(2L, 3L));
      SchemaException e = assertThrows(SchemaException.class,
          () -> writer.write(longs(4L, null)));
      assertEquals("column 'vals': a null inside a list has no TFRecord form: drop the nulls "
          + "(array_compact) or replace them first (row 3 of the task's file "
          + "part-00003-x.tfrecord)", e.getMessage());
    } finally {
      writer.close();
    }
  }

  /** A task writes a file of one name into each partition directory: the error says which. */
  @Test
  public void aRowOfAPartitionedWriteIsNamedByItsPartitionDirectories() throws Exception {
    StructType schema = StructType.fromDDL("vals array<bigint>");
    File dir = new File(tmp.getRoot(), "_temporary/0/year=2020/kind=a%2Fb");
    assertEquals(true, dir.mkdirs());
    File file = new File(dir, "part-00001-x.c000.tfrecord");
    TFRecordOutputWriter writer = new TFRecordOutputWriter(file.getAbsolutePath(),
        InternalRowEncoder.plan(schema, "Example"), new Configuration(), null);
    try {
      SchemaException e = assertThrows(SchemaException.class,
          () -> writer.write(longs(4L, null)));
      assertEquals("column 'vals': a null inside a list has no TFRecord form: drop the nulls "
          + "(array_compact) or replace them first (row 1 of the task's file "
          + "year=2020/kind=a%2Fb/part-00001-x.c000.tfrecord)", e.getMessage());
    } finally {
      writer.close();
    }
  }
}
