package org.tfrecordio.spark;

import static org.hamcrest.CoreMatchers.containsString;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import java.util.List;
import org.apache.spark.sql.types.StructType;
import org.junit.Test;
import org.tfrecordio.example.SchemaException;

/** How partition columns named to {@link RowEncoder#plan} resolve to the DataFrame's columns. */
public class RowEncoderTest {
  private static final StructType SCHEMA = StructType.fromDDL("id bigint, Year string");

  @Test
  public void aPartitionColumnNamedInAnotherCaseIsTheColumnWhenNamesAreNotCaseSensitive() {
    RowEncoder plan = RowEncoder.plan(SCHEMA, RowEncoder.EXAMPLE, List.of("year"), false);
    assertEquals(1, plan.context.length);
    assertEquals("id", plan.context[0].name);
  }

  @Test
  public void aPartitionColumnNamedInAnotherCaseIsNotAColumnWhenNamesAreCaseSensitive() {
    SchemaException e = assertThrows(SchemaException.class,
        () -> RowEncoder.plan(SCHEMA, RowEncoder.EXAMPLE, List.of("year"), true));
    assertThat(e.getMessage(), containsString("partition column 'year' is not a column"));
  }

  @Test
  public void oneColumnNamedTwiceInDifferentCasesIsNamedMoreThanOnce() {
    SchemaException e = assertThrows(SchemaException.class,
        () -> RowEncoder.plan(SCHEMA, RowEncoder.EXAMPLE, List.of("year", "YEAR"), false));
    assertThat(e.getMessage(), containsString("is named more than once"));
  }
}
