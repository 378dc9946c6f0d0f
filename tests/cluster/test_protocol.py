"""The cluster's protocol, version 2 (docs/protocol.md), on real sockets: the golden vectors,
the purpose keys and the server binding, the hello's limits, and every kind of message it must
refuse. (Hostile peers against whole servers: test_hostile_peers.py.)"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import pathlib
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tfrecord_io.cluster import protocol
from tfrecord_io.cluster.protocol import (
    CONTROL,
    FEED,
    KEEPALIVE_IDLE,
    KEEPALIVE_INTERVAL,
    KEEPALIVE_PROBES,
    MAGIC,
    MAX_HEADER,
    MAX_HELLO,
    NONCE_BYTES,
    PREFIX_BYTES,
    PURPOSE_INFO,
    TAG_BYTES,
    TO_CLIENT,
    TO_SERVER,
    Stream,
    StreamServer,
    accept,
    connect,
    derive_key,
    purpose_key,
    seal,
)
from tfrecord_io.errors import ChannelError

from protocol_vectors import make_vectors
from waiting import wait_until

VECTORS = json.loads(
    (pathlib.Path(__file__).resolve().parents[2] / "docs" / "protocol-vectors.json").read_text()
)
SECRET = VECTORS["secret"]
#: The purpose key the vectors' connection is made under, and the server it is bound to.
KEY = VECTORS["feed_key"]
SERVER = VECTORS["server"]
KEYS = {k: bytes.fromhex(v) for k, v in VECTORS["keys"].items()}


def _messages(direction: str) -> list[dict]:
    return [m for m in VECTORS["messages"] if m["direction"] == direction]


SERVER_NONCE, CLIENT_NONCE = b"s" * NONCE_BYTES, b"c" * NONCE_BYTES
#: The key of the client's messages on the connections _pair makes.
CLIENT_KEY = derive_key(KEY, SERVER_NONCE, CLIENT_NONCE, TO_SERVER, SERVER)


def _pair(key_a: str = KEY, key_b: str = KEY) -> tuple[Stream, Stream]:
    """A client and a server stream over a socket pair, keys as a handshake makes them."""
    a, b = socket.socketpair()
    client = Stream(a, derive_key(key_a, SERVER_NONCE, CLIENT_NONCE, TO_SERVER, SERVER),
                    derive_key(key_a, SERVER_NONCE, CLIENT_NONCE, TO_CLIENT, SERVER))
    server = Stream(b, derive_key(key_b, SERVER_NONCE, CLIENT_NONCE, TO_CLIENT, SERVER),
                    derive_key(key_b, SERVER_NONCE, CLIENT_NONCE, TO_SERVER, SERVER))
    return client, server


def _recv_all(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the connection ended early"
        data += chunk
    return data


# -- golden vectors ------------------------------------------------------------------------------

def _hkdf_sha256(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    """RFC 5869 by hand with the standard library: extract, then one block of expand."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def test_the_vectors_file_is_what_its_script_makes():
    assert make_vectors() == VECTORS


def test_the_vectors_are_of_version_2():
    assert VECTORS["version"] == 2
    assert MAGIC == bytes.fromhex("5446494f00020d0a")
    assert VECTORS["server_greeting"].startswith(MAGIC.hex())
    assert VECTORS["client_greeting"].startswith(MAGIC.hex())


def test_the_purpose_keys_are_hkdf_sha256_of_the_secret_with_the_purpose_as_info():
    for purpose in (CONTROL, FEED):
        expected = _hkdf_sha256(SECRET.encode(), b"", PURPOSE_INFO + purpose.encode())
        assert VECTORS["purpose"][purpose] == expected.hex() == purpose_key(SECRET, purpose)
    assert VECTORS["feed_key"] == VECTORS["purpose"][FEED]
    assert PURPOSE_INFO == b"tfrecord-io protocol 2 purpose: "


def test_each_purpose_has_its_own_key_which_is_not_the_secret():
    control, feed = purpose_key(SECRET, CONTROL), purpose_key(SECRET, FEED)
    assert len({control, feed, SECRET}) == 3
    assert len(control) == len(feed) == 64
    assert purpose_key("another secret", FEED) != feed
    with pytest.raises(ValueError, match="no key purpose 'tensorboard'"):
        purpose_key(SECRET, "tensorboard")


