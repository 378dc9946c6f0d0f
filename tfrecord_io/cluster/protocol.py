"""The cluster's wire protocol: an encrypted, authenticated stream of messages over TCP.

Both of the cluster's connections speak it: the control channel (driver <-> node tasks,
:mod:`tfrecord_io.cluster.channel`) and the feed (driver and feeding tasks -> nodes' feed
servers, :mod:`tfrecord_io.cluster.feed.server`; the jar's ``org.tfrecordio.spark.feed
.FeedStream`` is its Java client). A message is a small JSON header (an object with a ``"type"``)
and an optional large byte payload. ``docs/protocol.md`` specifies it byte by byte; in short:

* handshake: the server sends :data:`MAGIC` and a random 16-byte nonce, the client answers with
  :data:`MAGIC` and its own random nonce, then its first message (the hello);
* keys: one AES-256 key per direction, HKDF-SHA256 of the cluster's secret with both nonces as
  salt and the direction as info (:func:`derive_key`), so nothing recorded on one connection
  decrypts on another, and a message sent back to its sender does not decrypt either;
* frames: ``uint32 header_length, uint64 payload_length`` (big-endian, authenticated as the
  associated data), then header and payload encrypted with AES-256-GCM as one plaintext, then
  the 16-byte tag; the GCM nonce is the direction's message number (:func:`gcm_nonce`), so a
  replayed, reordered or dropped message does not decrypt.

Lengths are checked against the limits before anything is allocated for them. Any message that
does not decrypt (wrong secret, replayed, reordered, reflected, altered, cut short) or does not
parse ends the connection: a warning is logged, the socket closed, and
:class:`~tfrecord_io.errors.ChannelError` raised; servers (:class:`StreamServer`) carry on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import select
import socket
import struct
import threading
from typing import Any, Callable

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tfrecord_io.errors import ChannelError

__all__ = [
    "MAGIC",
    "NONCE_BYTES",
    "TAG_BYTES",
    "PREFIX_BYTES",
    "MAX_HEADER",
    "MAX_PAYLOAD",
    "TO_SERVER",
    "TO_CLIENT",
    "HANDSHAKE_TIMEOUT",
    "derive_key",
    "gcm_nonce",
    "seal",
    "Stream",
    "connect",
    "accept",
    "StreamServer",
]

log = logging.getLogger(__name__)

#: The first bytes each side sends: the protocol and its version.
MAGIC = b"TFIO\x00\x01\r\n"
#: Bytes of each side's random handshake nonce.
NONCE_BYTES = 16
#: Bytes of a GCM tag.
TAG_BYTES = 16
#: Bytes of a frame's length prefix (``uint32 header_length, uint64 payload_length``).
PREFIX_BYTES = 12
#: Longest JSON header accepted, in bytes (a control message: a log line, a traceback).
MAX_HEADER = 1 << 20
#: Largest payload accepted, in bytes: a feed batch is about 1 MiB, but one record makes a batch
#: of its own, and records may have up to 256 MiB (the framing's default limit).
MAX_PAYLOAD = (1 << 28) + (1 << 20)
#: HKDF info of the key of messages from the client (node task, driver link, feeder) to the server.
TO_SERVER = b"tfrecord-io protocol 1: client to server"
#: HKDF info of the key of messages from the server to the client.
TO_CLIENT = b"tfrecord-io protocol 1: server to client"
#: Seconds a server gives a new connection to complete the handshake and send its hello.
HANDSHAKE_TIMEOUT = 10.0

_PREFIX = struct.Struct("!IQ")
_MAX_SEQ = (1 << 64) - 1


def derive_key(secret: str, server_nonce: bytes, client_nonce: bytes, info: bytes) -> bytes:
    """The AES-256 key of one direction (*info*: :data:`TO_SERVER` or :data:`TO_CLIENT`) of the
    connection whose handshake exchanged *server_nonce* and *client_nonce*: HKDF-SHA256 with
    the secret's UTF-8 bytes as input key material and ``server_nonce + client_nonce`` as
    salt."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=server_nonce + client_nonce, info=info)
    return hkdf.derive(secret.encode("utf-8"))


def gcm_nonce(seq: int) -> bytes:
    """The 96-bit GCM nonce of message *seq* (counted from 0) of a direction: 4 zero bytes,
    then *seq* as a big-endian ``uint64``."""
    return b"\0\0\0\0" + seq.to_bytes(8, "big")


def _encode_header(header: dict[str, Any]) -> bytes:
    return json.dumps(header, separators=(",", ":")).encode()


def seal(key: bytes, seq: int, header: bytes, payload: Any = b"") -> memoryview:
    """The frame of message *seq* under *key*: *header* (JSON bytes) and *payload* (any
    bytes-like object, read in place) encrypted into one new buffer, without other copies."""
    body = memoryview(payload).cast("B")
    prefix = _PREFIX.pack(len(header), body.nbytes)
    size = PREFIX_BYTES + len(header) + body.nbytes
    # update_into wants room for a block more than it writes (GCM writes exactly its input)
    frame = bytearray(size + TAG_BYTES + 15)
    frame[:PREFIX_BYTES] = prefix
    view = memoryview(frame)
    encryptor = Cipher(algorithms.AES(key), modes.GCM(gcm_nonce(seq))).encryptor()
    encryptor.authenticate_additional_data(prefix)
    at = PREFIX_BYTES + encryptor.update_into(header, view[PREFIX_BYTES:])
    if body.nbytes:
        at += encryptor.update_into(body, view[at:])
    encryptor.finalize()
    view[at: at + TAG_BYTES] = encryptor.tag
    return view[: size + TAG_BYTES]


