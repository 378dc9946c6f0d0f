package org.tfrecordio.spark.feed;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * A node's feed server for the tests, on 127.0.0.1: the server side of the protocol written
 * from {@code docs/protocol.md} (not from {@link FeedStream}'s code paths, beside its key
 * derivation, which the golden vectors check), each connection served by {@code serve} on a
 * thread of its own. What the handlers throw is kept in {@link #errors}.
 */
final class FakeFeedServer implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** What the server does with one accepted connection. */
  interface Handler {
    void serve(Connection connection) throws Exception;
  }

  /** One accepted connection. */
  final class Connection {
    final Socket socket;
    final DataInputStream in;
    final OutputStream out;
    private SecretKeySpec receiveKey;
    private SecretKeySpec sendKey;
    private long received;
    private long sent;

    Connection(Socket socket) throws IOException {
      this.socket = socket;
      this.in = new DataInputStream(socket.getInputStream());
      this.out = socket.getOutputStream();
    }

    /** Sends the server's greeting only. */
    byte[] greet() throws IOException {
      byte[] nonce = new byte[FeedStream.NONCE_BYTES];
      Arrays.fill(nonce, (byte) 7);
      out.write(FeedStream.MAGIC);
      out.write(nonce);
      out.flush();
      return nonce;
    }

    /** Sends the greeting, reads the client's, makes the keys of a server named {@link #name}. */
    void handshake() throws IOException {
      byte[] serverNonce = greet();
      byte[] answer = new byte[FeedStream.MAGIC.length + FeedStream.NONCE_BYTES];
      in.readFully(answer);
      if (!Arrays.equals(Arrays.copyOf(answer, FeedStream.MAGIC.length), FeedStream.MAGIC)) {
        throw new IOException("the client sent another magic");
      }
      byte[] clientNonce = Arrays.copyOfRange(answer, FeedStream.MAGIC.length, answer.length);
      receiveKey = new SecretKeySpec(FeedStream.deriveKey(key, serverNonce, clientNonce,
          FeedStream.TO_SERVER, name), "AES");
      sendKey = new SecretKeySpec(FeedStream.deriveKey(key, serverNonce, clientNonce,
          FeedStream.TO_CLIENT, name), "AES");
    }

    /** The next message's header (its payload's length in {@code "_payload"}). */
    JsonNode receive() throws Exception {
      byte[] prefix = new byte[FeedStream.PREFIX_BYTES];
      in.readFully(prefix);
      ByteBuffer lengths = ByteBuffer.wrap(prefix);
      int head = lengths.getInt();
      long payload = lengths.getLong();
      byte[] body = new byte[Math.toIntExact(head + payload + FeedStream.TAG_BYTES)];
      in.readFully(body);
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(Cipher.DECRYPT_MODE, receiveKey,
          new GCMParameterSpec(128, FeedStream.gcmNonce(received++)));
      cipher.updateAAD(prefix);
      byte[] plain = cipher.doFinal(body);
      com.fasterxml.jackson.databind.node.ObjectNode header =
          (com.fasterxml.jackson.databind.node.ObjectNode) JSON.readTree(
              Arrays.copyOf(plain, head));
      header.put("_payload", payload);
      return header;
    }

    /** Sends one message without payload. */
    void send(Map<String, Object> header) throws Exception {
      byte[] head = JSON.writeValueAsBytes(header);
      ByteBuffer prefix = ByteBuffer.allocate(FeedStream.PREFIX_BYTES).putInt(head.length)
          .putLong(0);
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(Cipher.ENCRYPT_MODE, sendKey,
          new GCMParameterSpec(128, FeedStream.gcmNonce(sent++)));
      cipher.updateAAD(prefix.array());
      out.write(prefix.array());
      out.write(cipher.doFinal(head));
      out.flush();
    }
  }

  final String key;
  final String name;
  final List<JsonNode> hellos = Collections.synchronizedList(new ArrayList<>());
  final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
  private final ServerSocket listener;
  private final List<Socket> sockets = Collections.synchronizedList(new ArrayList<>());
  private final Thread acceptor;

  /**
   * A server named {@code name} (keys bound to it) under {@code key}; {@code receiveBuffer}
   * bytes of socket receive buffer (0: the system's).
   */
  FakeFeedServer(String key, String name, int receiveBuffer, Handler serve) throws IOException {
    this.key = key;
    this.name = name;
    this.listener = new ServerSocket();
    if (receiveBuffer > 0) {
      listener.setReceiveBufferSize(receiveBuffer);
    }
    listener.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8);
    acceptor = new Thread(() -> {
      while (!listener.isClosed()) {
        try {
          Socket socket = listener.accept();
          sockets.add(socket);
          Thread t = new Thread(() -> {
            try {
              serve.serve(new Connection(socket));
            } catch (Throwable e) {
              if (!listener.isClosed()) {
                errors.add(e);
              }
            }
          }, "fake-feed-server-connection");
          t.setDaemon(true);
          t.start();
        } catch (IOException e) {
          return; // closed
        }
      }
    }, "fake-feed-server");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  String address() {
    return "127.0.0.1:" + listener.getLocalPort();
  }

  @Override
  public void close() throws IOException {
    listener.close();
    synchronized (sockets) {
      for (Socket s : sockets) {
        s.close();
      }
    }
  }
}