def test_the_vectors_keys_are_hkdf_sha256_of_the_feed_key_salted_with_both_nonces_for_the_server():
    salt = bytes.fromhex(VECTORS["server_nonce"]) + bytes.fromhex(VECTORS["client_nonce"])
    bound = b"\0" + SERVER.encode()
    assert KEYS["client_to_server"] == _hkdf_sha256(KEY.encode(), salt, TO_SERVER + bound)
    assert KEYS["server_to_client"] == _hkdf_sha256(KEY.encode(), salt, TO_CLIENT + bound)
    assert len(TO_SERVER) == len(TO_CLIENT) == 40
    control = VECTORS["control_keys"]
    assert control["server"] == "driver"
    assert bytes.fromhex(control["keys"]["client_to_server"]) == _hkdf_sha256(
        VECTORS["purpose"][CONTROL].encode(), salt, TO_SERVER + b"\0driver")


def test_keys_bound_to_another_server_differ_in_both_directions():
    other = VECTORS["other_server"]
    assert other["server"] != SERVER
    for direction, info in (("client_to_server", TO_SERVER), ("server_to_client", TO_CLIENT)):
        theirs = bytes.fromhex(other["keys"][direction])
        assert theirs != KEYS[direction]
        assert theirs == derive_key(KEY, bytes.fromhex(VECTORS["server_nonce"]),
                                    bytes.fromhex(VECTORS["client_nonce"]), info, other["server"])


def test_the_vectors_headers_are_compact_utf8_json_with_a_non_ascii_feed_name():
    hello = _messages("client_to_server")[0]
    assert json.loads(hello["header"]) == {"type": "feeder", "feed": "données-ü", "epoch": 1,
                                           "attempt": 0}
    header = hello["header"].encode()
    assert "ü".encode() in header and b"\\u" not in header
    frame = bytes.fromhex(hello["frame"])
    assert struct.unpack(">IQ", frame[:PREFIX_BYTES]) == (len(header), 0)


def test_the_vectors_frames_are_aes_gcm_of_header_and_payload_with_the_prefix_as_data():
    for m in VECTORS["messages"]:
        header, payload = m["header"].encode(), bytes.fromhex(m["payload"])
        prefix = struct.pack(">IQ", len(header), len(payload))
        nonce = bytes(4) + m["seq"].to_bytes(8, "big")
        sealed = AESGCM(KEYS[m["direction"]]).encrypt(nonce, header + payload, prefix)
        assert bytes.fromhex(m["frame"]) == prefix + sealed


def test_python_sends_exactly_the_vectors_bytes_in_both_directions():
    a, b = socket.socketpair()
    client = Stream(a, KEYS["client_to_server"], KEYS["server_to_client"])
    server = Stream(b, KEYS["server_to_client"], KEYS["client_to_server"])
    for m in VECTORS["messages"]:
        sender, receiver = (client, server) if m["direction"] == "client_to_server" else (
            server, client)
        sender.send(json.loads(m["header"]), bytes.fromhex(m["payload"]))
        frame = bytes.fromhex(m["frame"])
        assert _recv_all(receiver.sock, len(frame)) == frame
    client.close()
    server.close()


def test_python_accepts_the_vectors_messages_in_both_directions():
    a, b = socket.socketpair()
    client = Stream(a, KEYS["client_to_server"], KEYS["server_to_client"])
    server = Stream(b, KEYS["server_to_client"], KEYS["client_to_server"])
    for m in VECTORS["messages"]:
        writer, receiver = (a, server) if m["direction"] == "client_to_server" else (b, client)
        writer.sendall(bytes.fromhex(m["frame"]))
        header, payload = receiver.receive()
        assert header == json.loads(m["header"])
        assert bytes(payload) == bytes.fromhex(m["payload"])
    client.close()
    server.close()


