package org.tfrecordio.spark.feed;

import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

/** The checks of a feed plan against the data it deals (no Spark needed). */
public class FeedBatchesTest {

  @Test
  public void fewerPartitionsThanCountedRecordsInFailTheFeedLoudly() {
    // Counted as 3 partitions of 3 rows (sync mode, 2 workers): a DataFrame that has 2
    // partitions at send runs no task for the third, so no task's count check can see it.
    FeedBatches.Deal deal = new FeedBatches.Deal(new long[] {0, 3, 6}, new long[] {3, 3, 3}, 8,
        2, 1, 1 << 20);
    deal.checkPartitions(3);
    new FeedBatches.Deal(null, new long[] {3, 3, 0}, 6, 2, 1, 1 << 20).checkPartitions(2);
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> deal.checkPartitions(2));
    assertTrue(e.getMessage(), e.getMessage().startsWith(
        "the data has 2 partitions now but had 3 when it was counted for the feed (3 records "
        + "counted in the partitions now gone)"));
    assertTrue(e.getMessage(), e.getMessage().contains("cache it"));
  }
}
