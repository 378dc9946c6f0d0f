package org.tfrecordio.spark.feed;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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

  private static final String KEY = FeedStream.purposeKey("0123456789abcdef", FeedStream.FEED);
  private static final String[] NAMES = {"worker:0", "worker:1"};
  /** Deadlines that a server which answers meets, even on a loaded machine: 20 s each. */
  private static final FeedStream.Timeouts LONG = new FeedStream.Timeouts(20_000, 20_000, 20_000);

  private static FeedSender sender(String[] addresses, int attempt) {
    return sender(addresses, attempt, LONG);
  }

  private static FeedSender sender(String[] addresses, int attempt,
      FeedStream.Timeouts timeouts) {
    return new FeedSender(KEY, addresses, NAMES, attempt, "train", 1, timeouts);
  }

  private static JsonNode run(FeedSender sender, List<byte[]> batches) throws Exception {
    Iterator<String> out = sender.call(batches.iterator());
    JsonNode report = JSON.readTree(out.next());
    assertFalse(out.hasNext());
    return report;
  }

  @Test
  public void whenNoWorkerIsReachableTheTaskReportsThemAndLeavesTheRestUnread() throws Exception {
    String[] addresses = {closedAddress(), closedAddress()};
    FeedSender sender = sender(addresses, 0);
    List<byte[]> batches = List.of(batch(0, "x", "y"), batch(1, "z"), batch(0, "never read"));
    Iterator<byte[]> input = batches.iterator();
    Iterator<String> out = sender.call(input);
    JsonNode report = JSON.readTree(out.next());
    assertTrue(report.get("abandoned").asBoolean());
    assertTrue("the input was left unread", input.hasNext());
    assertFalse(report.get("host").asText().isEmpty());
    for (int w = 0; w < 2; w++) {
      JsonNode worker = report.get("workers").get(Integer.toString(w));
      assertEquals("unreachable", worker.get("state").asText());
      assertEquals(addresses[w], worker.get("address").asText());
      String cause = worker.get("cause").asText();
      assertTrue(cause, cause.contains(addresses[w]) && cause.contains(NAMES[w]));
    }
    JsonNode first = report.get("workers").get("0");
    assertEquals(2, first.get("dropped").asLong());
    assertEquals(0, first.get("records").asLong());
  }

  @Test
  public void sendsEveryBatchToItsWorkerWithTheAttemptInTheHelloAndKeysBoundToItsName()
      throws Exception {
    List<JsonNode> hellos = Collections.synchronizedList(new ArrayList<>());
    List<JsonNode> got0 = Collections.synchronizedList(new ArrayList<>());
    List<JsonNode> got1 = Collections.synchronizedList(new ArrayList<>());
    try (FakeFeedServer w0 = new FakeFeedServer(KEY, NAMES[0], 0, helloKept(hellos, got0));
        FakeFeedServer w1 = new FakeFeedServer(KEY, NAMES[1], 0, helloKept(hellos, got1))) {
      JsonNode report = run(sender(new String[] {w0.address(), w1.address()}, 3),
          List.of(batch(0, "x", "y"), batch(1, "z"), batch(0, "w")));
      assertFalse(report.get("abandoned").asBoolean());
      JsonNode first = report.get("workers").get("0");
      assertEquals(report.toString(), "ready", first.get("state").asText());
      assertEquals(3, first.get("records").asLong());
      assertEquals(2, first.get("batches").asLong());
      assertFalse(first.has("cause"));
      assertEquals(1, report.get("workers").get("1").get("records").asLong());
      assertEquals(2, got0.size());
      assertEquals(1, got1.size());
      assertEquals(10, got0.get(0).get("_payload").asLong()); // lengths table + "xy"
      assertEquals(2, hellos.size());
      for (JsonNode hello : hellos) {
        assertEquals("feeder", hello.get("type").asText());
        assertEquals("train", hello.get("feed").asText());
        assertEquals(1, hello.get("epoch").asInt());
        assertEquals(3, hello.get("attempt").asInt());
      }
      assertTrue(w0.errors.toString(), w0.errors.isEmpty());
      assertTrue(w1.errors.toString(), w1.errors.isEmpty());
    }
  }

  /**
   * A worker's server that answers ready, keeps the hello in {@code hellos} and every batch in
   * {@code batches}, and acknowledges the end.
   */
  private static FakeFeedServer.Handler helloKept(List<JsonNode> hellos, List<JsonNode> batches) {
    return c -> {
      c.handshake();
      hellos.add(c.receive());
      c.send(Collections.singletonMap("type", FeedStream.READY));
      while (true) {
        JsonNode message = c.receive();
        if (FeedStream.END.equals(message.path("type").asText())) {
          Map<String, Object> ack = new LinkedHashMap<>();
          ack.put("type", FeedStream.ACK);
          ack.put("stopped", false);
          c.send(ack);
          return;
        }
        batches.add(message);
      }
    };
  }

  @Test
  public void aServerOfAnotherNodeAtTheAddressIsUnreachableWithTheCause() throws Exception {
    List<JsonNode> got = Collections.synchronizedList(new ArrayList<>());
    List<Throwable> refused = Collections.synchronizedList(new ArrayList<>());
    // worker:1's server where the driver said worker:0's is: nothing decrypts either way
    try (FakeFeedServer w0 = new FakeFeedServer(KEY, NAMES[1], 0, c -> {
      c.handshake();
      try {
        c.receive();
      } catch (javax.crypto.AEADBadTagException e) {
        refused.add(e); // a hello that does not authenticate: refused
      }
      c.socket.close();
    });
        FakeFeedServer w1 = new FakeFeedServer(KEY, NAMES[1], 0, helloKept(
            Collections.synchronizedList(new ArrayList<>()), got))) {
      JsonNode report = run(sender(new String[] {w0.address(), w1.address()}, 0),
          List.of(batch(0, "x"), batch(1, "y")));
      JsonNode first = report.get("workers").get("0");
      assertEquals("unreachable", first.get("state").asText());
      assertEquals(w0.address(), first.get("address").asText());
      assertTrue(first.get("cause").asText(),
          first.get("cause").asText().contains("closed the connection"));
      assertEquals(1, first.get("dropped").asLong());
      assertEquals("ready", report.get("workers").get("1").get("state").asText());
      assertEquals(1, got.size());
      assertEquals("the hello did not decrypt on the other node's server", 1, refused.size());
    }
  }

  @Test
  public void aServerThatNeverGreetsIsUnreachableAfterTheHandshakesDeadline() throws Exception {
    try (FakeFeedServer w0 = new FakeFeedServer(KEY, NAMES[0], 0, c -> { });
        FakeFeedServer w1 = new FakeFeedServer(KEY, NAMES[1], 0, c -> { })) {
      long start = System.nanoTime();
      JsonNode report = run(sender(new String[] {w0.address(), w1.address()}, 0,
          new FeedStream.Timeouts(20_000, 1_000, 20_000)), List.of(batch(0, "x"), batch(1, "y")));
      assertTrue(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)
          < 20_000);
      JsonNode first = report.get("workers").get("0");
      assertEquals("unreachable", first.get("state").asText());
      assertTrue(first.get("cause").asText(), first.get("cause").asText().contains("greeting"));
      assertTrue(first.get("cause").asText(), first.get("cause").asText().contains(w0.address()));
    }
  }

  @Test
  public void aWorkerThatAnswersStoppedGetsNothingAndIsNotUnreachable() throws Exception {
    try (FakeFeedServer w0 = new FakeFeedServer(KEY, NAMES[0], 0, c -> {
      c.handshake();
      c.receive();
      c.send(Collections.singletonMap("type", FeedStream.STOPPED));
    });
        FakeFeedServer w1 = new FakeFeedServer(KEY, NAMES[1], 0, helloKept(
            Collections.synchronizedList(new ArrayList<>()),
            Collections.synchronizedList(new ArrayList<>())))) {
      JsonNode report = run(sender(new String[] {w0.address(), w1.address()}, 0),
          List.of(batch(0, "x"), batch(1, "y")));
      JsonNode first = report.get("workers").get("0");
      assertEquals("stopped", first.get("state").asText());
      assertFalse(first.has("cause"));
      assertEquals(1, first.get("dropped").asLong());
    }
  }

  @Test
  public void aWorkerThatSaysStoppedThenEndsTheConnectionStaysStopped() throws Exception {
    try (FakeFeedServer w0 = new FakeFeedServer(KEY, NAMES[0], 0, c -> {
      c.handshake();
      c.receive();
      c.send(Collections.singletonMap("type", FeedStream.READY));
      c.receive(); // the batch
      c.receive(); // end
      c.send(Collections.singletonMap("type", FeedStream.STOPPED)); // and no ack
      c.socket.close();
    });
        FakeFeedServer w1 = new FakeFeedServer(KEY, NAMES[1], 0, helloKept(
            Collections.synchronizedList(new ArrayList<>()),
            Collections.synchronizedList(new ArrayList<>())))) {
      JsonNode report = run(sender(new String[] {w0.address(), w1.address()}, 0),
          List.of(batch(0, "x"), batch(1, "y")));
      JsonNode first = report.get("workers").get("0");
      assertEquals(report.toString(), "stopped", first.get("state").asText());
      assertFalse(first.has("cause"));
      assertEquals(1, first.get("records").asLong());
    }
  }

  @Test
  public void aFeedSenderNeedsOneNamePerAddressAndNeverShowsItsKey() {
    assertThrows(IllegalArgumentException.class, () -> new FeedSender(KEY,
        new String[] {"a:1"}, NAMES, 0, "train", 1, LONG));
    assertFalse(sender(new String[] {"a:1", "b:2"}, 0).toString().contains(KEY));
  }

  @Test
  public void aBuilderLetsGoOfTheRoomOfAnOversizedRecordOnceItsBatchIsTaken() {
    // A task keeps one builder per worker for its whole partition: a 12 MiB record must not
    // leave 12 MiB (or more) held by each of them after its batch is gone.
    BatchBuilder builder = new BatchBuilder(0, 0, 0, 1 << 16);
    int big = 12 << 20;
    builder.add(new byte[big], big);
    assertTrue(builder.capacity() >= big);
    byte[] batch = builder.take(0);
    assertEquals(BatchBuilder.HEADER_BYTES + BatchBuilder.LENGTH_BYTES + big, batch.length);
    assertEquals(1 << 16, builder.capacity());
    builder.add(new byte[] {7, 8}, 2); // and it still builds batches
    byte[] next = builder.take(1);
    assertArrayEquals(new byte[] {0, 0, 0, 2, 7, 8},
        Arrays.copyOfRange(next, BatchBuilder.HEADER_BYTES, next.length));
  }

  @Test
  public void aBuilderKeepsItsRoomForBatchesOfTheUsualSize() {
    BatchBuilder builder = new BatchBuilder(0, 0, 0, 1 << 16);
    builder.add(new byte[1 << 20], 1 << 20); // a 1 MiB batch, the feed's usual target
    int grown = builder.capacity();
    builder.take(0);
    assertEquals("reused, not made again for every batch", grown, builder.capacity());
  }

  @Test
  public void aRecordLongerThanABatchCanCarryIsRefusedWithWhatToDo() {
    BatchBuilder builder = new BatchBuilder(0, 0, 0, 16, 64);
    long limit = 64 - BatchBuilder.HEADER_BYTES - BatchBuilder.LENGTH_BYTES;
    assertEquals(limit, builder.maxRecordBytes());
    builder.add(new byte[(int) limit], (int) limit); // the longest record fits, alone
    assertEquals(64, builder.size());
    builder.take(0);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> builder.add(new byte[(int) limit + 1], (int) limit + 1));
    assertTrue(e.getMessage(), e.getMessage().contains((limit + 1) + " bytes"));
    assertTrue(e.getMessage(), e.getMessage().contains("limit of " + limit + " bytes"));
    assertTrue(e.getMessage(), e.getMessage().contains("split it, or write the data as TFRecord "
        + "files and read them with input_mode='tensorflow'"));
  }

  @Test
  public void theProtocolsLargestPayloadBoundsTheBatchesByDefault() {
    BatchBuilder builder = new BatchBuilder(0, 0, 0, 16);
    assertEquals(FeedStream.MAX_PAYLOAD - BatchBuilder.HEADER_BYTES - BatchBuilder.LENGTH_BYTES,
        builder.maxRecordBytes());
    assertEquals((1L << 28) + (1L << 20), FeedStream.MAX_PAYLOAD);
  }

  private static List<byte[]> deal(FeedBatches.Deal deal, byte[]... records) throws Exception {
    Iterator<byte[]> out = new FeedBatches.PassRecords(deal).call(0, List.of(records).iterator());
    List<byte[]> batches = new ArrayList<>();
    out.forEachRemaining(batches::add);
    return batches;
  }

  @Test
  public void aRecordThatDoesNotFitBesideABatchsRecordsStartsTheNextBatch() throws Exception {
    FeedBatches.Deal deal = new FeedBatches.Deal(null, null, Long.MAX_VALUE, 1, 0, 1 << 20, 64);
    List<byte[]> batches = deal(deal, new byte[10], new byte[10], new byte[30], new byte[2]);
    assertEquals(2, batches.size());
    int seq = -1;
    long records = 0;
    for (byte[] batch : batches) {
      assertTrue("a batch of " + batch.length + " bytes", batch.length <= 64);
      ByteBuffer header = ByteBuffer.wrap(batch);
      assertTrue("in the order they were made", header.getInt(16) > seq);
      seq = header.getInt(16);
      records += header.getInt(20);
    }
    assertEquals(4, records);
  }

  @Test
  public void aRecordTooLongForAnyBatchFailsTheDealNamingItsPartitionAndIndex() {
    FeedBatches.Deal deal = new FeedBatches.Deal(null, null, Long.MAX_VALUE, 1, 0, 1 << 20, 64);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> deal(deal, new byte[3], new byte[37]));
    assertTrue(e.getMessage(), e.getMessage().startsWith("record 1 of partition 0 has 37 bytes"));
    assertTrue(e.getMessage(), e.getMessage().contains("input_mode='tensorflow'"));
  }
  @Test
  public void aWorkerThatReadsNothingForTheIdleTimeoutIsReportedIdleNamingTheSetting()
      throws Exception {
    // worker:0's server answers ready, then reads nothing (a full buffer: its reader is busy
    // between epochs); worker:1 cannot be reached at all.
    try (FakeFeedServer w0 = new FakeFeedServer(KEY, NAMES[0], 4096, c -> {
      c.handshake();
      c.receive();
      c.send(Collections.singletonMap("type", FeedStream.READY));
    })) {
      List<byte[]> batches = new ArrayList<>();
      for (int seq = 0; seq < 256; seq++) {
        BatchBuilder builder = new BatchBuilder(0, 4, 2, 1 << 17);
        builder.add(new byte[64 << 10], 64 << 10);
        batches.add(builder.take(seq));
      }
      JsonNode report = run(sender(new String[] {w0.address(), closedAddress()}, 0,
          new FeedStream.Timeouts(20_000, 20_000, 500)), batches);
      JsonNode idle = report.get("workers").get("0");
      assertEquals("unreachable", idle.get("state").asText());
      assertEquals(0.5, idle.get("idle").asDouble(), 0.0);
      String cause = idle.get("cause").asText();
      assertTrue(cause, cause.contains("for 500 ms: its worker read no batch of this feed for "
          + "500 ms while its buffer was full"));
      assertTrue(cause, cause.contains(FeedStream.IDLE_TIMEOUT_CONF + ", in seconds, sets how "
          + "long it waits"));
      JsonNode refused = report.get("workers").get("1");
      assertEquals("unreachable", refused.get("state").asText());
      assertFalse("not an idle timeout", refused.has("idle"));
    }
  }
}