def test_the_handshake_sends_the_vectors_greetings_and_derives_their_keys():
    listener = socket.create_server(("127.0.0.1", 0))
    out: dict = {}

    def serve():
        sock, _ = listener.accept()
        out["stream"], out["hello"] = accept(
            sock, KEY, server=SERVER, server_nonce=bytes.fromhex(VECTORS["server_nonce"]))

    thread = threading.Thread(target=serve)
    thread.start()
    raw = socket.create_connection(listener.getsockname())
    assert _recv_all(raw, len(MAGIC) + NONCE_BYTES).hex() == VECTORS["server_greeting"]
    hello = _messages("client_to_server")[0]
    raw.sendall(bytes.fromhex(VECTORS["client_greeting"]) + bytes.fromhex(hello["frame"]))
    thread.join(10)
    assert out["hello"] == json.loads(hello["header"])
    out["stream"].send({"type": "ready"})
    ready = _messages("server_to_client")[0]
    assert _recv_all(raw, len(ready["frame"]) // 2).hex() == ready["frame"]
    out["stream"].close()
    raw.close()
    listener.close()


# -- refusals ------------------------------------------------------------------------------------

def test_a_message_and_its_payload_cross_encrypted():
    client, server = _pair()
    secret_data = b"training data nobody else may read" * 100
    client.send({"type": "batch"}, secret_data)
    wire = _recv_all(server.sock, PREFIX_BYTES + len('{"type":"batch"}') + len(secret_data)
                     + TAG_BYTES)
    assert b"training data" not in wire and b"batch" not in wire
    client.close()
    server.close()


def _refused(stream: Stream, caplog) -> str:
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.cluster.protocol"):
        with pytest.raises(ChannelError) as e:
            stream.receive()
    assert stream.closed
    assert any("closing the connection" in r.getMessage() for r in caplog.records)
    return str(e.value)


def _sealed(key: bytes, seq: int, header: bytes = b'{"type":"x"}', payload: bytes = b"") -> bytes:
    return bytes(seal(key, seq, header, payload))


def test_a_replayed_message_is_refused(caplog):
    client, server = _pair()
    frame = _sealed(CLIENT_KEY, 0, b'{"type":"log","line":"once"}')
    client.sock.sendall(frame)
    assert server.receive()[0] == {"type": "log", "line": "once"}
    client.sock.sendall(frame)  # the same bytes again
    assert "does not authenticate" in _refused(server, caplog)


def test_a_message_from_another_connection_is_refused(caplog):
    client, server = _pair()
    other_connection = derive_key(KEY, b"o" * NONCE_BYTES, CLIENT_NONCE, TO_SERVER, SERVER)
    client.sock.sendall(_sealed(other_connection, 0))  # the first message of another connection
    assert "does not authenticate" in _refused(server, caplog)


def test_reordered_messages_are_refused(caplog):
    client, server = _pair()
    client.sock.sendall(_sealed(CLIENT_KEY, 1) + _sealed(CLIENT_KEY, 0))
    _refused(server, caplog)


def test_a_message_reflected_back_to_its_sender_is_refused(caplog):
    client, server = _pair()
    server.send({"type": "stop"})
    reflected = _recv_all(client.sock, PREFIX_BYTES + len('{"type":"stop"}') + TAG_BYTES)
    client.sock.sendall(reflected)  # the server gets its own message back
    assert "does not authenticate" in _refused(server, caplog)


@pytest.mark.parametrize("where", ["length", "header", "payload", "tag"])
def test_an_altered_message_is_refused(where, caplog):
    client, server = _pair()
    frame = bytearray(_sealed(CLIENT_KEY, 0, b'{"type":"batch"}', b"0123456789"))
    at = {"length": 3, "header": PREFIX_BYTES + 2, "payload": len(frame) - TAG_BYTES - 3,
          "tag": len(frame) - 1}[where]
    frame[at] ^= 0x01
    client.sock.sendall(frame)
    if where == "length":  # one byte more announced: the tag is read one byte too far on
        client.sock.sendall(b"\0")
    assert "does not authenticate" in _refused(server, caplog)


def test_a_message_cut_short_is_refused(caplog):
    client, server = _pair()
    client.sock.sendall(_sealed(CLIENT_KEY, 0, payload=b"x" * 100)[:-5])
    client.sock.shutdown(socket.SHUT_WR)
    assert "cut short" in _refused(server, caplog)


def test_a_message_under_a_wrong_key_is_refused(caplog):
    client, server = _pair(key_a="a guessed key")
    client.send({"type": "hello", "node": "worker:0"})
    assert "does not authenticate" in _refused(server, caplog)


@pytest.mark.parametrize("lengths", [(MAX_HEADER + 1, 0), (10, protocol.MAX_PAYLOAD + 1),
                                     (0xFFFFFFFF, (1 << 64) - 1)])
def test_a_length_over_the_limits_is_refused_before_anything_is_allocated(
        lengths, caplog, monkeypatch):
    client, server = _pair()
    allocated = []
    real = bytearray

    class Counting(real):
        def __init__(self, *args):
            allocated.append(args[0] if args and isinstance(args[0], int) else 0)
            super().__init__(*args)

    monkeypatch.setattr(protocol, "bytearray", Counting, raising=False)
    client.sock.sendall(struct.pack(">IQ", *lengths))
    assert "over the limits" in _refused(server, caplog)
    assert allocated == [PREFIX_BYTES]  # the prefix itself, nothing for the message


def test_a_payload_where_none_is_expected_is_refused(caplog):
    client, server = _pair()
    client.send({"type": "hello"}, b"something large")
    with caplog.at_level(logging.WARNING):
        with pytest.raises(ChannelError, match="over the limits"):
            server.receive(max_payload=0)


def test_a_message_without_a_type_is_refused(caplog):
    client, server = _pair()
    client.send({"kind": "no type"})
    assert "without a type" in _refused(server, caplog)


def test_the_peer_closing_between_messages_ends_the_stream_quietly(caplog):
    client, server = _pair()
    client.close()
    with caplog.at_level(logging.WARNING):
        with pytest.raises(ChannelError, match="closed the connection"):
            server.receive()
    assert not caplog.records


def _closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return True


# -- the server ----------------------------------------------------------------------------------

def _hello_only(hello: dict) -> str | None:
    return None if hello["type"] == "hello" else f"an unexpected first message {hello['type']!r}"


@pytest.fixture
def serving():
    """A StreamServer named ``worker:0`` under KEY that records each hello and what follows it
    (until the client closes); yields (server, got), closes it afterwards."""
    got: list = []

    def serve(stream: Stream, hello: dict) -> None:
        got.append(hello)
        stream.send({"type": "served"})
        while True:
            got.append(stream.receive()[0])

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = StreamServer(listener, KEY, serve, _hello_only, name="test server", server=SERVER)
    yield server, got
    server.close()


def _refusals(caplog, count: int, server: StreamServer) -> list[str]:
    """The refusals logged, once *count* are counted (a refused peer may see its connection
    closed before the server logs)."""
    wait_until(lambda: server.refused >= count, timeout=10, every=0.01)
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "refused a connection" in r.getMessage()]


