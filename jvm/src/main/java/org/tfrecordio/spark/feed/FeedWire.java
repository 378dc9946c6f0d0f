package org.tfrecordio.spark.feed;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The feeding task's end of one authenticated feed connection to a node's feed server: the
 * client side of {@code tfrecord_io.cluster.feed.wire}, byte for byte.
 *
 * <p>The server opens with a nonce line (hex). Every message after it, either way, is a
 * big-endian {@code uint32} header length and {@code uint64} payload length, the JSON header,
 * the payload, and an HMAC-SHA256 (32 bytes) under the cluster's secret of
 * {@code "nonce:direction:seq:"} and everything before it. This end sends as {@code n} and
 * receives as {@code d}; each direction counts its messages from 0.
 *
 * <p>The connection is a blocking {@link SocketChannel}: a task killed while it waits on a full
 * buffer (Spark interrupts the thread when its job is cancelled) has its channel closed, so it
 * ends instead of holding its task slot.
 */
final class FeedWire implements AutoCloseable {
  /** Bytes of a message's MAC. */
  static final int MAC_BYTES = 32;
  /** Longest header accepted, as the server's {@code MAX_HEADER}. */
  static final int MAX_HEADER = 64 * 1024;
  private static final int PREFIX_BYTES = 12;
  private static final int MAX_NONCE_LINE = 256;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final SocketChannel channel;
  private final String address;
  private final Mac mac;
  private final String nonce;
  private final ByteBuffer prefix = ByteBuffer.allocate(PREFIX_BYTES);
  private long sent;
  private long received;

  private FeedWire(SocketChannel channel, String address, Mac mac, String nonce) {
    this.channel = channel;
    this.address = address;
    this.mac = mac;
    this.nonce = nonce;
  }

  /**
   * Connects to the feed server at {@code host:port} (within {@code timeoutMillis}), reads its
   * nonce and sends {@code hello}.
   *
   * @throws IOException the server cannot be reached, or closed the connection
   */
  static FeedWire connect(String address, String secret, Map<String, Object> hello,
      int timeoutMillis) throws IOException {
    int colon = address.lastIndexOf(':');
    InetSocketAddress target = new InetSocketAddress(address.substring(0, colon),
        Integer.parseInt(address.substring(colon + 1)));
    SocketChannel channel = SocketChannel.open();
    try {
      channel.socket().connect(target, timeoutMillis);
      channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
      String nonce = readNonce(channel, address);
      FeedWire wire = new FeedWire(channel, address, newMac(secret), nonce);
      wire.send(hello, null, 0, 0);
      return wire;
    } catch (IOException | RuntimeException e) {
      channel.close();
      throw e;
    }
  }

  private static Mac newMac(String secret) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
      return mac;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JVM has no HmacSHA256", e);
    }
  }

  private static String readNonce(SocketChannel channel, String address) throws IOException {
    StringBuilder line = new StringBuilder();
    ByteBuffer one = ByteBuffer.allocate(1);
    while (line.length() < MAX_NONCE_LINE) {
      one.clear();
      if (channel.read(one) < 0) {
        throw new IOException("the feed server at " + address + " closed the connection");
      }
      char c = (char) (one.get(0) & 0xff);
      if (c == '\n') {
        return line.toString().trim();
      }
      line.append(c);
    }
    throw new IOException("the feed server at " + address + " sent no nonce line");
  }

  private void prime(char direction, long seq) {
    mac.reset();
    mac.update((nonce + ":" + direction + ":" + seq + ":").getBytes(StandardCharsets.UTF_8));
  }

  /** Sends one message: {@code header} as JSON, then {@code payload[off, off + len)}. */
  void send(Map<String, Object> header, byte[] payload, int off, int len) throws IOException {
    byte[] head = JSON.writeValueAsBytes(header);
    prefix.clear();
    prefix.putInt(head.length).putLong(len).flip();
    prime('n', sent++);
    mac.update(prefix.array(), 0, PREFIX_BYTES);
    mac.update(head);
    if (len > 0) {
      mac.update(payload, off, len);
    }
    byte[] tag = mac.doFinal();
    ByteBuffer[] parts = {prefix, ByteBuffer.wrap(head),
        ByteBuffer.wrap(payload == null ? new byte[0] : payload, off, len), ByteBuffer.wrap(tag)};
    long total = PREFIX_BYTES + head.length + (long) len + tag.length;
    long written = 0;
    while (written < total) {
      written += channel.write(parts);
    }
  }

  /** Whether a message (or the end of the stream) may be waiting, without blocking. */
  boolean readable() throws IOException {
    return channel.socket().getInputStream().available() > 0;
  }

  /**
   * The next message's header (a feeding task is never sent a payload).
   *
   * @throws IOException the connection ended, or the message does not authenticate
   */
  JsonNode receive() throws IOException {
    ByteBuffer pre = ByteBuffer.allocate(PREFIX_BYTES);
    readFully(pre);
    int headLength = pre.getInt(0);
    long payloadLength = pre.getLong(4);
    if (headLength < 0 || headLength > MAX_HEADER || payloadLength != 0) {
      throw new IOException("the feed server at " + address + " sent a message announcing a "
          + Integer.toUnsignedString(headLength) + "-byte header and a " + payloadLength
          + "-byte payload, over the limits (" + MAX_HEADER + ", 0)");
    }
    ByteBuffer body = ByteBuffer.allocate(headLength + MAC_BYTES);
    readFully(body);
    byte[] bytes = body.array();
    prime('d', received);
    mac.update(pre.array());
    mac.update(bytes, 0, headLength);
    byte[] expected = mac.doFinal();
    byte[] tag = java.util.Arrays.copyOfRange(bytes, headLength, headLength + MAC_BYTES);
    if (!MessageDigest.isEqual(expected, tag)) {
      throw new IOException("a message from the feed server at " + address
          + " does not authenticate (wrong secret?)");
    }
    received++;
    JsonNode header = JSON.readTree(new String(bytes, 0, headLength, StandardCharsets.UTF_8));
    if (header == null || !header.isObject() || !header.path("type").isTextual()) {
      throw new IOException("a message without a type from the feed server at " + address);
    }
    return header;
  }

  private void readFully(ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      if (channel.read(buf) < 0) {
        throw new IOException("the feed server at " + address + " closed the connection");
      }
    }
  }

  @Override
  public void close() {
    try {
      channel.close();
    } catch (IOException e) {
      // closing: nothing left to do
    }
  }
}
