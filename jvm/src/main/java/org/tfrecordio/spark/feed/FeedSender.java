package org.tfrecordio.spark.feed;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;

/**
 * The feeding task: streams one partition of feed batches (made by {@link FeedBatches}) to the
 * workers' feed servers, straight from the executor's JVM.
 *
 * <p>It opens one encrypted connection per worker ({@link FeedStream}, under the feed's purpose
 * key, bound to the worker's node name) at its first batch, sends each batch whole (TCP
 * backpressure holds it back while the worker's buffer is full, up to the idle timeout,
 * {@link FeedStream#IDLE_TIMEOUT_CONF}), then
 * asks each worker to acknowledge that everything it sent is buffered there. A worker that
 * answers {@code stopped} (its reader is done, or {@code main_fun} ended), or that cannot be
 * reached (connect, handshake, send or ack fails: {@code "unreachable"}, with the cause), gets
 * nothing more: the rest of its batches are dropped, and when no worker reads any more the task
 * stops pulling its input (the rest is never even encoded). The task returns one JSON line: what
 * it sent to whom and what it dropped, its summary (the driver's feeding jobs, {@code
 * tfrecord_io.cluster.feed.source}, parse it into the epoch's {@code EpochReport.tasks}):
 *
 * <pre>
 * {"pid": 123, "host": "executor-host", "started": s, "sent": s, "abandoned": false,
 *  "workers": {"0": {"records": n, "batches": n, "dropped": n, "state": "ready"},
 *              "1": {..., "state": "unreachable", "cause": "the feed server at ...",
 *                    "address": "host:port", "idle": s}},
 *  "ended": s}
 * </pre>
 *
 * <p>{@code idle}: the seconds the worker's server moved no byte, when that made it unreachable
 * (its idle timeout passed: its reader read nothing for that long, or its host is gone).
 *
 * <p>A task interrupted (its job cancelled) ends at once with the interruption's exception.
 */
public final class FeedSender implements FlatMapFunction<Iterator<byte[]>, String>, Serializable {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String feedKey;
  private final String[] addresses;
  private final String[] names;
  private final int attempt;
  private final String feed;
  private final int epoch;
  private final FeedStream.Timeouts timeouts;

  FeedSender(String feedKey, String[] addresses, String[] names, int attempt, String feed,
      int epoch, FeedStream.Timeouts timeouts) {
    if (addresses.length != names.length) {
      throw new IllegalArgumentException("the feed has " + addresses.length + " addresses but "
          + names.length + " worker names");
    }
    this.feedKey = feedKey;
    this.addresses = addresses;
    this.names = names;
    this.attempt = attempt;
    this.feed = feed;
    this.epoch = epoch;
    this.timeouts = timeouts;
  }

  /**
   * The feeding job's tasks, one per partition of {@code batches}: collect it to run them.
   *
   * @param feedKey the feed's purpose key ({@code protocol.purpose_key(secret, "feed")}), never
   *     the cluster's secret
   * @param addresses each worker's feed server, {@code host:port}, by worker index
   * @param names each worker's node name ({@code "worker:0"}, {@code "chief:0"}), by worker
   *     index: the server each connection's keys are bound to
   * @param attempt the cluster's attempt: a feed server refuses a hello of another attempt
   */
  public static JavaRDD<String> sendTo(JavaRDD<byte[]> batches, String feedKey,
      List<String> addresses, List<String> names, int attempt, String feed, int epoch) {
    return sendTo(batches, feedKey, addresses, names, attempt, feed, epoch,
        FeedStream.Timeouts.DEFAULT);
  }

  /** {@link #sendTo} with the connections' {@code timeouts}. */
  static JavaRDD<String> sendTo(JavaRDD<byte[]> batches, String feedKey,
      List<String> addresses, List<String> names, int attempt, String feed, int epoch,
      FeedStream.Timeouts timeouts) {
    FeedSender sender = new FeedSender(feedKey, addresses.toArray(new String[0]),
        names.toArray(new String[0]), attempt, feed, epoch, timeouts);
    return batches.mapPartitions(sender);
  }

  @Override
  public String toString() { // never the key
    return "FeedSender(feed " + feed + ", epoch " + epoch + ", attempt " + attempt + ", "
        + addresses.length + " workers)";
  }

  /** The connection to one worker, or why there is none. */
  private static final class Link {
    final String address;
    FeedStream wire;
    String state; // "ready", "stopped", "unreachable"
    String cause; // why unreachable
    double idle; // seconds it moved no byte, when that is why (its idle timeout passed)
    long records;
    long batches;
    long dropped;

    Link(String address, FeedStream wire, String state) {
      this.address = address;
      this.wire = wire;
      this.state = state;
    }

    boolean ready() {
      return "ready".equals(state);
    }

    /** The worker cannot be reached any more: {@code e} says why. */
    void lost(IOException e) {
      state = "unreachable";
      cause = describe(e);
      if (e instanceof FeedStream.IdleTimeoutException) {
        idle = ((FeedStream.IdleTimeoutException) e).idleMillis / 1000.0;
      }
      if (wire != null) {
        wire.close();
        wire = null;
      }
    }

    /** Takes in a {@code stopped} the server may have sent meanwhile, without blocking. */
    void poll() throws IOException {
      try {
        if (ready() && wire.readable()
            && FeedStream.STOPPED.equals(wire.receive().path("type").asText())) {
          state = "stopped";
        }
      } catch (IOException e) {
        rethrowIfInterrupted(e);
        lost(e);
      }
    }
  }