def test_the_server_refuses_a_wrong_key_or_another_protocol_and_serves_the_next_client(
        caplog, serving):
    caplog.set_level(logging.WARNING)
    server, got = serving
    with pytest.raises(ChannelError):
        connect(server.address, "a guessed key", {"type": "hello"}, server=SERVER).receive()
    stranger = socket.create_connection(server.address.split(":"))
    stranger.sendall(b"GET / HTTP/1.1\r\n\r\n" * 3)
    assert stranger.recv(len(MAGIC)) == MAGIC
    assert _closed_by_peer(stranger)
    stranger.close()
    with pytest.raises(ChannelError):
        connect(server.address, KEY, {"type": "not a hello"}, server=SERVER).receive()
    stream = connect(server.address, KEY, {"type": "hello", "n": 1}, server=SERVER)
    assert stream.receive()[0] == {"type": "served"}
    assert got == [{"type": "hello", "n": 1}]
    refusals = _refusals(caplog, 3, server)
    assert server.refused == 3
    assert len(refusals) == 3  # one warning each
    assert all(m.startswith("test server: refused a connection from 127.0.0.1:") for m in refusals)
    assert "not version 2" in refusals[1]
    assert "an unexpected first message 'not a hello'" in refusals[2]
    stream.close()


def test_a_client_bound_to_another_server_name_is_refused(caplog, serving):
    caplog.set_level(logging.WARNING)
    server, got = serving
    wire = connect(server.address, KEY, {"type": "hello"}, server="worker:1")
    with pytest.raises(ChannelError):
        wire.receive()  # closed: the keys it sealed its hello with are worker:1's
    assert "does not authenticate" in _refusals(caplog, 1, server)[0]
    assert got == []


