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
 * <p>It opens one encrypted connection per worker ({@link FeedStream}) at its first batch,
 * sends each batch whole (TCP backpressure holds it back while the worker's buffer is full), then
 * asks each worker to acknowledge that everything it sent is buffered there. A worker that
 * answers {@code stopped} (its reader is done, or {@code main_fun} ended), or that cannot be
 * reached, gets nothing more: the rest of its batches are dropped, and when no worker reads any
 * more the task stops pulling its input (the rest is never even encoded). The task returns one
 * JSON line: what it sent to whom and what it dropped ({@code tfrecord_io.cluster.feed
 * .coordinator} reads it).
 */
public final class FeedSender implements FlatMapFunction<Iterator<byte[]>, String>, Serializable {
  private static final long serialVersionUID = 1L;
  private static final int CONNECT_TIMEOUT_MILLIS = 30_000;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String secret;
  private final String[] addresses;
  private final String feed;
  private final int epoch;

  FeedSender(String secret, String[] addresses, String feed, int epoch) {
    this.secret = secret;
    this.addresses = addresses;
    this.feed = feed;
    this.epoch = epoch;
  }

  /**
   * The feeding job's tasks, one per partition of {@code batches}: collect it to run them.
   *
   * @param addresses each worker's feed server, {@code host:port}, by worker index
   */
  public static JavaRDD<String> sendTo(JavaRDD<byte[]> batches, String secret,
      List<String> addresses, String feed, int epoch) {
    FeedSender sender = new FeedSender(secret, addresses.toArray(new String[0]), feed, epoch);
    return batches.mapPartitions(sender);
  }

  /** The connection to one worker, or why there is none. */
  private static final class Link {
    FeedStream wire;
    String state; // "ready", "stopped", "unreachable"
    long records;
    long batches;
    long dropped;

    Link(FeedStream wire, String state) {
      this.wire = wire;
      this.state = state;
    }

    boolean ready() {
      return "ready".equals(state);
    }

    /** Takes in a {@code stopped} the server may have sent meanwhile, without blocking. */
    void poll() {
      try {
        if (ready() && wire.readable()
            && FeedStream.STOPPED.equals(wire.receive().path("type").asText())) {
          state = "stopped";
        }
      } catch (IOException e) {
        state = "unreachable";
      }
    }
  }

  private Link open(int worker) {
    Map<String, Object> hello = new LinkedHashMap<>();
    hello.put("type", FeedStream.HELLO);
    hello.put("feed", feed);
    hello.put("epoch", epoch);
    FeedStream wire;
    try {
      wire = FeedStream.connect(addresses[worker], secret, hello, CONNECT_TIMEOUT_MILLIS);
    } catch (IOException e) {
      return new Link(null, "unreachable");
    }
    try {
      if (FeedStream.READY.equals(wire.receive().path("type").asText())) {
        return new Link(wire, "ready");
      }
      wire.close();
      return new Link(null, "stopped");
    } catch (IOException e) {
      wire.close();
      return new Link(null, "unreachable");
    }
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
          if (Thread.currentThread().isInterrupted()) {
            throw e; // the job was cancelled: end the task
          }
          link.state = "unreachable";
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
        workers.put(Integer.toString(w), counts);
      }
      Map<String, Object> report = new LinkedHashMap<>();
      report.put("pid", ProcessHandle.current().pid());
      report.put("host", InetAddress.getLocalHost().getHostName());
      report.put("started", started);
      report.put("sent", sent);
      report.put("abandoned", abandoned);
      report.put("workers", workers);
      report.put("ended", now());
      return Collections.singletonList(JSON.writeValueAsString(report)).iterator();
    } finally {
      for (Link link : links) {
        if (link.wire != null) {
          link.wire.close();
        }
      }
    }
  }

  /** Sends {@code end} and waits for the {@code ack} (every batch buffered on the worker). */
  private static void finish(Link link) {
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
      link.state = "unreachable";
    } finally {
      link.wire.close();
      link.wire = null;
    }
  }

  private static double now() {
    return System.currentTimeMillis() / 1000.0;
  }
}