  private Link open(int worker) throws IOException {
    Map<String, Object> hello = new LinkedHashMap<>();
    hello.put("type", FeedStream.HELLO);
    hello.put("feed", feed);
    hello.put("epoch", epoch);
    hello.put("attempt", attempt);
    Link link = new Link(addresses[worker], null, "unreachable");
    try {
      link.wire = FeedStream.connect(addresses[worker], feedKey, names[worker], hello, timeouts);
      String answer = link.wire.receive().path("type").asText();
      if (FeedStream.READY.equals(answer)) {
        link.state = "ready";
      } else {
        link.wire.close();
        link.wire = null;
        link.state = "stopped";
      }
    } catch (IOException e) {
      rethrowIfInterrupted(e);
      link.lost(e);
    }
    return link;
  }

  /** A cancelled task (its thread interrupted) ends: no summary, nothing more sent. */
  private static void rethrowIfInterrupted(IOException e) throws IOException {
    if (Thread.currentThread().isInterrupted()) {
      throw e;
    }
  }

  /** The exception's text, for the summary. */
  private static String describe(IOException e) {
    String message = e.getMessage();
    return message == null || message.isEmpty() ? e.toString() : message;
  }

  @Override
  public Iterator<String> call(Iterator<byte[]> batches) throws IOException {
    double started = now();
    List<Link> links = new ArrayList<>();
    boolean abandoned = false;
    try {
      while (batches.hasNext()) {
        byte[] batch = batches.next();
        ByteBuffer header = ByteBuffer.wrap(batch);
        int magic = header.getInt(0);
        int worker = header.getInt(4);
        if (magic != BatchBuilder.MAGIC || worker < 0 || worker >= addresses.length) {
          throw new IllegalStateException("not a feed batch (magic " + Integer.toHexString(magic)
              + ", worker " + worker + ")");
        }
        int records = header.getInt(20);
        if (links.isEmpty()) { // every worker at once: know early when none reads any more
          for (int w = 0; w < addresses.length; w++) {
            links.add(open(w));
          }
        }
        Link link = links.get(worker);
        link.poll();
        if (!link.ready()) {
          link.dropped += records;
          if (links.stream().noneMatch(Link::ready)) {
            abandoned = true; // nobody reads: leave the rest of the data unmade
            break;
          }
          continue;
        }
        Map<String, Object> message = new LinkedHashMap<>();
        message.put("type", FeedStream.BATCH);
        message.put("job", header.getInt(8));
        message.put("partition", header.getInt(12));
        message.put("seq", header.getInt(16));
        message.put("records", records);
        try {
          link.wire.send(message, batch, BatchBuilder.HEADER_BYTES,
              batch.length - BatchBuilder.HEADER_BYTES);
        } catch (IOException e) {
          rethrowIfInterrupted(e); // the job was cancelled: end the task
          link.lost(e);
          link.dropped += records;
          continue;
        }
        link.records += records;
        link.batches++;
      }
      double sent = now();
      Map<String, Object> workers = new LinkedHashMap<>();
      for (int w = 0; w < links.size(); w++) {
        Link link = links.get(w);
        if (link.wire != null) {
          finish(link);
        }
        Map<String, Object> counts = new LinkedHashMap<>();
        counts.put("records", link.records);
        counts.put("batches", link.batches);
        counts.put("dropped", link.dropped);
        counts.put("state", link.state);
        if (link.cause != null) {
          counts.put("cause", link.cause);
          counts.put("address", link.address);
        }
        if (link.idle > 0) {
          counts.put("idle", link.idle);
        }
        workers.put(Integer.toString(w), counts);
      }
      Map<String, Object> summary = new LinkedHashMap<>();
      summary.put("pid", ProcessHandle.current().pid());
      summary.put("host", InetAddress.getLocalHost().getHostName());
      summary.put("started", started);
      summary.put("sent", sent);
      summary.put("abandoned", abandoned);
      summary.put("workers", workers);
      summary.put("ended", now());
      return Collections.singletonList(JSON.writeValueAsString(summary)).iterator();
    } finally {
      for (Link link : links) {
        if (link.wire != null) {
          link.wire.close();
        }
      }
    }
  }

  /**
   * Sends {@code end} and waits for the {@code ack} (every batch buffered on the worker). A
   * worker that said {@code stopped} and then ends the connection stays stopped (its reader
   * wanted nothing more); any other failure makes it unreachable.
   */
  private static void finish(Link link) throws IOException {
    try {
      link.wire.send(Collections.singletonMap("type", FeedStream.END), null, 0, 0);
      while (true) {
        JsonNode message = link.wire.receive();
        String type = message.path("type").asText();
        if (FeedStream.STOPPED.equals(type)) {
          link.state = "stopped";
        } else if (FeedStream.ACK.equals(type)) {
          if (message.path("stopped").asBoolean(false)) {
            link.state = "stopped";
          }
          break;
        }
      }
    } catch (IOException e) {
      rethrowIfInterrupted(e);
      if (!"stopped".equals(link.state)) {
        link.lost(e);
      }
    } finally {
      if (link.wire != null) {
        link.wire.close();
        link.wire = null;
      }
    }
  }

  private static double now() {
    return System.currentTimeMillis() / 1000.0;
  }
}
