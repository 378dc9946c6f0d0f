"""The cluster's protocol (docs/protocol.md), on real sockets: the golden vectors, and every
kind of message it must refuse."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import pathlib
import socket
import struct
import threading
import time

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from protocol_vectors import make_vectors

from tfrecord_io.cluster import protocol
from tfrecord_io.cluster.protocol import (
    MAGIC,
    MAX_HEADER,
    NONCE_BYTES,
    PREFIX_BYTES,
    TAG_BYTES,
    TO_CLIENT,
    TO_SERVER,
    Stream,
    StreamServer,
    accept,
    connect,
    derive_key,
    seal,
)
from tfrecord_io.errors import ChannelError

VECTORS = json.loads(
    (pathlib.Path(__file__).resolve().parents[2] / "docs" / "protocol-vectors.json").read_text()
)
SECRET = VECTORS["secret"]
KEYS = {k: bytes.fromhex(v) for k, v in VECTORS["keys"].items()}


def _messages(direction: str) -> list[dict]:
    return [m for m in VECTORS["messages"] if m["direction"] == direction]


SERVER_NONCE, CLIENT_NONCE = b"s" * NONCE_BYTES, b"c" * NONCE_BYTES
#: The key of the client's messages on the connections _pair makes.
CLIENT_KEY = derive_key(SECRET, SERVER_NONCE, CLIENT_NONCE, TO_SERVER)


def _pair(secret_a: str = SECRET, secret_b: str = SECRET) -> tuple[Stream, Stream]:
    """A client and a server stream over a socket pair, keys as a handshake makes them."""
    a, b = socket.socketpair()
    client = Stream(a, derive_key(secret_a, SERVER_NONCE, CLIENT_NONCE, TO_SERVER),
                    derive_key(secret_a, SERVER_NONCE, CLIENT_NONCE, TO_CLIENT))
    server = Stream(b, derive_key(secret_b, SERVER_NONCE, CLIENT_NONCE, TO_CLIENT),
                    derive_key(secret_b, SERVER_NONCE, CLIENT_NONCE, TO_SERVER))
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


def test_the_vectors_keys_are_hkdf_sha256_of_the_secret_salted_with_both_nonces():
    salt = bytes.fromhex(VECTORS["server_nonce"]) + bytes.fromhex(VECTORS["client_nonce"])
    assert KEYS["client_to_server"] == _hkdf_sha256(SECRET.encode(), salt, TO_SERVER)
    assert KEYS["server_to_client"] == _hkdf_sha256(SECRET.encode(), salt, TO_CLIENT)


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
            sock, SECRET, server_nonce=bytes.fromhex(VECTORS["server_nonce"]))

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
    other_connection = derive_key(SECRET, b"o" * NONCE_BYTES, CLIENT_NONCE, TO_SERVER)
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


def test_a_message_under_a_wrong_secret_is_refused(caplog):
    client, server = _pair(secret_a="a guessed secret")
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

def test_the_server_refuses_a_wrong_secret_or_another_protocol_and_serves_the_next_client(
        caplog):
    caplog.set_level(logging.WARNING)
    got = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = StreamServer(listener, SECRET, lambda s, hello: got.append(hello),
                          lambda hello: hello["type"] == "hello", name="test server")
    try:
        with pytest.raises(ChannelError):
            connect(server.address, "a guessed secret", {"type": "hello"}).receive()
        stranger = socket.create_connection(listener.getsockname())
        stranger.sendall(b"GET / HTTP/1.1\r\n\r\n" * 3)
        assert stranger.recv(len(MAGIC)) == MAGIC
        assert _closed_by_peer(stranger)
        stranger.close()
        with pytest.raises(ChannelError):
            connect(server.address, SECRET, {"type": "not a hello"}).receive()
        stream = connect(server.address, SECRET, {"type": "hello", "n": 1})
        with pytest.raises(ChannelError, match="closed the connection"):
            stream.receive()  # served, then closed by the server
        assert got == [{"type": "hello", "n": 1}]

        def refusals() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]

        deadline = time.monotonic() + 10  # a refused peer may see the close before the log
        while len(refusals()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.refused == 3
        assert len(refusals()) == 3  # one warning each
        assert all(m.startswith("test server: refused a connection") for m in refusals())
    finally:
        server.close()
