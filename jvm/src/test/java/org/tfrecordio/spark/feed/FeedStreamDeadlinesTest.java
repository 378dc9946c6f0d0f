package org.tfrecordio.spark.feed;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedByInterruptException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;

/**
 * {@link FeedStream}'s deadlines on real loopback connections: the connect, the handshake (the
 * server's greeting and its answer to the hello), the idle bound of later reads and writes, and
 * an interrupted task ending at once.
 */
public class FeedStreamDeadlinesTest {
  private static final String KEY = FeedStream.purposeKey("0123456789abcdef", FeedStream.FEED);
  private static final String NAME = "worker:0";
  /**
   * A short handshake (1 s; 5 s where the server greets first: a loaded machine's server may
   * take seconds to), or a short idle timeout (500 ms): each test waits on the one it tests,
   * the others long enough for a server that does answer.
   */
  private static final FeedStream.Timeouts SHORT_HANDSHAKE =
      new FeedStream.Timeouts(20_000, 1_000, 20_000);
  private static final FeedStream.Timeouts GREETED_HANDSHAKE =
      new FeedStream.Timeouts(20_000, 5_000, 20_000);
  private static final FeedStream.Timeouts SHORT_IDLE =
      new FeedStream.Timeouts(20_000, 20_000, 500);
  /** What any test here may take, at most. */
  private static final long BOUND_MILLIS = 30_000;

  private static Map<String, Object> hello() {
    Map<String, Object> hello = new LinkedHashMap<>();
    hello.put("type", FeedStream.HELLO);
    hello.put("feed", "train");
    hello.put("epoch", 1);
    hello.put("attempt", 0);
    return hello;
  }