class Stream:
    """One encrypted connection, either end (made by :func:`connect` or :func:`accept`).

    ``send`` is thread-safe; ``receive`` is for one reader thread.
    """

    def __init__(self, sock: socket.socket, send_key: bytes, receive_key: bytes) -> None:
        self.sock = sock
        try:
            name = sock.getpeername()
        except OSError:
            name = "?"
        #: Who is at the other end (``host:port``), for messages.
        self.peer = "%s:%s" % name[:2] if isinstance(name, tuple) else str(name or "a peer")
        self._send_key = send_key
        self._opener = AESGCM(receive_key)
        self._sent = 0
        self._received = 0
        # Sealed messages are read into this buffer, reused (and grown when a message is
        # longer): no allocation, and no zero-filling, per message.
        self._inbox = bytearray(0)
        self._send_lock = threading.Lock()
        self.warn = True  #: log refusals (the handshake leaves that to its server)
        self.closed = False
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, header: dict[str, Any], payload: Any = b"") -> None:
        """Send one message: *header* as JSON and *payload* (any bytes-like object, encrypted
        straight from it). Raises ChannelError if the connection is closed or breaks."""
        head = _encode_header(header)
        with self._send_lock:
            if self.closed:
                raise ChannelError("the connection is closed")
            if self._sent > _MAX_SEQ:
                raise ChannelError("2^64 messages sent on one connection: reconnect")
            frame = seal(self._send_key, self._sent, head, payload)
            self._sent += 1
            try:
                self.sock.sendall(frame)
            except OSError as e:
                raise ChannelError(f"sending to {self.peer} failed: {e}") from e

    def _read_into(self, buf: memoryview) -> None:
        got = 0
        while got < len(buf):
            try:
                n = self.sock.recv_into(buf[got:])
            except OSError as e:
                raise ChannelError(f"the connection with {self.peer} was lost: {e}") from e
            if n == 0:
                if got or len(buf) != PREFIX_BYTES:
                    raise self._refuse("a message cut short by the end of the connection")
                raise ChannelError(f"{self.peer} closed the connection")
            got += n

    def _refuse(self, reason: str) -> ChannelError:
        if self.warn:
            log.warning("cluster protocol: closing the connection with %s: %s", self.peer, reason)
        self.close()
        return ChannelError(f"{self.peer} sent {reason}; the connection is closed")

    def receive(self, max_payload: int = MAX_PAYLOAD) -> tuple[dict[str, Any], memoryview]:
        """The next message: its header and its payload. Raises ChannelError at the end of the
        connection, on a length over the limits (:data:`MAX_HEADER`, *max_payload*), and on a
        message that does not decrypt (logged; the connection is closed)."""
        prefix = bytearray(PREFIX_BYTES)
        self._read_into(memoryview(prefix))
        head_len, payload_len = _PREFIX.unpack(prefix)
        if head_len > MAX_HEADER or payload_len > max_payload:
            raise self._refuse(
                f"a message announcing a {head_len}-byte header and a {payload_len}-byte "
                f"payload, over the limits ({MAX_HEADER}, {max_payload})"
            )
        size = head_len + payload_len + TAG_BYTES
        if len(self._inbox) < size:
            self._inbox = bytearray(max(size, 2 * len(self._inbox)))
        sealed = memoryview(self._inbox)[:size]
        self._read_into(sealed)
        # The plaintext is the message's own (the payload outlives the next receive), left
        # uninitialized: decryption writes every byte of it.
        plain = np.empty(head_len + payload_len, np.uint8)
        try:
            self._opener.decrypt_into(gcm_nonce(self._received), sealed, bytes(prefix), plain)
        except InvalidTag:
            raise self._refuse(
                "a message that does not authenticate (a wrong secret, or a message replayed, "
                "reordered, reflected or altered)"
            ) from None
        self._received += 1
        view = memoryview(plain)
        try:
            header = json.loads(view[:head_len].tobytes())
        except ValueError:
            raise self._refuse("a header that is not JSON") from None
        if not isinstance(header, dict) or not isinstance(header.get("type"), str):
            raise self._refuse("a message without a type")
        return header, view[head_len:]

    def readable(self) -> bool:
        """Whether bytes of a message (or the end of the connection) are waiting."""
        try:
            ready, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(ready)

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._send_lock:
            self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ChannelError("the peer closed the connection during the handshake")
        data += chunk
    return data


def _check_magic(greeting: bytes) -> bytes:
    if greeting[: len(MAGIC)] != MAGIC:
        raise ChannelError(
            "the peer does not speak tfrecord-io's cluster protocol 1 (a different version of "
            "tfrecord-io on the driver and the executors? install the same one everywhere)"
        )
    return greeting[len(MAGIC):]