def test_a_client_with_the_other_purposes_key_is_refused(caplog, serving):
    caplog.set_level(logging.WARNING)
    server, got = serving  # under the feed key: a control key opens nothing here, and back
    wire = connect(server.address, purpose_key(SECRET, CONTROL), {"type": "hello"}, server=SERVER)
    with pytest.raises(ChannelError):
        wire.receive()
    assert _refusals(caplog, 1, server) and got == []


def test_a_version_1_peer_is_refused_by_the_magic(caplog, serving):
    caplog.set_level(logging.WARNING)
    server, _ = serving
    old = socket.create_connection(server.address.split(":"))
    assert _recv_all(old, len(MAGIC) + NONCE_BYTES)[: len(MAGIC)] == MAGIC
    old.sendall(b"TFIO\x00\x01\r\n" + CLIENT_NONCE)  # then a version-1 hello would follow
    assert _closed_by_peer(old)
    old.close()
    assert "the peer speaks version 1 of tfrecord-io's cluster protocol, not version 2" in (
        _refusals(caplog, 1, server)[0])


def test_a_client_refuses_a_version_1_server():
    listener = socket.create_server(("127.0.0.1", 0))

    def old_server():
        sock, _ = listener.accept()
        sock.sendall(b"TFIO\x00\x01\r\n" + SERVER_NONCE)
        sock.recv(1)  # until the client gives up
        sock.close()

    thread = threading.Thread(target=old_server)
    thread.start()
    with pytest.raises(ChannelError, match="speaks version 1 of .* not version 2"):
        connect(f"127.0.0.1:{listener.getsockname()[1]}", KEY, {"type": "hello"}, server=SERVER)
    thread.join(10)
    listener.close()


def _client_greeting_and_prefix(sock: socket.socket, lengths: tuple[int, int]) -> None:
    sock.sendall(MAGIC + CLIENT_NONCE + struct.pack(">IQ", *lengths))


@pytest.mark.parametrize("lengths", [(MAX_HELLO + 1, 0), (0xFFFFFFFF, 0), (10, 1),
                                     (MAX_HELLO, (1 << 64) - 1)])
def test_an_oversized_hello_is_refused_before_anything_is_allocated(lengths, monkeypatch):
    allocated = []
    real = bytearray

    class Counting(real):
        def __init__(self, *args):
            allocated.append(args[0] if args and isinstance(args[0], int) else 0)
            super().__init__(*args)

    monkeypatch.setattr(protocol, "bytearray", Counting, raising=False)
    a, b = socket.socketpair()
    _client_greeting_and_prefix(a, lengths)
    with pytest.raises(ChannelError, match="a hello announcing .* over the limits"):
        accept(b, KEY, server=SERVER, server_nonce=SERVER_NONCE)
    assert allocated == [len(MAGIC) + NONCE_BYTES, PREFIX_BYTES]  # the greeting, the prefix
    a.close()
    b.close()


def test_an_oversized_hello_is_cut_by_the_server_at_once(serving):
    server, _ = serving
    raw = socket.create_connection(server.address.split(":"))
    _recv_all(raw, len(MAGIC) + NONCE_BYTES)
    started = time.monotonic()
    _client_greeting_and_prefix(raw, (0xFFFFFFFF, 0))
    assert _closed_by_peer(raw)
    assert time.monotonic() - started < protocol.HANDSHAKE_TIMEOUT / 2  # not at the deadline
    raw.close()


def test_a_hello_of_max_hello_bytes_is_served_and_a_longer_one_is_not_sent(serving):
    server, got = serving
    hello = {"type": "hello", "pad": ""}
    hello["pad"] = "x" * (MAX_HELLO - len(json.dumps(hello, separators=(",", ":"))))
    stream = connect(server.address, KEY, hello, server=SERVER)
    assert stream.receive()[0] == {"type": "served"}
    assert got == [hello]
    stream.close()
    hello["pad"] += "x"
    with pytest.raises(ValueError, match=f"a hello of {MAX_HELLO + 1} bytes"):
        connect(server.address, KEY, hello, server=SERVER)


