package org.tfrecordio.spark.feed;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.junit.Test;

/** A feed batch's layout, and the feeding task when nobody reads (no Spark needed). */
public class FeedSenderTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static byte[] batch(int worker, String... records) {
    BatchBuilder builder = new BatchBuilder(worker, 4, 2, 16);
    for (String r : records) {
      byte[] bytes = r.getBytes(StandardCharsets.UTF_8);
      builder.add(bytes, bytes.length);
    }
    return builder.take(5);
  }

  @Test
  public void aBatchIsItsHeaderThenTheLengthsTableThenTheRecords() {
    byte[] batch = batch(1, "a", "bc");
    ByteBuffer header = ByteBuffer.wrap(batch);
    assertEquals(BatchBuilder.MAGIC, header.getInt());
    assertEquals(1, header.getInt()); // worker
    assertEquals(4, header.getInt()); // job
    assertEquals(2, header.getInt()); // partition
    assertEquals(5, header.getInt()); // seq
    assertEquals(2, header.getInt()); // records
    // the payload FeedSender sends: the golden vectors' batch payload (Python's layout.pack)
    byte[] payload = Arrays.copyOfRange(batch, BatchBuilder.HEADER_BYTES, batch.length);
    assertArrayEquals(new byte[] {0, 0, 0, 1, 0, 0, 0, 2, 'a', 'b', 'c'}, payload);
  }

  @Test
  public void aBuilderStartsAnEmptyBatchAfterTake() {
    BatchBuilder builder = new BatchBuilder(0, 0, 0, 16);
    builder.add(new byte[] {1, 2, 3}, 3);
    builder.take(0);
    assertEquals(0, builder.records());
    assertEquals(BatchBuilder.HEADER_BYTES, builder.size());
  }

  private static String closedAddress() throws Exception {
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return "127.0.0.1:" + socket.getLocalPort();
    }
  }

  @Test
  public void whenNoWorkerIsReachableTheTaskReportsThemAndLeavesTheRestUnread() throws Exception {
    String[] addresses = {closedAddress(), closedAddress()};
    FeedSender sender = new FeedSender("secret", addresses, "train", 1);
    List<byte[]> batches = List.of(batch(0, "x", "y"), batch(1, "z"), batch(0, "never read"));
    Iterator<byte[]> input = batches.iterator();
    Iterator<String> out = sender.call(input);
    JsonNode report = JSON.readTree(out.next());
    assertTrue(report.get("abandoned").asBoolean());
    assertTrue("the input was left unread", input.hasNext());
    JsonNode first = report.get("workers").get("0");
    assertEquals("unreachable", first.get("state").asText());
    assertEquals(2, first.get("dropped").asLong());
    assertEquals(0, first.get("records").asLong());
    assertEquals("unreachable", report.get("workers").get("1").get("state").asText());
  }
}