def connect(
    address: str,
    secret: str,
    hello: dict[str, Any],
    timeout: float = 30.0,
    *,
    client_nonce: bytes | None = None,
) -> Stream:
    """Connect to the server at ``host:port`` (within *timeout* s), make the handshake and
    send *hello* (the first message). *client_nonce*: fixed only by tests (random otherwise).
    Raises ChannelError or OSError if the server cannot be reached or breaks the handshake."""
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        server_nonce = _check_magic(_read_exactly(sock, len(MAGIC) + NONCE_BYTES))
        nonce = client_nonce if client_nonce is not None else secrets.token_bytes(NONCE_BYTES)
        sock.sendall(MAGIC + nonce)
        sock.settimeout(None)
        stream = Stream(
            sock,
            derive_key(secret, server_nonce, nonce, TO_SERVER),
            derive_key(secret, server_nonce, nonce, TO_CLIENT),
        )
        stream.send(hello)
    except BaseException:
        sock.close()
        raise
    return stream


def accept(
    sock: socket.socket, secret: str, *, server_nonce: bytes | None = None
) -> tuple[Stream, dict[str, Any]]:
    """The server's end of a new connection: make the handshake, read and check the hello.
    Raises ChannelError (or OSError) if the peer does not authenticate within
    :data:`HANDSHAKE_TIMEOUT`, without logging it (the caller does, as :class:`StreamServer`
    does). *server_nonce*: fixed only by tests (random otherwise)."""
    nonce = server_nonce if server_nonce is not None else secrets.token_bytes(NONCE_BYTES)
    sock.settimeout(HANDSHAKE_TIMEOUT)
    sock.sendall(MAGIC + nonce)
    client_nonce = _check_magic(_read_exactly(sock, len(MAGIC) + NONCE_BYTES))
    stream = Stream(
        sock,
        derive_key(secret, nonce, client_nonce, TO_CLIENT),
        derive_key(secret, nonce, client_nonce, TO_SERVER),
    )
    stream.warn = False  # the caller reports a refused handshake
    hello, _ = stream.receive(max_payload=0)  # nothing large before the peer authenticated
    stream.warn = True
    sock.settimeout(None)
    return stream, hello


class StreamServer:
    """Accepts connections on *listener*, makes each one's handshake in its own thread and hands
    the authenticated ones to ``serve(stream, hello)`` (in that thread).

    Args:
        listener: a bound socket (listening or not).
        secret: the cluster's secret.
        serve: called with each authenticated connection and its hello; the connection is
            closed when it returns or raises (ChannelError ends it quietly).
        welcome: whether a hello is acceptable (else the connection is refused).
        name: names the server in thread names and log lines.
    """

    def __init__(
        self,
        listener: socket.socket,
        secret: str,
        serve: Callable[[Stream, dict[str, Any]], None],
        welcome: Callable[[dict[str, Any]], bool],
        name: str,
    ) -> None:
        self._listener = listener
        self._secret = secret
        self._serve = serve
        self._welcome = welcome
        self._name = name
        self._lock = threading.Lock()
        self._streams: set[Stream] = set()
        self._threads: list[threading.Thread] = []
        self._closed = False
        #: Connections refused at the handshake so far.
        self.refused = 0
        listener.listen(64)
        self.address = "%s:%d" % listener.getsockname()[:2]
        self._accepter = threading.Thread(target=self._accept, name=f"{name}-accept", daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, peer = self._listener.accept()
            except OSError:
                return  # closed
            thread = threading.Thread(
                target=self._handle, args=(sock, peer), name=f"{self._name}-{peer}", daemon=True
            )
            with self._lock:
                if self._closed:
                    sock.close()
                    return
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
            thread.start()

    def _handle(self, sock: socket.socket, peer: Any) -> None:
        try:
            stream, hello = accept(sock, self._secret)
            if not self._welcome(hello):
                raise ChannelError(f"an unexpected first message {hello.get('type')!r}")
        except (ChannelError, OSError, ValueError) as e:
            with self._lock:
                self.refused += 1
            log.warning("%s: refused a connection from %s: %s", self._name, peer, e)
            with contextlib.suppress(OSError):
                sock.close()
            return
        with self._lock:
            if self._closed:
                stream.close()
                return
            self._streams.add(stream)
        try:
            self._serve(stream, hello)
        except ChannelError as e:
            log.debug("%s: the connection from %s ended: %s", self._name, peer, e)
        finally:
            with self._lock:
                self._streams.discard(stream)
            stream.close()

    def close(self, wait: float = 5.0) -> None:
        """Stop listening and close every connection; wait up to *wait* s for each connection's
        thread to end. Idempotent."""
        with self._lock:
            self._closed = True
            streams = list(self._streams)
            threads = list(self._threads)
        with contextlib.suppress(OSError):  # wakes the accept() blocked in the other thread
            self._listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.close()
        for stream in streams:
            stream.close()
        if wait > 0:
            self._accepter.join(wait)
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join(wait)