def test_messages_sent_with_the_hello_stay_for_the_connection(serving):
    server, got = serving
    raw = socket.create_connection(server.address.split(":"))
    server_nonce = _recv_all(raw, len(MAGIC) + NONCE_BYTES)[len(MAGIC):]
    key = derive_key(KEY, server_nonce, CLIENT_NONCE, TO_SERVER, SERVER)
    raw.sendall(MAGIC + CLIENT_NONCE + _sealed(key, 0, b'{"type":"hello"}')
                + _sealed(key, 1, b'{"type":"heartbeat"}') + _sealed(key, 2, b'{"type":"log"}'))
    wait_until(lambda: len(got) >= 3, timeout=10, every=0.01)
    assert got == [{"type": "hello"}, {"type": "heartbeat"}, {"type": "log"}]
    raw.close()


def _dribble(sock: socket.socket, data: bytes, every: float) -> float:
    """Send *data* a byte every *every* s until the peer closes; the seconds it took."""
    started = time.monotonic()
    try:
        for byte in data:
            sock.sendall(bytes([byte]))
            time.sleep(every)
        sock.settimeout(10)
        sock.recv(1)
    except OSError:
        pass
    return time.monotonic() - started


def test_accept_cuts_a_peer_dribbling_its_handshake_at_the_total_deadline(monkeypatch):
    monkeypatch.setattr(protocol, "HANDSHAKE_TIMEOUT", 0.8)
    a, b = socket.socketpair()
    out: dict = {}

    def dribbler():  # each byte well within any per-read timeout
        out["took"] = _dribble(a, MAGIC + CLIENT_NONCE + b"\0" * 100, every=0.2)

    thread = threading.Thread(target=dribbler)
    thread.start()
    started = time.monotonic()
    with pytest.raises(ChannelError, match="no authenticated hello within 0.8 s"):
        accept(b, KEY, server=SERVER)
    assert 0.75 < time.monotonic() - started < 5  # the dribble alone would take 20 s
    b.close()
    thread.join(10)
    a.close()


def test_a_refusing_welcome_names_its_reason_and_the_connection_is_not_served(caplog):
    caplog.set_level(logging.WARNING)
    served = []
    listener = socket.create_server(("127.0.0.1", 0))
    server = StreamServer(listener, KEY, lambda s, hello: served.append(hello),
                          lambda hello: f"attempt {hello['attempt']} is over", name="welcomer",
                          server=SERVER)
    try:
        wire = connect(server.address, KEY, {"type": "hello", "attempt": 3}, server=SERVER)
        with pytest.raises(ChannelError, match="closed the connection"):
            wire.receive()
        refusals = _refusals(caplog, 1, server)
        assert len(refusals) == 1
        assert refusals[0].startswith("welcomer: refused a connection from 127.0.0.1:")
        assert refusals[0].endswith(": attempt 3 is over")
        assert served == [] and server.refused == 1
    finally:
        server.close()


def test_a_welcome_that_raises_refuses_that_connection_only(caplog):
    caplog.set_level(logging.WARNING)
    calls = []

    def welcome(hello: dict) -> str | None:
        calls.append(hello)
        if len(calls) == 1:
            raise KeyError("node")
        return None

    listener = socket.create_server(("127.0.0.1", 0))
    server = StreamServer(listener, KEY, lambda s, hello: s.send({"type": "served"}), welcome,
                          name="fragile", server=SERVER)
    try:
        with pytest.raises(ChannelError):
            connect(server.address, KEY, {"type": "hello"}, server=SERVER).receive()
        assert connect(server.address, KEY, {"type": "hello"}, server=SERVER).receive()[0] == {
            "type": "served"}
        assert server.refused == 1 and server.accepting
        assert [r.levelno for r in caplog.records if "fragile" in r.getMessage()][:1] == [
            logging.ERROR]  # the failing check, with its traceback
    finally:
        server.close()


