package org.tfrecordio.spark.feed;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The feeding task's end of one connection to a node's feed server: the client side of the
 * cluster's protocol, version 2 ({@code docs/protocol.md}; {@code tfrecord_io.cluster.protocol}
 * in Python), byte for byte, with the JDK's own HMAC-SHA256 (for HKDF) and AES/GCM/NoPadding.
 *
 * <p>Handshake: the server sends {@link #MAGIC} and a 16-byte nonce, this end answers with
 * {@link #MAGIC} and its own random nonce, then the hello. Each direction has its own AES-256 key,
 * HKDF-SHA256 of the feed's purpose key (never the cluster's secret: {@link #purposeKey}) with
 * salt {@code serverNonce || clientNonce} and info {@link #TO_SERVER} or {@link #TO_CLIENT}
 * {@code || 0x00 ||} the name of the node this end means to reach ({@code "worker:0"}): a relay
 * that swaps two nodes' connections makes the keys differ. Every message after it, either way, is
 * a big-endian {@code uint32} header length and {@code uint64} payload length (the GCM associated
 * data), then the JSON header and the payload encrypted as one plaintext, then the 16-byte tag;
 * the GCM nonce is 4 zero bytes and the direction's message number (from 0) as a big-endian
 * {@code uint64}.
 *
 * <p>Deadlines ({@link Timeouts}): the TCP connect; the handshake (from the connection to the
 * server's answer to the hello, one total deadline); then every read and write is idle-bounded
 * (no byte moved for the idle timeout fails it). A blocking {@link SocketChannel} ignores
 * {@code SO_TIMEOUT}, so the channel is non-blocking and waits in a {@link Selector} of its own.
 * A task interrupted while it waits (Spark interrupts the thread when its job is cancelled) has
 * its connection closed and gets a {@link ClosedByInterruptException} at once, its interrupt
 * status kept, so it ends instead of holding its task slot.
 *
 * <p>A payload is encrypted straight from the caller's array into one reused frame buffer, which
 * is written to the socket as it is (no other copy).
 */
final class FeedStream implements AutoCloseable {
  /** The first bytes each side sends: the protocol and its version (2). */
  static final byte[] MAGIC = {'T', 'F', 'I', 'O', 0, 2, '\r', '\n'};
  /** The protocol version {@link #MAGIC} names. */
  static final int VERSION = 2;
  /** Bytes of each side's handshake nonce. */
  static final int NONCE_BYTES = 16;
  /** Bytes of a GCM tag. */
  static final int TAG_BYTES = 16;
  /** Bytes of a frame's length prefix. */
  static final int PREFIX_BYTES = 12;
  /** Longest header accepted, as the protocol's {@code MAX_HEADER}. */
  static final int MAX_HEADER = 1 << 20;
  /** Longest hello header a server accepts, as the protocol's {@code MAX_HELLO}. */
  static final int MAX_HELLO = 4096;
  /** Longest payload a feed server accepts from a feeding task, as {@code MAX_PAYLOAD}. */
  static final long MAX_PAYLOAD = (1L << 28) + (1L << 20);
  /** HKDF info prefix of the key of messages to the server (what this end sends). */
  static final byte[] TO_SERVER =
      "tfrecord-io protocol 2: client to server".getBytes(StandardCharsets.US_ASCII);
  /** HKDF info prefix of the key of messages to the client (what this end receives). */
  static final byte[] TO_CLIENT =
      "tfrecord-io protocol 2: server to client".getBytes(StandardCharsets.US_ASCII);
  /** HKDF info prefix of a purpose key (then the purpose's UTF-8 bytes). */
  static final byte[] PURPOSE_INFO =
      "tfrecord-io protocol 2 purpose: ".getBytes(StandardCharsets.US_ASCII);
  /** The purpose of the key of the feed's connections. */
  static final String FEED = "feed";

  /** The feed's message types (docs/protocol.md), as this end sends and receives them. */
  static final String HELLO = "feeder";
  static final String BATCH = "batch";
  static final String END = "end";
  static final String READY = "ready";
  static final String STOPPED = "stopped";
  static final String ACK = "ack";

  private static final byte[] NO_BYTES = new byte[0];
  private static final int GCM_TAG_BITS = TAG_BYTES * 8;
  private static final int KEY_BYTES = 32;
  /**
   * Bytes handed to one non-blocking write at most: the JDK copies what a write is given from a
   * heap buffer into a direct one, so a write of a whole frame that the socket takes only in
   * part would copy the rest again and again.
   */
  private static final int WRITE_CHUNK = 1 << 20;
  /**
   * The largest frame buffer a connection keeps for its next message: the frame of a larger
   * batch (a record of hundreds of MiB) is let go once written, so that a task does not hold one
   * such buffer per worker for the rest of its partition.
   */
  static final int RETAINED_FRAME_BYTES = 4 << 20;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final SecureRandom RANDOM = new SecureRandom();

  /**
   * The Spark configuration (seconds) that sets the idle timeout of the feeding tasks'
   * connections ({@link Timeouts#idleMillis}; default 600): how long a worker may read no batch
   * of a feed (between two epochs, say, while it checkpoints or evaluates) while a full buffer
   * holds an epoch's feeding task back, before that task gives up on it.
   */
  public static final String IDLE_TIMEOUT_CONF = "spark.tfrecordio.feed.idleTimeout";

  /** The deadlines of one connection, in milliseconds (each at least 1). */
  static final class Timeouts implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    /** The protocol's: connect 30 s, handshake 30 s, idle 600 s. */
    static final Timeouts DEFAULT = new Timeouts(30_000, 30_000, 600_000);

    /** {@link #DEFAULT} with an idle timeout of {@code idleSeconds} ({@link #IDLE_TIMEOUT_CONF}). */
    static Timeouts withIdleSeconds(String idleSeconds) {
      if (idleSeconds == null || idleSeconds.trim().isEmpty()) {
        return DEFAULT;
      }
      double seconds;
      try {
        seconds = Double.parseDouble(idleSeconds.trim());
      } catch (NumberFormatException e) {
        seconds = Double.NaN;
      }
      if (!(seconds * 1000 >= 1) || Double.isInfinite(seconds)) {
        throw new IllegalArgumentException(IDLE_TIMEOUT_CONF + " is a number of seconds "
            + "(at least 0.001), not '" + idleSeconds + "'");
      }
      return new Timeouts(DEFAULT.connectMillis, DEFAULT.handshakeMillis,
          Math.round(seconds * 1000));
    }

    /** The TCP connection. */
    final long connectMillis;
    /** From the connection to the server's answer to the hello ({@code ready}/{@code stopped}). */
    final long handshakeMillis;
    /** Every later read and write: no byte moved for this long. */
    final long idleMillis;

    Timeouts(long connectMillis, long handshakeMillis, long idleMillis) {
      if (connectMillis < 1 || handshakeMillis < 1 || idleMillis < 1) {
        throw new IllegalArgumentException("feed timeouts are at least 1 ms");
      }
      this.connectMillis = connectMillis;
      this.handshakeMillis = handshakeMillis;
      this.idleMillis = idleMillis;
    }
  }

  private final ByteChannel channel;
  private final Selector selector; // null: a channel that is not selectable (tests)
  private final String address; // "host:port (worker:0)": where errors say the server is
  private final Timeouts timeouts;
  private final long handshakeDeadline; // System.nanoTime() the server's first message is due by
  private final SecretKeySpec sendKey;
  private final SecretKeySpec receiveKey;
  private final Cipher encrypter;
  private final Cipher decrypter;
  private final ByteBuffer prefix = ByteBuffer.allocate(PREFIX_BYTES);
  private byte[] frame = new byte[0];
  private long sent;
  private long received;

  private FeedStream(Transport transport, byte[] sendKey, byte[] receiveKey) {
    this.channel = transport.channel;
    this.selector = transport.selector;
    this.address = transport.where;
    this.timeouts = transport.timeouts;
    this.handshakeDeadline = transport.handshakeDeadline;
    this.sendKey = new SecretKeySpec(sendKey, "AES");
    this.receiveKey = new SecretKeySpec(receiveKey, "AES");
    try {
      this.encrypter = Cipher.getInstance("AES/GCM/NoPadding");
      this.decrypter = Cipher.getInstance("AES/GCM/NoPadding");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JVM has no AES/GCM/NoPadding", e);
    }
  }

  /**
   * Connects to the feed server at {@code host:port} of the node named {@code server}, makes the
   * handshake under {@code key} (the feed's purpose key) and sends {@code hello}.
   *
   * @throws IOException the server cannot be reached in time, does not speak this protocol, or
   *     closed the connection; the message names the address and what failed or timed out
   * @throws ClosedByInterruptException the thread was interrupted (its status is kept)
   */
  static FeedStream connect(String address, String key, String server, Map<String, Object> hello,
      Timeouts timeouts) throws IOException {
    int colon = address.lastIndexOf(':');
    if (colon < 1) {
      throw new IOException("the feed server address '" + address + "' is not host:port");
    }
    InetSocketAddress target;
    try {
      target = new InetSocketAddress(address.substring(0, colon),
          Integer.parseInt(address.substring(colon + 1)));
    } catch (IllegalArgumentException e) {
      throw new IOException("the feed server address '" + address + "' is not host:port", e);
    }
    if (target.isUnresolved()) {
      throw new UnknownHostException("the feed server at " + address + " (" + server
          + "): unknown host " + target.getHostString());
    }
    SocketChannel channel = SocketChannel.open();
    Selector selector = null;
    try {
      channel.configureBlocking(false);
      selector = Selector.open();
      channel.register(selector, 0);
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeouts.connectMillis);
      boolean connected;
      try {
        connected = channel.connect(target);
        while (!connected) {
          await(channel, selector, SelectionKey.OP_CONNECT, deadline,
              address + " (" + server + ")",
              "connecting to it took over " + seconds(timeouts.connectMillis));
          connected = channel.finishConnect();
        }
      } catch (UnresolvedAddressException e) {
        throw new UnknownHostException("the feed server at " + address + " (" + server
            + "): unknown host");
      } catch (ClosedByInterruptException | SocketTimeoutException e) {
        throw e;
      } catch (IOException e) {
        throw new IOException("could not connect to the feed server at " + address + " ("
            + server + "): " + e.getMessage(), e);
      }
      channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
      byte[] nonce = new byte[NONCE_BYTES];
      RANDOM.nextBytes(nonce);
      return handshake(new Transport(channel, selector, address, server, timeouts), key, server,
          nonce, hello);
    } catch (IOException | RuntimeException e) {
      channel.close();
      if (selector != null) {
        selector.close();
      }
      throw e;
    }
  }

  /** A connected channel and how to wait on it, before the handshake makes a stream of it. */
  static final class Transport {
    final ByteChannel channel;
    final Selector selector;
    final String where;
    final Timeouts timeouts;
    final long handshakeDeadline;

    /**
     * {@code selector}: the one {@code channel} (non-blocking) is registered with; null for a
     * channel that never returns 0 (read and written as it is).
     */
    Transport(ByteChannel channel, Selector selector, String address, String server,
        Timeouts timeouts) {
      this.channel = channel;
      this.selector = selector;
      this.where = address + " (" + server + ")";
      this.timeouts = timeouts;
      this.handshakeDeadline = System.nanoTime()
          + TimeUnit.MILLISECONDS.toNanos(timeouts.handshakeMillis);
    }
  }

  /**
   * The client's handshake on {@code channel} (a connection in memory, for tests: read and
   * written as it is) with the given nonce, then {@code hello}.
   */
  static FeedStream handshake(ByteChannel channel, String address, String key, String server,
      byte[] clientNonce, Map<String, Object> hello) throws IOException {
    return handshake(new Transport(channel, null, address, server, Timeouts.DEFAULT), key,
        server, clientNonce, hello);
  }

  private static FeedStream handshake(Transport transport, String key, String server,
      byte[] clientNonce, Map<String, Object> hello) throws IOException {
    byte[] head = JSON.writeValueAsBytes(hello);
    if (head.length > MAX_HELLO) {
      throw new IllegalArgumentException("a hello of " + head.length + " bytes, over the "
          + "protocol's " + MAX_HELLO);
    }
    ByteBuffer greeting = ByteBuffer.allocate(MAGIC.length + NONCE_BYTES);
    long handshakeMillis = transport.timeouts.handshakeMillis;
    readFully(transport.channel, transport.selector, greeting, transport.where,
        transport.handshakeDeadline, handshakeMillis, "greeting");
    byte[] bytes = greeting.array();
    if (!Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
      throw new IOException("the feed server at " + transport.where + " does not speak "
          + "tfrecord-io's cluster protocol " + VERSION + ": install the same tfrecord-io on the "
          + "driver and executors");
    }
    byte[] serverNonce = Arrays.copyOfRange(bytes, MAGIC.length, bytes.length);
    ByteBuffer answer = ByteBuffer.allocate(MAGIC.length + NONCE_BYTES);
    answer.put(MAGIC).put(clientNonce).flip();
    writeFully(transport.channel, transport.selector, answer, transport.where,
        transport.handshakeDeadline, handshakeMillis, "the greeting");
    FeedStream wire = new FeedStream(transport,
        deriveKey(key, serverNonce, clientNonce, TO_SERVER, server),
        deriveKey(key, serverNonce, clientNonce, TO_CLIENT, server));
    wire.send(hello, null, 0, 0);
    return wire;
  }

  /**
   * The key of one purpose: HKDF-SHA256 of the cluster's secret (UTF-8), salt empty (32 zero
   * bytes), info {@link #PURPOSE_INFO} {@code ||} the purpose (UTF-8); 64 hex characters. The
   * feeding tasks get {@code purposeKey(secret, "feed")} only (made on the driver; here for the
   * golden vectors).
   */
  static String purposeKey(String secret, String purpose) {
    byte[] purposeBytes = purpose.getBytes(StandardCharsets.UTF_8);
    byte[] info = new byte[PURPOSE_INFO.length + purposeBytes.length];
    System.arraycopy(PURPOSE_INFO, 0, info, 0, PURPOSE_INFO.length);
    System.arraycopy(purposeBytes, 0, info, PURPOSE_INFO.length, purposeBytes.length);
    byte[] key = hkdf(secret.getBytes(StandardCharsets.UTF_8), new byte[KEY_BYTES], info);
    StringBuilder hex = new StringBuilder(2 * key.length);
    for (byte b : key) {
      hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
    }
    return hex.toString();
  }

  /**
   * The AES-256 key of one direction ({@code info}, {@link #TO_SERVER} or {@link #TO_CLIENT}) of
   * a connection to the node named {@code server}: HKDF-SHA256 (RFC 5869) of the purpose key's
   * UTF-8 bytes, salt {@code serverNonce || clientNonce}, info
   * {@code info || 0x00 || server (UTF-8)}.
   */
  static byte[] deriveKey(String key, byte[] serverNonce, byte[] clientNonce, byte[] info,
      String server) {
    byte[] salt = new byte[serverNonce.length + clientNonce.length];
    System.arraycopy(serverNonce, 0, salt, 0, serverNonce.length);
    System.arraycopy(clientNonce, 0, salt, serverNonce.length, clientNonce.length);
    byte[] name = server.getBytes(StandardCharsets.UTF_8);
    byte[] bound = new byte[info.length + 1 + name.length];
    System.arraycopy(info, 0, bound, 0, info.length);
    System.arraycopy(name, 0, bound, info.length + 1, name.length); // bound[info.length] = 0
    return hkdf(key.getBytes(StandardCharsets.UTF_8), salt, bound);
  }

  /** HKDF-SHA256 with L = 32 (one block of expand: {@code HMAC(PRK, info || 0x01)}). */
  private static byte[] hkdf(byte[] ikm, byte[] salt, byte[] info) {
    try {
      Mac hmac = Mac.getInstance("HmacSHA256");
      hmac.init(new SecretKeySpec(salt, "HmacSHA256"));
      byte[] prk = hmac.doFinal(ikm);
      hmac.init(new SecretKeySpec(prk, "HmacSHA256"));
      hmac.update(info);
      hmac.update((byte) 1);
      return hmac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JVM has no HmacSHA256", e);
    }
  }

  /** The GCM nonce of message {@code seq}: 4 zero bytes, then {@code seq} big-endian. */
  static byte[] gcmNonce(long seq) {
    return ByteBuffer.allocate(12).putInt(0).putLong(seq).array();
  }

  /**
   * Sends one message: {@code header} as JSON, then {@code payload[off, off + len)}, encrypted
   * straight from {@code payload} into the frame that is written. Idle-bounded: fails when the
   * server takes no byte for the idle timeout.
   */
  void send(Map<String, Object> header, byte[] payload, int off, int len) throws IOException {
    byte[] head = JSON.writeValueAsBytes(header);
    int size = PREFIX_BYTES + head.length + len + TAG_BYTES;
    if (frame.length < size) {
      frame = new byte[size];
    }
    ByteBuffer.wrap(frame).putInt(head.length).putLong(len);
    try {
      encrypter.init(Cipher.ENCRYPT_MODE, sendKey, new GCMParameterSpec(GCM_TAG_BITS,
          gcmNonce(sent++)));
      encrypter.updateAAD(frame, 0, PREFIX_BYTES);
      int at = PREFIX_BYTES + encrypter.update(head, 0, head.length, frame, PREFIX_BYTES);
      at += encrypter.doFinal(payload == null ? NO_BYTES : payload, off, len, frame, at);
      if (at != size) {
        throw new IllegalStateException("AES/GCM wrote " + at + " bytes, not " + size);
      }
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES/GCM refused to encrypt", e);
    }
    boolean hello = sent == 1; // part of the handshake
    try {
      writeFully(channel, selector, ByteBuffer.wrap(frame, 0, size), address,
          hello ? handshakeDeadline : 0, hello ? timeouts.handshakeMillis : timeouts.idleMillis,
          hello ? "the hello" : "a '" + header.get("type") + "' message");
    } catch (IOException e) {
      close(); // a frame cut short: nothing more can be sent on this connection
      throw e;
    } finally {
      if (frame.length > RETAINED_FRAME_BYTES) {
        frame = NO_BYTES;
      }
    }
  }

  /** Bytes of the frame buffer this connection holds for its next message (its memory). */
  int frameCapacity() {
    return frame.length;
  }

  /** Whether a message (or the end of the stream) may be waiting, without blocking. */
  boolean readable() throws IOException {
    if (selector == null) {
      return channel instanceof SocketChannel
          && ((SocketChannel) channel).socket().getInputStream().available() > 0;
    }
    SelectionKey key = ((SelectableChannel) channel).keyFor(selector);
    key.interestOps(SelectionKey.OP_READ);
    selector.selectedKeys().clear();
    return selector.selectNow() > 0;
  }

  /**
   * The next message's header (a feeding task is never sent a payload). The server's first
   * message (its answer to the hello) is due by the handshake's deadline; any later one is
   * idle-bounded.
   *
   * @throws IOException the connection ended or timed out, or the message is over the limits or
   *     does not decrypt (the connection is then closed)
   */
  JsonNode receive() throws IOException {
    long deadline = received == 0 ? handshakeDeadline : 0;
    long millis = received == 0 ? timeouts.handshakeMillis : timeouts.idleMillis;
    String what = received == 0 ? "answer to the hello" : "a message";
    prefix.clear();
    readFullyOrClose(prefix, deadline, millis, what);
    int headLength = prefix.getInt(0);
    long payloadLength = prefix.getLong(4);
    if (headLength < 0 || headLength > MAX_HEADER || payloadLength != 0) {
      throw refuse("a message announcing a " + Integer.toUnsignedString(headLength)
          + "-byte header and a " + Long.toUnsignedString(payloadLength)
          + "-byte payload, over the limits (" + MAX_HEADER + ", 0)");
    }
    ByteBuffer body = ByteBuffer.allocate(headLength + TAG_BYTES);
    readFullyOrClose(body, deadline, millis, what);
    byte[] head;
    try {
      decrypter.init(Cipher.DECRYPT_MODE, receiveKey, new GCMParameterSpec(GCM_TAG_BITS,
          gcmNonce(received)));
      decrypter.updateAAD(prefix.array(), 0, PREFIX_BYTES);
      head = decrypter.doFinal(body.array());
    } catch (AEADBadTagException e) {
      throw refuse("a message that does not authenticate (a wrong key, a server other than the "
          + "node meant, or a message replayed, reordered, reflected or altered)");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES/GCM refused to decrypt", e);
    }
    received++;
    JsonNode header;
    try {
      header = JSON.readTree(head);
    } catch (IOException e) {
      throw refuse("a header that is not JSON");
    }
    if (header == null || !header.isObject() || !header.path("type").isTextual()) {
      throw refuse("a message without a type");
    }
    return header;
  }

  private void readFullyOrClose(ByteBuffer buf, long deadline, long millis, String what)
      throws IOException {
    try {
      readFully(channel, selector, buf, address, deadline, millis, what);
    } catch (IOException e) {
      close(); // a message cut short: nothing more can be read on this connection
      throw e;
    }
  }

  private IOException refuse(String what) {
    close();
    return new IOException("the feed server at " + address + " sent " + what
        + "; the connection is closed");
  }

  /**
   * Reads until {@code buf} is full: by the absolute {@code deadline} ({@link System#nanoTime},
   * when not 0: the handshake's, {@code millis} long, which the error names), or else with at
   * most {@code millis} between two reads that move bytes. {@code address} and {@code what}
   * ("greeting", "answer to the hello", "a message") name the server and the wait in errors.
   */
  private static void readFully(ByteChannel channel, Selector selector, ByteBuffer buf,
      String address, long deadline, long millis, String what) throws IOException {
    long idleMillis = millis;
    long due = deadline != 0 ? deadline : System.nanoTime() + idleNanos(idleMillis);
    while (buf.hasRemaining()) {
      int n = channel.read(buf);
      if (n < 0) {
        throw new IOException("the feed server at " + address + " closed the connection");
      }
      if (n > 0) {
        if (deadline == 0) {
          due = System.nanoTime() + idleNanos(idleMillis);
        }
      } else if (selector != null) {
        if (deadline != 0) {
          await(channel, selector, SelectionKey.OP_READ, due, address,
              "its " + what + " did not come within the handshake's " + seconds(millis));
        } else {
          awaitIdle(channel, selector, SelectionKey.OP_READ, due, address,
              "it sent no byte of " + what, idleMillis);
        }
      }
    }
  }

  /**
   * Writes all of {@code buf}, with the deadlines of {@link #readFully} ({@code what}: "the
   * greeting", "the hello", "a 'batch' message").
   */
  private static void writeFully(ByteChannel channel, Selector selector, ByteBuffer buf,
      String address, long deadline, long millis, String what) throws IOException {
    long idleMillis = millis;
    long due = deadline != 0 ? deadline : System.nanoTime() + idleNanos(idleMillis);
    while (buf.hasRemaining()) {
      int end = buf.limit();
      buf.limit(Math.min(end, buf.position() + WRITE_CHUNK));
      int n;
      try {
        n = channel.write(buf);
      } finally {
        buf.limit(end);
      }
      if (n > 0) {
        if (deadline == 0) {
          due = System.nanoTime() + idleNanos(idleMillis);
        }
      } else if (selector != null) {
        if (deadline != 0) {
          await(channel, selector, SelectionKey.OP_WRITE, due, address,
              "it did not take " + what + " within the handshake's " + seconds(millis));
        } else {
          awaitIdle(channel, selector, SelectionKey.OP_WRITE, due, address,
              "it took no byte of " + what, idleMillis);
        }
      }
    }
  }

  private static long idleNanos(long idleMillis) {
    return TimeUnit.MILLISECONDS.toNanos(idleMillis);
  }

  /**
   * The idle timeout of a connected feed server passed ({@link #IDLE_TIMEOUT_CONF}): it moved
   * no byte for {@link #idleMillis}. Its reader may be alive and busy elsewhere (its buffer
   * full) as well as gone, and the message says both, and the setting.
   */
  static final class IdleTimeoutException extends SocketTimeoutException {
    private static final long serialVersionUID = 1L;
    /** How long the server moved no byte. */
    final long idleMillis;

    IdleTimeoutException(String message, long idleMillis) {
      super(message);
      this.idleMillis = idleMillis;
    }
  }

  /**
   * {@link #await}, for a read or write of a connected server bounded by the idle timeout
   * {@code idleMillis} ({@code stalled}: what did not move, "it took no byte of a 'batch'
   * message"): its timeout is an {@link IdleTimeoutException}.
   */
  private static void awaitIdle(ByteChannel channel, Selector selector, int op, long due,
      String address, String stalled, long idleMillis) throws IOException {
    String idle = seconds(idleMillis);
    try {
      await(channel, selector, op, due, address, stalled + " for " + idle);
    } catch (IdleTimeoutException e) {
      throw e;
    } catch (SocketTimeoutException e) {
      throw new IdleTimeoutException(e.getMessage() + ": its worker read no batch of this feed "
          + "for " + idle + " while its buffer was full (an epoch fed ahead waits for a worker "
          + "that spends that long between epochs, checkpointing or evaluating), or its host "
          + "stopped answering; the feeding task gave up on it after " + idle + " ("
          + IDLE_TIMEOUT_CONF + ", in seconds, sets how long it waits)", idleMillis);
    }
  }

  /**
   * Waits until {@code channel} is ready for {@code op}, the {@code due} time
   * ({@link System#nanoTime}) passes ({@link SocketTimeoutException}: "the feed server at ...: "
   * {@code timedOut}), or the thread is interrupted (the channel is closed,
   * {@link ClosedByInterruptException}, the interrupt status kept).
   */
  private static void await(ByteChannel channel, Selector selector, int op, long due,
      String address, String timedOut) throws IOException {
    SelectionKey key = ((SelectableChannel) channel).keyFor(selector);
    key.interestOps(op);
    while (true) {
      if (Thread.currentThread().isInterrupted()) {
        channel.close();
        throw new ClosedByInterruptException();
      }
      long left = due - System.nanoTime();
      if (left <= 0) {
        throw new SocketTimeoutException("the feed server at " + address + ": " + timedOut);
      }
      selector.selectedKeys().clear();
      // 0 when the time is up, or the thread interrupted (both checked above)
      if (selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left))) > 0
          && !Thread.currentThread().isInterrupted()) {
        return;
      }
    }
  }

  private static String seconds(long millis) {
    return millis % 1000 == 0 ? millis / 1000 + " s" : millis + " ms";
  }

  @Override
  public void close() {
    try {
      channel.close();
    } catch (IOException e) {
      // closing: nothing left to do
    }
    if (selector != null) {
      try {
        selector.close();
      } catch (IOException e) {
        // closing: nothing left to do
      }
    }
  }
}