  private static long millisSince(long start) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
  }

  @Test
  public void aServerThatNeverGreetsTimesOutNamingItsAddressAndTheGreeting() throws Exception {
    try (FakeFeedServer server = new FakeFeedServer(KEY, NAME, 0, c -> {
      // accepted, and left open without a word
    })) {
      long start = System.nanoTime();
      SocketTimeoutException e = assertThrows(SocketTimeoutException.class,
          () -> FeedStream.connect(server.address(), KEY, NAME, hello(), SHORT_HANDSHAKE));
      long took = millisSince(start);
      assertTrue(e.getMessage(), e.getMessage().contains(server.address()));
      assertTrue(e.getMessage(), e.getMessage().contains("greeting"));
      assertTrue("took " + took + " ms", took >= 950 && took < BOUND_MILLIS);
    }
  }

  @Test
  public void aServerThatNeverAnswersTheHelloTimesOutWithinTheHandshakesDeadline()
      throws Exception {
    try (FakeFeedServer server = new FakeFeedServer(KEY, NAME, 0, c -> {
      c.handshake();
      c.receive();
      // then nothing: the connection stays open, unread
    })) {
      long start = System.nanoTime();
      try (FeedStream wire = FeedStream.connect(server.address(), KEY, NAME, hello(),
          GREETED_HANDSHAKE)) {
        SocketTimeoutException e = assertThrows(SocketTimeoutException.class, wire::receive);
        assertTrue(e.getMessage(), e.getMessage().contains(server.address()));
        assertTrue(e.getMessage(), e.getMessage().contains("answer to the hello"));
      }
      assertTrue(millisSince(start) < BOUND_MILLIS);
      assertTrue(server.errors.toString(), server.errors.isEmpty());
    }
  }

  @Test
  public void aServerSilentAfterItsAnswerTimesOutAfterTheIdleTimeout() throws Exception {
    try (FakeFeedServer server = new FakeFeedServer(KEY, NAME, 0, c -> {
      c.handshake();
      c.receive();
      c.send(Collections.singletonMap("type", FeedStream.READY));
      // then nothing: the connection stays open, unread
    })) {
      try (FeedStream wire = FeedStream.connect(server.address(), KEY, NAME, hello(),
          SHORT_IDLE)) {
        assertEquals(FeedStream.READY, wire.receive().path("type").asText());
        long start = System.nanoTime();
        SocketTimeoutException e = assertThrows(SocketTimeoutException.class, wire::receive);
        long took = millisSince(start);
        assertTrue(e.getMessage(), e.getMessage().contains(server.address()));
        assertTrue(e.getMessage(), e.getMessage().contains("for 500 ms"));
        assertTrue("took " + took + " ms", took >= 450 && took < BOUND_MILLIS);
      }
    }
  }

  /** A server that answers {@code ready} and then never reads (a full buffer forever). */
  private static FakeFeedServer stuckServer() throws IOException {
    return new FakeFeedServer(KEY, NAME, 4096, c -> {
      c.handshake();
      c.receive();
      c.send(Collections.singletonMap("type", FeedStream.READY));
      // then nothing: the connection stays open, unread
    });
  }

  private static Map<String, Object> batchHeader() {
    Map<String, Object> batch = new LinkedHashMap<>();
    batch.put("type", FeedStream.BATCH);
    batch.put("job", 0);
    batch.put("partition", 0);
    batch.put("seq", 0);
    batch.put("records", 1);
    return batch;
  }

  /**
   * Sends 64 KiB batches on {@code wire} until a send fails (the server reads none), counting
   * those sent in {@code sent}; returns what the failing send threw.
   */
  private static Throwable sendUntilFailure(FeedStream wire, AtomicLong sent) {
    byte[] payload = new byte[64 << 10];
    try {
      while (true) {
        wire.send(batchHeader(), payload, 0, payload.length);
        sent.incrementAndGet();
      }
    } catch (Throwable e) {
      return e;
    }
  }

  @Test
  public void aServerThatTakesNoByteForTheIdleTimeoutFailsTheSend() throws Exception {
    try (FakeFeedServer server = stuckServer();
        FeedStream wire = FeedStream.connect(server.address(), KEY, NAME, hello(),
            SHORT_IDLE)) {
      assertEquals(FeedStream.READY, wire.receive().path("type").asText());
      AtomicLong sent = new AtomicLong();
      long start = System.nanoTime();
      Throwable e = sendUntilFailure(wire, sent);
      assertTrue(String.valueOf(e), e instanceof SocketTimeoutException);
      assertTrue(e.getMessage(), e.getMessage().contains(server.address()));
      assertTrue(e.getMessage(), e.getMessage().contains("took no byte of a 'batch' message for "
          + "500 ms"));
      assertTrue(millisSince(start) < BOUND_MILLIS);
      assertThrows(IOException.class, wire::receive); // a frame cut short: the stream is closed
    }
  }

  @Test
  public void anInterruptedSendEndsAtOnceClosingTheConnection() throws Exception {
    FeedStream.Timeouts patient = new FeedStream.Timeouts(20_000, 20_000, 600_000);
    try (FakeFeedServer server = stuckServer();
        FeedStream wire = FeedStream.connect(server.address(), KEY, NAME, hello(), patient)) {
      assertEquals(FeedStream.READY, wire.receive().path("type").asText());
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
      AtomicLong sent = new AtomicLong();
      Thread task = new Thread(() -> {
        thrown.set(sendUntilFailure(wire, sent));
        stillInterrupted.set(Thread.currentThread().isInterrupted());
      });
      task.start();
      // blocked on the full buffer: no send ends for 500 ms
      long last = -1;
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MILLIS);
      while (sent.get() != last && System.nanoTime() < deadline) {
        last = sent.get();
        Thread.sleep(500);
      }
      assertTrue("the task still sends", task.isAlive());
      long start = System.nanoTime();
      task.interrupt();
      task.join(BOUND_MILLIS);
      assertFalse("the send ended", task.isAlive());
      assertTrue("ended in " + millisSince(start) + " ms", millisSince(start) < 3_000);
      assertTrue(String.valueOf(thrown.get()), thrown.get() instanceof ClosedByInterruptException);
      assertTrue("the interrupt status is kept", stillInterrupted.get());
      assertThrows(IOException.class, wire::receive); // the connection is closed
    }
  }

  @Test
  public void aRefusedConnectionNamesTheAddressAndTheNode() throws Exception {
    String address;
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      address = "127.0.0.1:" + socket.getLocalPort();
    }
    IOException e = assertThrows(IOException.class,
        () -> FeedStream.connect(address, KEY, NAME, hello(), SHORT_IDLE));
    assertTrue(e.getMessage(), e.getMessage().contains(address));
    assertTrue(e.getMessage(), e.getMessage().contains(NAME));
  }

  @Test
  public void aConnectionThatIsNeverAcceptedTimesOut() throws Exception {
    // A listener whose accept queue is full drops new SYNs (Linux): the connect hangs.
    List<Socket> fillers = new ArrayList<>();
    try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      InetSocketAddress target = new InetSocketAddress(InetAddress.getLoopbackAddress(),
          listener.getLocalPort());
      boolean full = false;
      for (int i = 0; i < 16 && !full; i++) {
        Socket filler = new Socket();
        fillers.add(filler);
        try {
          filler.connect(target, 200);
        } catch (SocketTimeoutException e) {
          full = true;
        }
      }
      assumeTrue("this system never leaves a connection unaccepted", full);
      FeedStream.Timeouts quick = new FeedStream.Timeouts(300, 300, 300);
      long start = System.nanoTime();
      SocketTimeoutException e = assertThrows(SocketTimeoutException.class,
          () -> FeedStream.connect("127.0.0.1:" + listener.getLocalPort(), KEY, NAME, hello(),
              quick));
      assertNotNull(e.getMessage());
      assertTrue(e.getMessage(), e.getMessage().contains("connecting"));
      assertTrue(e.getMessage(), e.getMessage().contains("127.0.0.1:" + listener.getLocalPort()));
      assertTrue(millisSince(start) < BOUND_MILLIS);
    } finally {
      for (Socket s : fillers) {
        s.close();
      }
    }
  }

  @Test
  public void theIdleTimeoutIsSetInSecondsByItsSparkConfiguration() {
    assertEquals(600_000, FeedStream.Timeouts.withIdleSeconds("").idleMillis);
    FeedStream.Timeouts hour = FeedStream.Timeouts.withIdleSeconds(" 3600 ");
    assertEquals(3_600_000, hour.idleMillis);
    assertEquals(FeedStream.Timeouts.DEFAULT.connectMillis, hour.connectMillis);
    assertEquals(FeedStream.Timeouts.DEFAULT.handshakeMillis, hour.handshakeMillis);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> FeedStream.Timeouts.withIdleSeconds("10min"));
    assertTrue(e.getMessage(), e.getMessage().startsWith(
        "spark.tfrecordio.feed.idleTimeout is a number of seconds"));
    assertThrows(IllegalArgumentException.class, () -> FeedStream.Timeouts.withIdleSeconds("0"));
  }
}