def test_close_is_idempotent_joins_the_threads_and_stops_listening(serving):
    server, got = serving
    stream = connect(server.address, KEY, {"type": "hello"}, server=SERVER)
    assert stream.receive()[0] == {"type": "served"}
    names = {t.name for t in threading.enumerate()}
    assert "test server-accept" in names and any(n.startswith("test server-127.") for n in names)
    server.close()
    server.close()
    assert not server.accepting
    assert not [t for t in threading.enumerate() if t.name.startswith("test server")]
    with pytest.raises(ChannelError):
        stream.receive()
    with pytest.raises(OSError):
        connect(server.address, KEY, {"type": "hello"}, server=SERVER, timeout=2)


def test_the_event_loop_outlives_a_failure_of_its_own(caplog, serving):
    caplog.set_level(logging.WARNING)
    server, got = serving
    real_step, failed = server._step, []

    def failing_step() -> None:
        if not failed:
            failed.append(True)
            raise RuntimeError("a bug in the loop")
        real_step()

    server._step = failing_step  # from the loop's next round on
    stream = connect(server.address, KEY, {"type": "hello"}, server=SERVER)
    assert stream.receive()[0] == {"type": "served"}
    assert failed and server.accepting
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "the event loop failed" in errors[0].getMessage()
    assert "a bug in the loop" in caplog.text  # its traceback
    stream.close()


# -- a peer that vanished ----------------------------------------------------------------------


def _keepalive(sock: socket.socket) -> tuple[int, int, int, int]:
    return (sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT))


def test_both_ends_of_a_connection_probe_their_peer_with_tcp_keepalive():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        accepted: list[Stream] = []
        thread = threading.Thread(
            target=lambda: accepted.append(accept(listener.accept()[0], KEY, server=SERVER)[0]))
        thread.start()
        client = connect(f"127.0.0.1:{listener.getsockname()[1]}", KEY, {"type": "hello"},
                         server=SERVER)
        thread.join(10)
    expected = (1, KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_PROBES)
    assert _keepalive(client.sock) == expected
    assert _keepalive(accepted[0].sock) == expected
    client.close()
    accepted[0].close()


_HOLD = ("import socket, sys, time\n"
         "s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)\n"
         "print('connected', flush=True)\n"
         "time.sleep(120)\n")


@pytest.fixture
def one_host():
    """A host of its own on a virtual network (a namespace behind a veth pair)."""
    from tfrecord_io.testing.standalone import VirtualNetwork

    with VirtualNetwork(hosts=1) as network:
        yield network


def test_a_connection_whose_peers_host_vanished_ends_once_the_probes_go_unanswered(
        one_host, monkeypatch):
    """No FIN or RST comes from a host whose link is cut: the receive waiting for it ends all
    the same, and its thread with it (a feed server's thread for a feeding task's connection)."""
    monkeypatch.setattr(protocol, "KEEPALIVE_IDLE", 1)
    monkeypatch.setattr(protocol, "KEEPALIVE_INTERVAL", 1)
    monkeypatch.setattr(protocol, "KEEPALIVE_PROBES", 2)
    host = one_host.hosts[0]
    with socket.create_server((one_host.gateway, 0)) as listener:
        listener.settimeout(10)
        peer = subprocess.Popen(
            host.command([sys.executable, "-c", _HOLD, one_host.gateway,
                          str(listener.getsockname()[1])]),
            stdout=subprocess.PIPE, text=True)
        try:
            assert peer.stdout.readline().strip() == "connected"
            stream = Stream(listener.accept()[0], CLIENT_KEY, CLIENT_KEY)
            errors: list[BaseException] = []

            def receive() -> None:
                try:
                    stream.receive()
                except BaseException as e:  # noqa: BLE001 - the test looks at it
                    errors.append(e)

            thread = threading.Thread(target=receive, daemon=True)
            thread.start()
            time.sleep(0.5)
            assert thread.is_alive()  # a silent peer whose host is up is waited for
            host.set_link(False)
            thread.join(20)
            assert not thread.is_alive(), "the receive still waits for a peer that is gone"
            assert isinstance(errors[0], ChannelError)
            assert "was lost" in str(errors[0]) and "timed out" in str(errors[0])
            stream.close()
        finally:
            peer.kill()
            peer.wait()
