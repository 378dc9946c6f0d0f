package org.tfrecordio.spark.feed;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/**
 * The Java client of the cluster protocol (version 2) against its golden vectors
 * ({@code docs/protocol-vectors.json}, which the Python tests check too), and the messages it
 * must refuse.
 */
public class FeedStreamTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNode VECTORS = readVectors();
  private static final String SECRET = VECTORS.get("secret").asText();
  private static final String FEED_KEY = VECTORS.get("feed_key").asText();
  private static final String SERVER = VECTORS.get("server").asText();

  private static JsonNode readVectors() {
    Path dir = Paths.get(System.getProperty("user.dir")).toAbsolutePath();
    for (; dir != null; dir = dir.getParent()) {
      Path file = dir.resolve("docs").resolve("protocol-vectors.json");
      if (Files.isRegularFile(file)) {
        try {
          return JSON.readTree(file.toFile());
        } catch (IOException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    throw new IllegalStateException("no docs/protocol-vectors.json above "
        + System.getProperty("user.dir"));
  }

  /** A connection in memory: reads what the test queued, keeps what the wire writes. */
  private static final class Memory implements ByteChannel {
    final ByteBuffer in;
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    boolean open = true;

    Memory(byte[]... incoming) {
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      for (byte[] part : incoming) {
        all.writeBytes(part);
      }
      in = ByteBuffer.wrap(all.toByteArray());
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
      if (!open) {
        throw new ClosedChannelException();
      }
      if (!in.hasRemaining()) {
        return -1;
      }
      int n = Math.min(dst.remaining(), in.remaining());
      ByteBuffer slice = in.slice();
      slice.limit(n);
      dst.put(slice);
      in.position(in.position() + n);
      return n;
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
      if (!open) {
        throw new ClosedChannelException();
      }
      int n = src.remaining();
      byte[] bytes = new byte[n];
      src.get(bytes);
      out.writeBytes(bytes);
      return n;
    }

    @Override
    public boolean isOpen() {
      return open;
    }

    @Override
    public void close() {
      open = false;
    }
  }

  private static byte[] parseHex(String hex) {
    byte[] bytes = new byte[hex.length() / 2];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
    }
    return bytes;
  }

  private static String formatHex(byte[] bytes) {
    StringBuilder hex = new StringBuilder();
    for (byte b : bytes) {
      hex.append(String.format("%02x", b & 0xff));
    }
    return hex.toString();
  }

  private static byte[] hex(String field) {
    return parseHex(VECTORS.get(field).asText());
  }

  private static List<JsonNode> messages(String direction) {
    List<JsonNode> found = new ArrayList<>();
    for (JsonNode m : VECTORS.get("messages")) {
      if (m.get("direction").asText().equals(direction)) {
        found.add(m);
      }
    }
    return found;
  }

  private static byte[] frame(JsonNode message) {
    return parseHex(message.get("frame").asText());
  }

  private static Map<String, Object> header(JsonNode message) throws IOException {
    return JSON.readValue(message.get("header").asText(),
        new TypeReference<LinkedHashMap<String, Object>>() {});
  }

  private static FeedStream connected(Memory memory) throws IOException {
    return FeedStream.handshake(memory, "test:1", FEED_KEY, SERVER, hex("client_nonce"),
        header(messages("client_to_server").get(0)));
  }

  @Test
  public void theVectorsAreOfProtocolVersion2() {
    assertEquals(FeedStream.VERSION, VECTORS.get("version").asInt());
    assertEquals(formatHex(FeedStream.MAGIC),
        VECTORS.get("server_greeting").asText().substring(0, 2 * FeedStream.MAGIC.length));
    assertEquals("5446494f00020d0a", formatHex(FeedStream.MAGIC));
  }

  @Test
  public void derivesTheVectorsPurposeKeysFromTheSecret() {
    JsonNode purpose = VECTORS.get("purpose");
    assertEquals(purpose.get("feed").asText(), FeedStream.purposeKey(SECRET, FeedStream.FEED));
    assertEquals(purpose.get("control").asText(), FeedStream.purposeKey(SECRET, "control"));
    assertEquals(FEED_KEY, FeedStream.purposeKey(SECRET, FeedStream.FEED));
  }

  private static void assertKeys(JsonNode keys, String key, String server) {
    byte[] serverNonce = hex("server_nonce");
    byte[] clientNonce = hex("client_nonce");
    assertArrayEquals(parseHex(keys.get("client_to_server").asText()),
        FeedStream.deriveKey(key, serverNonce, clientNonce, FeedStream.TO_SERVER, server));
    assertArrayEquals(parseHex(keys.get("server_to_client").asText()),
        FeedStream.deriveKey(key, serverNonce, clientNonce, FeedStream.TO_CLIENT, server));
  }

  @Test
  public void derivesTheVectorsKeysFromThePurposeKeyBothNoncesAndTheServersName() {
    assertKeys(VECTORS.get("keys"), FEED_KEY, SERVER);
    JsonNode other = VECTORS.get("other_server");
    assertKeys(other.get("keys"), FEED_KEY, other.get("server").asText());
    JsonNode control = VECTORS.get("control_keys");
    assertKeys(control.get("keys"), FeedStream.purposeKey(SECRET, "control"),
        control.get("server").asText());
  }

  @Test
  public void keysBoundToAnotherServerOrMadeFromTheSecretDiffer() {
    byte[] serverNonce = hex("server_nonce");
    byte[] clientNonce = hex("client_nonce");
    byte[] meant = FeedStream.deriveKey(FEED_KEY, serverNonce, clientNonce, FeedStream.TO_SERVER,
        SERVER);
    assertFalse(Arrays.equals(meant, FeedStream.deriveKey(FEED_KEY, serverNonce, clientNonce,
        FeedStream.TO_SERVER, VECTORS.get("other_server").get("server").asText())));
    assertFalse(Arrays.equals(meant, FeedStream.deriveKey(SECRET, serverNonce, clientNonce,
        FeedStream.TO_SERVER, SERVER)));
  }

  @Test
  public void theVectorsHelloIsTheFeedersWithItsAttemptAndANonAsciiFeedName() throws IOException {
    Map<String, Object> hello = header(messages("client_to_server").get(0));
    assertEquals(FeedStream.HELLO, hello.get("type"));
    assertTrue(hello.containsKey("attempt"));
    String feed = (String) hello.get("feed");
    assertTrue(feed, feed.chars().anyMatch(c -> c > 127));
  }

  @Test
  public void sendsExactlyTheVectorsBytesOfEveryNodeBoundMessage() throws IOException {
    Memory memory = new Memory(hex("server_greeting"));
    FeedStream wire = connected(memory);
    List<JsonNode> sent = messages("client_to_server");
    for (JsonNode m : sent.subList(1, sent.size())) {
      byte[] payload = parseHex(m.get("payload").asText());
      byte[] padded = new byte[payload.length + 5]; // the payload sits inside a larger array
      System.arraycopy(payload, 0, padded, 3, payload.length);
      wire.send(header(m), padded, 3, payload.length);
    }
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    expected.writeBytes(hex("client_greeting"));
    for (JsonNode m : sent) {
      expected.writeBytes(frame(m));
    }
    assertEquals(formatHex(expected.toByteArray()), formatHex(memory.out.toByteArray()));
  }

  @Test
  public void aConnectionLetsGoOfTheFrameOfAnOversizedBatchOnceItIsSent() throws IOException {
    // A task holds one connection per worker for its whole partition: a batch of one 12 MiB
    // record must not leave a 12 MiB frame held by each of them.
    Memory memory = new Memory(hex("server_greeting"));
    FeedStream wire = connected(memory);
    Map<String, Object> header = new LinkedHashMap<>();
    header.put("type", FeedStream.BATCH);
    wire.send(header, new byte[1 << 20], 0, 1 << 20);
    int usual = wire.frameCapacity();
    assertTrue("a usual batch's frame is reused", usual > 1 << 20);
    int before = memory.out.size();
    wire.send(header, new byte[12 << 20], 0, 12 << 20);
    assertEquals("sent whole", FeedStream.PREFIX_BYTES + JSON.writeValueAsBytes(header).length
        + (12 << 20) + FeedStream.TAG_BYTES, memory.out.size() - before);
    assertTrue("a frame of " + wire.frameCapacity() + " bytes kept",
        wire.frameCapacity() < 12 << 20);
    int small = memory.out.size();
    wire.send(header, new byte[] {1}, 0, 1); // and it still sends
    assertEquals(FeedStream.PREFIX_BYTES + JSON.writeValueAsBytes(header).length + 1
        + FeedStream.TAG_BYTES, memory.out.size() - small);
  }

  @Test
  public void acceptsTheVectorsMessagesFromTheServer() throws IOException {
    List<JsonNode> received = messages("server_to_client");
    Memory memory = new Memory(hex("server_greeting"), frame(received.get(0)),
        frame(received.get(1)));
    FeedStream wire = connected(memory);
    assertEquals(JSON.readTree(received.get(0).get("header").asText()), wire.receive());
    assertEquals(JSON.readTree(received.get(1).get("header").asText()), wire.receive());
  }

  private static void assertRefused(Memory memory, String why) throws IOException {
    FeedStream wire = connected(memory);
    IOException e = assertThrows(IOException.class, wire::receive);
    assertTrue(e.getMessage(), e.getMessage().contains(why));
    assertFalse("the connection is closed", memory.isOpen());
  }

  @Test
  public void refusesAReplayedMessage() throws IOException {
    byte[] ready = frame(messages("server_to_client").get(0));
    Memory memory = new Memory(hex("server_greeting"), ready, ready);
    FeedStream wire = connected(memory);
    wire.receive();
    IOException e = assertThrows(IOException.class, wire::receive);
    assertTrue(e.getMessage(), e.getMessage().contains("does not authenticate"));
  }

  @Test
  public void refusesReorderedMessages() throws IOException {
    List<JsonNode> received = messages("server_to_client");
    assertRefused(new Memory(hex("server_greeting"), frame(received.get(1)),
        frame(received.get(0))), "does not authenticate");
  }

  @Test
  public void refusesItsOwnMessageSentBack() throws IOException {
    assertRefused(new Memory(hex("server_greeting"), frame(messages("client_to_server").get(0))),
        "does not authenticate");
  }

  @Test
  public void refusesAnAlteredHeaderOrTag() throws IOException {
    byte[] ack = frame(messages("server_to_client").get(1));
    for (int at : new int[] {FeedStream.PREFIX_BYTES + 1, ack.length - 1}) {
      byte[] altered = ack.clone();
      altered[at] ^= 1;
      byte[] ready = frame(messages("server_to_client").get(0));
      Memory memory = new Memory(hex("server_greeting"), ready, altered);
      FeedStream wire = connected(memory);
      wire.receive();
      IOException e = assertThrows(IOException.class, wire::receive);
      assertTrue(e.getMessage(), e.getMessage().contains("does not authenticate"));
    }
  }

  @Test
  public void refusesAnAlteredLength() throws IOException {
    byte[] ready = frame(messages("server_to_client").get(0));
    byte[] longer = new byte[ready.length + 1];
    System.arraycopy(ready, 0, longer, 0, ready.length);
    longer[3]++; // one header byte more announced (and sent)
    assertRefused(new Memory(hex("server_greeting"), longer), "does not authenticate");
  }

  @Test
  public void refusesAServerWithAnotherKey() throws IOException {
    Memory memory = new Memory(hex("server_greeting"), frame(messages("server_to_client").get(0)));
    FeedStream wire = FeedStream.handshake(memory, "test:1", "another key", SERVER,
        hex("client_nonce"), header(messages("client_to_server").get(0)));
    IOException e = assertThrows(IOException.class, wire::receive);
    assertTrue(e.getMessage(), e.getMessage().contains("does not authenticate"));
  }

  @Test
  public void refusesAServerReachedUnderTheClusterSecretInsteadOfThePurposeKey()
      throws IOException {
    Memory memory = new Memory(hex("server_greeting"), frame(messages("server_to_client").get(0)));
    FeedStream wire = FeedStream.handshake(memory, "test:1", SECRET, SERVER,
        hex("client_nonce"), header(messages("client_to_server").get(0)));
    IOException e = assertThrows(IOException.class, wire::receive);
    assertTrue(e.getMessage(), e.getMessage().contains("does not authenticate"));
  }

  @Test
  public void refusesTheMessagesOfAnotherNodesServer() throws IOException {
    // a relay that hands this connection, meant for worker:1, to worker:0's server
    Memory memory = new Memory(hex("server_greeting"), frame(messages("server_to_client").get(0)));
    FeedStream wire = FeedStream.handshake(memory, "test:1", FEED_KEY,
        VECTORS.get("other_server").get("server").asText(), hex("client_nonce"),
        header(messages("client_to_server").get(0)));
    IOException e = assertThrows(IOException.class, wire::receive);
    assertTrue(e.getMessage(), e.getMessage().contains("does not authenticate"));
  }

  @Test
  public void refusesLengthsOverTheLimitsBeforeReadingTheMessage() throws IOException {
    ByteBuffer huge = ByteBuffer.allocate(FeedStream.PREFIX_BYTES).putInt(-1).putLong(0);
    assertRefused(new Memory(hex("server_greeting"), huge.array()), "over the limits");
    ByteBuffer payload = ByteBuffer.allocate(FeedStream.PREFIX_BYTES).putInt(2).putLong(1L << 40);
    assertRefused(new Memory(hex("server_greeting"), payload.array()), "over the limits");
    // the server's message with a payload: nothing a feeding task is ever sent
    assertRefused(new Memory(hex("server_greeting"), frame(messages("server_to_client").get(2))),
        "over the limits");
  }

  @Test
  public void refusesAPeerThatDoesNotSpeakTheProtocol() {
    Memory memory = new Memory("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes());
    IOException e = assertThrows(IOException.class, () -> connected(memory));
    assertTrue(e.getMessage(), e.getMessage().contains("does not speak"));
  }

  @Test
  public void refusesAServerOfProtocolVersion1() {
    byte[] greeting = hex("server_greeting");
    greeting[5] = 1; // MAGIC of version 1
    Memory memory = new Memory(greeting);
    IOException e = assertThrows(IOException.class, () -> connected(memory));
    assertTrue(e.getMessage(), e.getMessage().contains("protocol 2"));
  }

  @Test
  public void aConnectionEndingMidMessageIsAnError() throws IOException {
    byte[] ready = frame(messages("server_to_client").get(0));
    byte[] cut = java.util.Arrays.copyOf(ready, ready.length - 3);
    Memory memory = new Memory(hex("server_greeting"), cut);
    FeedStream wire = connected(memory);
    IOException e = assertThrows(IOException.class, wire::receive);
    assertTrue(e.getMessage(), e.getMessage().contains("closed the connection"));
  }
}
