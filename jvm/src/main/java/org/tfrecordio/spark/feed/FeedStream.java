package org.tfrecordio.spark.feed;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Map;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The feeding task's end of one connection to a node's feed server: the client side of the
 * cluster's protocol ({@code docs/protocol.md}; {@code tfrecord_io.cluster.protocol} in Python),
 * byte for byte, with the JDK's own HMAC-SHA256 (for HKDF) and AES/GCM/NoPadding.
 *
 * <p>Handshake: the server sends {@link #MAGIC} and a 16-byte nonce, this end answers with
 * {@link #MAGIC} and its own random nonce. Each direction has its own AES-256 key, HKDF-SHA256 of
 * the cluster's secret with salt {@code serverNonce || clientNonce} and info {@link #TO_SERVER}
 * or {@link #TO_CLIENT}. Every message after it, either way, is a big-endian {@code uint32}
 * header length and {@code uint64} payload length (the GCM associated data), then the JSON header
 * and the payload encrypted as one plaintext, then the 16-byte tag; the GCM nonce is 4 zero
 * bytes and the direction's message number (from 0) as a big-endian {@code uint64}.
 *
 * <p>The connection is a blocking {@link SocketChannel}: a task killed while it waits on a full
 * buffer (Spark interrupts the thread when its job is cancelled) has its channel closed, so it
 * ends instead of holding its task slot.
 */
final class FeedStream implements AutoCloseable {
  /** The first bytes each side sends: the protocol and its version. */
  static final byte[] MAGIC = {'T', 'F', 'I', 'O', 0, 1, '\r', '\n'};
  /** Bytes of each side's handshake nonce. */
  static final int NONCE_BYTES = 16;
  /** Bytes of a GCM tag. */
  static final int TAG_BYTES = 16;
  /** Bytes of a frame's length prefix. */
  static final int PREFIX_BYTES = 12;
  /** Longest header accepted, as the protocol's {@code MAX_HEADER}. */
  static final int MAX_HEADER = 1 << 20;
  /** HKDF info of the key of messages to the server (what this end sends). */
  static final byte[] TO_SERVER =
      "tfrecord-io protocol 1: client to server".getBytes(StandardCharsets.US_ASCII);
  /** HKDF info of the key of messages to the client (what this end receives). */
  static final byte[] TO_CLIENT =
      "tfrecord-io protocol 1: server to client".getBytes(StandardCharsets.US_ASCII);

  /** The feed's message types (docs/protocol.md), as this end sends and receives them. */
  static final String HELLO = "feeder";
  static final String BATCH = "batch";
  static final String END = "end";
  static final String READY = "ready";
  static final String STOPPED = "stopped";
  static final String ACK = "ack";

  private static final byte[] NO_BYTES = new byte[0];
  private static final int GCM_TAG_BITS = TAG_BYTES * 8;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final SecureRandom RANDOM = new SecureRandom();

  private final ByteChannel channel;
  private final String address;
  private final SecretKeySpec sendKey;
  private final SecretKeySpec receiveKey;
  private final Cipher encrypter;
  private final Cipher decrypter;
  private final ByteBuffer prefix = ByteBuffer.allocate(PREFIX_BYTES);
  private byte[] frame = new byte[0];
  private long sent;
  private long received;

  private FeedStream(ByteChannel channel, String address, byte[] sendKey, byte[] receiveKey) {
    this.channel = channel;
    this.address = address;
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
   * Connects to the feed server at {@code host:port} (within {@code timeoutMillis}), makes the
   * handshake and sends {@code hello}.
   *
   * @throws IOException the server cannot be reached, or closed the connection
   */
  static FeedStream connect(String address, String secret, Map<String, Object> hello,
      int timeoutMillis) throws IOException {
    int colon = address.lastIndexOf(':');
    InetSocketAddress target = new InetSocketAddress(address.substring(0, colon),
        Integer.parseInt(address.substring(colon + 1)));
    SocketChannel channel = SocketChannel.open();
    try {
      channel.socket().connect(target, timeoutMillis);
      channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
      byte[] nonce = new byte[NONCE_BYTES];
      RANDOM.nextBytes(nonce);
      return handshake(channel, address, secret, nonce, hello);
    } catch (IOException | RuntimeException e) {
      channel.close();
      throw e;
    }
  }

  /**
   * The client's handshake on {@code channel} with the given nonce (random, but for tests), then
   * {@code hello}.
   */
  static FeedStream handshake(ByteChannel channel, String address, String secret,
      byte[] clientNonce, Map<String, Object> hello) throws IOException {
    ByteBuffer greeting = ByteBuffer.allocate(MAGIC.length + NONCE_BYTES);
    readFully(channel, greeting, address);
    byte[] bytes = greeting.array();
    if (!Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
      throw new IOException("the feed server at " + address + " does not speak tfrecord-io's "
          + "cluster protocol 1: install the same tfrecord-io on the driver and executors");
    }
    byte[] serverNonce = Arrays.copyOfRange(bytes, MAGIC.length, bytes.length);
    ByteBuffer answer = ByteBuffer.allocate(MAGIC.length + NONCE_BYTES);
    answer.put(MAGIC).put(clientNonce).flip();
    writeFully(channel, answer);
    FeedStream wire = new FeedStream(channel, address,
        deriveKey(secret, serverNonce, clientNonce, TO_SERVER),
        deriveKey(secret, serverNonce, clientNonce, TO_CLIENT));
    wire.send(hello, null, 0, 0);
    return wire;
  }

  /**
   * The AES-256 key of one direction ({@code info}): HKDF-SHA256 (RFC 5869) of the secret's UTF-8
   * bytes, salt {@code serverNonce || clientNonce}; 32 bytes are one block of expand.
   */
  static byte[] deriveKey(String secret, byte[] serverNonce, byte[] clientNonce, byte[] info) {
    try {
      byte[] salt = new byte[serverNonce.length + clientNonce.length];
      System.arraycopy(serverNonce, 0, salt, 0, serverNonce.length);
      System.arraycopy(clientNonce, 0, salt, serverNonce.length, clientNonce.length);
      Mac hmac = Mac.getInstance("HmacSHA256");
      hmac.init(new SecretKeySpec(salt, "HmacSHA256"));
      byte[] prk = hmac.doFinal(secret.getBytes(StandardCharsets.UTF_8));
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

  /** Sends one message: {@code header} as JSON, then {@code payload[off, off + len)}. */
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
    writeFully(channel, ByteBuffer.wrap(frame, 0, size));
  }

  /** Whether a message (or the end of the stream) may be waiting, without blocking. */
  boolean readable() throws IOException {
    return channel instanceof SocketChannel
        && ((SocketChannel) channel).socket().getInputStream().available() > 0;
  }

  /**
   * The next message's header (a feeding task is never sent a payload).
   *
   * @throws IOException the connection ended, or the message is over the limits or does not
   *     decrypt (the connection is then closed)
   */
  JsonNode receive() throws IOException {
    prefix.clear();
    readFully(channel, prefix, address);
    int headLength = prefix.getInt(0);
    long payloadLength = prefix.getLong(4);
    if (headLength < 0 || headLength > MAX_HEADER || payloadLength != 0) {
      throw refuse("a message announcing a " + Integer.toUnsignedString(headLength)
          + "-byte header and a " + Long.toUnsignedString(payloadLength)
          + "-byte payload, over the limits (" + MAX_HEADER + ", 0)");
    }
    ByteBuffer body = ByteBuffer.allocate(headLength + TAG_BYTES);
    readFully(channel, body, address);
    byte[] head;
    try {
      decrypter.init(Cipher.DECRYPT_MODE, receiveKey, new GCMParameterSpec(GCM_TAG_BITS,
          gcmNonce(received)));
      decrypter.updateAAD(prefix.array(), 0, PREFIX_BYTES);
      head = decrypter.doFinal(body.array());
    } catch (AEADBadTagException e) {
      throw refuse("a message that does not authenticate (a wrong secret, or a message "
          + "replayed, reordered, reflected or altered)");
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

  private IOException refuse(String what) {
    close();
    return new IOException("the feed server at " + address + " sent " + what
        + "; the connection is closed");
  }

  private static void readFully(ByteChannel channel, ByteBuffer buf, String address)
      throws IOException {
    while (buf.hasRemaining()) {
      if (channel.read(buf) < 0) {
        throw new IOException("the feed server at " + address + " closed the connection");
      }
    }
  }

  private static void writeFully(ByteChannel channel, ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      channel.write(buf);
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
