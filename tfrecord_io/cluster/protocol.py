"""The cluster's wire protocol (version 2): an encrypted, authenticated stream of messages over
TCP, and a server that hostile peers cannot starve.

Both of the cluster's connections speak it: the control channel (driver <-> node tasks,
:mod:`tfrecord_io.cluster.channel`) and the feed (driver and feeding tasks -> nodes' feed
servers, :mod:`tfrecord_io.cluster.feed.server`; the jar's ``org.tfrecordio.spark.feed
.FeedStream`` is its Java client). A message is a small JSON header (an object with a ``"type"``)
and an optional large byte payload. ``docs/protocol.md`` specifies it byte by byte; in short:

* keys: the driver's cluster secret never leaves the driver; what leaves it are *purpose keys*
  (:func:`purpose_key`): :data:`CONTROL` for the node tasks' control connections, :data:`FEED`
  for the feed (a feeding task holds the feed key only, which opens no control connection);
* handshake: the server sends :data:`MAGIC` and a random 16-byte nonce, the client answers with
  :data:`MAGIC` and its own random nonce, then its first message (the hello, at most
  :data:`MAX_HELLO` bytes of header and no payload);
* connection keys: one AES-256 key per direction, HKDF-SHA256 of the purpose key with both
  nonces as salt and the direction and the *name of the server the client means to reach* as
  info (:func:`derive_key`): nothing recorded on one connection decrypts on another, a message
  sent back to its sender does not decrypt, and a connection relayed to another server than the
  client meant (two nodes' feed links swapped) does not decrypt either;
* frames: ``uint32 header_length, uint64 payload_length`` (big-endian, authenticated as the
  associated data), then header and payload encrypted with AES-256-GCM as one plaintext, then
  the 16-byte tag; the GCM nonce is the direction's message number (:func:`gcm_nonce`), so a
  replayed, reordered or dropped message does not decrypt.

Lengths are checked against the limits before anything is allocated for them. Any message that
does not decrypt (wrong key, replayed, reordered, reflected, altered, cut short) or does not
parse ends the connection: a warning is logged, the socket closed, and
:class:`~tfrecord_io.errors.ChannelError` raised.

:class:`StreamServer` makes the handshakes of all its unauthenticated connections in one thread,
an event loop (:mod:`selectors`, non-blocking sockets), so a flood of connections costs it no
thread and a bounded amount of memory: at most :data:`MAX_HANDSHAKES` handshakes at once (a
connection beyond that makes the oldest handshake be dropped), each given
:data:`HANDSHAKE_TIMEOUT` seconds in total from its accept to its authenticated hello (a peer
dribbling a byte at a time is cut at that deadline). Only an authenticated, welcomed connection
gets a thread. Errors of ``accept()`` (out of file descriptors, ...) are logged, rate-limited,
and retried with back-off for as long as the server is open: the loop does not die.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import secrets
import select
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tfrecord_io.errors import ChannelError

__all__ = [
    "MAGIC",
    "VERSION",
    "CONTROL",
    "FEED",
    "NONCE_BYTES",
    "TAG_BYTES",
    "PREFIX_BYTES",
    "MAX_HEADER",
    "MAX_HELLO",
    "MAX_PAYLOAD",
    "PURPOSE_INFO",
    "TO_SERVER",
    "TO_CLIENT",
    "HANDSHAKE_TIMEOUT",
    "MAX_HANDSHAKES",
    "KEEPALIVE_IDLE",
    "KEEPALIVE_INTERVAL",
    "KEEPALIVE_PROBES",
    "keep_alive",
    "purpose_key",
    "derive_key",
    "gcm_nonce",
    "seal",
    "Stream",
    "connect",
    "accept",
    "StreamServer",
]

log = logging.getLogger(__name__)

#: The protocol's version, as :data:`MAGIC` spells it.
VERSION = 2
#: The first bytes each side sends: the protocol and its version.
MAGIC = b"TFIO\x00\x02\r\n"
#: The purpose of the control channel's key (node tasks <-> the driver's control server).
CONTROL = "control"
#: The purpose of the feed's key (driver links and feeding tasks -> the nodes' feed servers).
FEED = "feed"
#: Bytes of each side's random handshake nonce.
NONCE_BYTES = 16
#: Bytes of a GCM tag.
TAG_BYTES = 16
#: Bytes of a frame's length prefix (``uint32 header_length, uint64 payload_length``).
PREFIX_BYTES = 12
#: Longest JSON header accepted, in bytes (a control message: a log line, a traceback).
MAX_HEADER = 1 << 20
#: Longest header of a hello (the first message, before the peer authenticated), in bytes.
MAX_HELLO = 4096
#: Largest payload accepted, in bytes: a feed batch is about 1 MiB, but one record makes a batch
#: of its own, and records may have up to 256 MiB (the framing's default limit).
MAX_PAYLOAD = (1 << 28) + (1 << 20)
#: HKDF info of a purpose key, before the purpose's UTF-8 bytes.
PURPOSE_INFO = b"tfrecord-io protocol 2 purpose: "
#: HKDF info of the key of messages from the client (node task, driver link, feeder) to the server.
TO_SERVER = b"tfrecord-io protocol 2: client to server"
#: HKDF info of the key of messages from the server to the client.
TO_CLIENT = b"tfrecord-io protocol 2: server to client"
#: Seconds a server gives a new connection, in total, from its accept to its authenticated hello.
HANDSHAKE_TIMEOUT = 10.0
#: Unauthenticated connections a :class:`StreamServer` handshakes at once.
MAX_HANDSHAKES = 32
#: TCP keepalive of every connection (:func:`keep_alive`): after this many seconds without a
#: byte either way, the kernel probes the peer...
KEEPALIVE_IDLE = 10
#: ... every this many seconds ...
KEEPALIVE_INTERVAL = 5
#: ... and ends the connection after this many probes go unanswered (about 25 s in all).
KEEPALIVE_PROBES = 3

_PURPOSES = (CONTROL, FEED)
_PREFIX = struct.Struct("!IQ")
_MAX_SEQ = (1 << 64) - 1
_GREETING_BYTES = len(MAGIC) + NONCE_BYTES


def purpose_key(secret: str, purpose: str) -> str:
    """The key of *purpose* (:data:`CONTROL` or :data:`FEED`) made from the cluster's *secret*:
    ``HKDF-SHA256(IKM = secret UTF-8, salt = 32 zero bytes, info = PURPOSE_INFO + purpose
    UTF-8, L = 32)``, as 64 hex characters. One purpose's key tells nothing of the secret or of
    another purpose's key. Raises ValueError for another purpose."""
    if purpose not in _PURPOSES:
        raise ValueError(f"no key purpose {purpose!r}: the purposes are {', '.join(_PURPOSES)}")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=PURPOSE_INFO + purpose.encode("utf-8"))
    return hkdf.derive(secret.encode("utf-8")).hex()


def derive_key(key: str, server_nonce: bytes, client_nonce: bytes, info: bytes,
               server: str) -> bytes:
    """The AES-256 key of one direction (*info*: :data:`TO_SERVER` or :data:`TO_CLIENT`) of the
    connection whose handshake exchanged *server_nonce* and *client_nonce*, to the server named
    *server* (``"driver"``, or a node's name for its feed server): HKDF-SHA256 with the purpose
    key's UTF-8 bytes as input key material, ``server_nonce + client_nonce`` as salt and
    ``info + b"\\0" + server`` (UTF-8) as info."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=server_nonce + client_nonce,
                info=info + b"\0" + server.encode("utf-8"))
    return hkdf.derive(key.encode("utf-8"))


def gcm_nonce(seq: int) -> bytes:
    """The 96-bit GCM nonce of message *seq* (counted from 0) of a direction: 4 zero bytes,
    then *seq* as a big-endian ``uint64``."""
    return b"\0\0\0\0" + seq.to_bytes(8, "big")


def _encode_header(header: dict[str, Any]) -> bytes:
    # Compact UTF-8, as Java's Jackson writes it (the golden vectors hold both to the same bytes);
    # a string that is not valid Unicode (a lone surrogate) is written with JSON's escapes.
    try:
        return json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(header, separators=(",", ":")).encode("ascii")


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


def keep_alive(sock: socket.socket) -> None:
    """Turns on TCP keepalive for *sock* with :data:`KEEPALIVE_IDLE`, :data:`KEEPALIVE_INTERVAL`
    and :data:`KEEPALIVE_PROBES`: a peer whose host vanished (powered off, its link cut, so no
    FIN or RST ever comes) then ends a connection that waits for it, within about 25 s, instead
    of holding its thread and socket for as long as the process lives. A peer that is alive but
    silent (a feeding task waiting for its upstream stage) answers the probes and is kept."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE), ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
                          ("TCP_KEEPCNT", KEEPALIVE_PROBES)):
        if hasattr(socket, option):  # Linux and macOS; elsewhere the system's defaults
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


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
        self.peer = f"{name[0]}:{name[1]}" if isinstance(name, tuple) else str(name or "a peer")
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
        with contextlib.suppress(OSError):  # not TCP (a socket pair in tests)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):
            keep_alive(sock)

    def send(self, header: dict[str, Any], payload: Any = b"") -> None:
        """Send one message: *header* as JSON and *payload* (any bytes-like object, encrypted
        straight from it). Raises ChannelError if the connection is closed or breaks, and
        ValueError for a header longer than :data:`MAX_HEADER` (not sent: the receiver would
        end the connection)."""
        head = _encode_header(header)
        if len(head) > MAX_HEADER:
            raise ValueError(f"a {header.get('type')!r} message with a {len(head)}-byte header: "
                             f"the protocol allows {MAX_HEADER}")
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


def _check_magic(greeting: bytes) -> bytes:
    if greeting[: len(MAGIC)] != MAGIC:
        if greeting[:4] == MAGIC[:4] and greeting[6:8] == MAGIC[6:8]:
            theirs = f"version {int.from_bytes(greeting[4:6], 'big')} of"
        else:
            theirs = "no version of"
        raise ChannelError(
            f"the peer speaks {theirs} tfrecord-io's cluster protocol, not version {VERSION} (a "
            "different version of tfrecord-io on the driver and the executors? install the same "
            "one everywhere)"
        )
    return greeting[len(MAGIC):]


def _parse_hello(plain: bytes) -> dict[str, Any]:
    try:
        hello = json.loads(plain)
    except ValueError:
        raise ChannelError("a hello that is not JSON") from None
    if not isinstance(hello, dict) or not isinstance(hello.get("type"), str):
        raise ChannelError("a hello without a type")
    return hello


class _Handshake:
    """The server's side of one handshake, as a state machine fed the bytes the client sends:
    its greeting, then the hello's length prefix, then the hello's sealed header. Each piece is
    read into a buffer of exactly its size (:meth:`wanted`), so that nothing past the hello is
    read (the client may send its next messages at once: they stay in the socket for the
    :class:`Stream`), and the hello's buffer is allocated only once its prefix is within
    :data:`MAX_HELLO`. :func:`accept` drives it with blocking reads, :class:`StreamServer`'s
    event loop with non-blocking ones."""

    def __init__(self, key: str, server: str, nonce: bytes) -> None:
        #: What the server sends first: the magic and its nonce.
        self.greeting = MAGIC + nonce
        self._key = key
        self._server = server
        self._nonce = nonce
        self._buf = bytearray(_GREETING_BYTES)
        self._have = 0
        self._stage = 0  # 0: the greeting, 1: the hello's prefix, 2: the hello's sealed header
        self._prefix = b""
        self._keys = (b"", b"")  # (to the client, to the server), once the greeting is in

    def wanted(self) -> memoryview:
        """Where the client's next bytes go (the rest of the piece being read)."""
        return memoryview(self._buf)[self._have:]

    def received(self, n: int) -> dict[str, Any] | None:
        """*n* bytes were written to the start of :meth:`wanted`: the hello once it is complete
        and authenticated, else None. Raises ChannelError on anything else than the protocol."""
        self._have += n
        if self._have < len(self._buf):
            return None
        piece = bytes(self._buf)
        self._have = 0
        self._stage += 1
        if self._stage == 1:
            client_nonce = _check_magic(piece)
            self._keys = (
                derive_key(self._key, self._nonce, client_nonce, TO_CLIENT, self._server),
                derive_key(self._key, self._nonce, client_nonce, TO_SERVER, self._server),
            )
            self._buf = bytearray(PREFIX_BYTES)
            return None
        if self._stage == 2:
            head_len, payload_len = _PREFIX.unpack(piece)
            if head_len > MAX_HELLO or payload_len:
                raise ChannelError(
                    f"a hello announcing a {head_len}-byte header and a {payload_len}-byte "
                    f"payload, over the limits ({MAX_HELLO}, 0)"
                )
            self._prefix = piece
            self._buf = bytearray(head_len + TAG_BYTES)
            return None
        try:
            plain = AESGCM(self._keys[1]).decrypt(gcm_nonce(0), piece, self._prefix)
        except InvalidTag:
            raise ChannelError(
                "a hello that does not authenticate (a wrong key, a client bound to another "
                "server, or a hello replayed or reflected)"
            ) from None
        return _parse_hello(plain)

    def stream(self, sock: socket.socket) -> Stream:
        """The connection's :class:`Stream`, past the hello (the client's message 0)."""
        stream = Stream(sock, self._keys[0], self._keys[1])
        stream._received = 1  # noqa: SLF001 - the hello, read here
        return stream


def connect(
    address: str,
    key: str,
    hello: dict[str, Any],
    timeout: float = 30.0,
    *,
    server: str,
    client_nonce: bytes | None = None,
) -> Stream:
    """Connect to the server named *server* (``"driver"``, or a node's name for its feed server)
    at ``host:port``, make the handshake under the purpose key *key* and send *hello* (the first
    message, at most :data:`MAX_HELLO` bytes of JSON), all within *timeout* s. *client_nonce*:
    fixed only by tests (random otherwise). Raises ChannelError or OSError if the server cannot
    be reached or breaks the handshake, ValueError if *hello* is too long."""
    head = _encode_header(hello)
    if len(head) > MAX_HELLO:
        raise ValueError(f"a hello of {len(head)} bytes: the protocol allows {MAX_HELLO}")
    deadline = time.monotonic() + timeout
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        greeting = bytearray(_GREETING_BYTES)
        view = memoryview(greeting)
        got = 0
        while got < len(greeting):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            n = sock.recv_into(view[got:])
            if not n:
                raise ChannelError(f"{address} closed the connection during the handshake")
            got += n
        server_nonce = _check_magic(bytes(greeting))
        nonce = client_nonce if client_nonce is not None else secrets.token_bytes(NONCE_BYTES)
        send_key = derive_key(key, server_nonce, nonce, TO_SERVER, server)
        stream = Stream(sock, send_key, derive_key(key, server_nonce, nonce, TO_CLIENT, server))
        # the nonce and the hello in one write: no round trip more
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.sendall(MAGIC + nonce + seal(send_key, 0, head))
        stream._sent = 1  # noqa: SLF001 - the hello, sent here
        sock.settimeout(None)
    except TimeoutError:
        sock.close()
        raise ChannelError(f"{address} did not answer the handshake within {timeout:g} s") from None
    except BaseException:
        sock.close()
        raise
    return stream


def accept(
    sock: socket.socket, key: str, *, server: str, server_nonce: bytes | None = None
) -> tuple[Stream, dict[str, Any]]:
    """The server's end of a new connection, blocking: make the handshake as the server named
    *server* under the purpose key *key*, read and check the hello. Raises ChannelError (or
    OSError) if the peer does not authenticate within :data:`HANDSHAKE_TIMEOUT` s in total,
    without logging it (the caller does). *server_nonce*: fixed only by tests (random
    otherwise). :class:`StreamServer` makes the same handshake without a thread per connection."""
    timeout = HANDSHAKE_TIMEOUT
    deadline = time.monotonic() + timeout
    nonce = server_nonce if server_nonce is not None else secrets.token_bytes(NONCE_BYTES)
    handshake = _Handshake(key, server, nonce)
    try:
        sock.settimeout(timeout)
        sock.sendall(handshake.greeting)
        hello = None
        while hello is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            n = sock.recv_into(handshake.wanted())
            if not n:
                raise ChannelError("the peer closed the connection during the handshake")
            hello = handshake.received(n)
    except TimeoutError:
        raise ChannelError(f"no authenticated hello within {timeout:g} s") from None
    sock.settimeout(None)
    return handshake.stream(sock), hello


class _LogLimit:
    """Logs at most *burst* records per *period* seconds (one kind of event of one server); the
    others are counted and summed up once the period is over."""

    def __init__(self, what: str, burst: int = 20, period: float = 10.0) -> None:
        self._what = what
        self._burst = burst
        self._period = period
        self._start = -period
        self._count = 0
        self._dropped = 0

    def __call__(self, level: int, msg: str, *args: Any, exc_info: bool = False) -> None:
        now = time.monotonic()
        if now - self._start >= self._period:
            self.flush(level)
            self._start = now
            self._count = 0
        if self._count < self._burst:
            self._count += 1
            log.log(level, msg, *args, exc_info=exc_info)
        else:
            self._dropped += 1

    def flush(self, level: int = logging.WARNING) -> None:
        """Log how many records were left out, if any."""
        if self._dropped:
            log.log(level, "%s: %d more in the last %.0f s (not logged one by one)",
                    self._what, self._dropped, self._period)
            self._dropped = 0


class _Pending:
    """An unauthenticated connection of a :class:`StreamServer`: its handshake so far."""

    __slots__ = ("sock", "peer", "handshake", "out", "deadline")

    def __init__(self, sock: socket.socket, peer: str, handshake: _Handshake,
                 deadline: float) -> None:
        self.sock = sock
        self.peer = peer
        self.handshake = handshake
        self.out = memoryview(handshake.greeting)  # what is left to send of the greeting
        self.deadline = deadline


def _peer_name(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address or "a peer")


_LISTEN, _WAKE = "listen", "wake"
_BACKLOG = 128
_BACKOFF_MIN, _BACKOFF_MAX = 0.01, 1.0


class StreamServer:
    """Accepts connections on *listener*, makes their handshakes in one event-loop thread and
    hands each authenticated and welcomed one to ``serve(stream, hello)`` in a thread of its own.

    The event loop (:mod:`selectors`, non-blocking sockets) holds at most
    :data:`MAX_HANDSHAKES` unauthenticated connections: a connection beyond that makes the
    oldest of them be dropped (a client that knows the key answers within a round trip, so it is
    the newest that is likely to be one). Each has :data:`HANDSHAKE_TIMEOUT` s in total from its
    accept to its authenticated hello. Every connection dropped or refused is counted in
    :attr:`refused` and logged at WARNING with its peer (rate-limited: 20 per 10 s, then a
    count). ``accept()`` errors (EMFILE, ENFILE, ENOBUFS, ECONNABORTED...) are logged
    (rate-limited) and retried with back-off (10 ms doubling to 1 s, reset by a success) for as
    long as the server is open; a thread that cannot be started closes its connection only.

    Args:
        listener: a bound socket (listening or not).
        key: the purpose key the clients must hold (:func:`purpose_key`).
        serve: called with each authenticated connection and its hello, in the connection's own
            thread; the connection is closed when it returns or raises (ChannelError ends it
            quietly, another exception is logged).
        welcome: ``welcome(hello)``: None to accept the connection, else the reason it is
            refused. Called in the event loop: it must not block.
        name: names the server in thread names and log lines.
        server: the server's name in the keys' derivation (:func:`derive_key`): ``"driver"``,
            or the node's name for its feed server.
    """

    def __init__(
        self,
        listener: socket.socket,
        key: str,
        serve: Callable[[Stream, dict[str, Any]], None],
        welcome: Callable[[dict[str, Any]], str | None],
        name: str,
        *,
        server: str,
    ) -> None:
        self._listener = listener
        self._key = key
        self._server = server
        self._serve = serve
        self._welcome = welcome
        self._name = name
        self._lock = threading.Lock()
        self._streams: set[Stream] = set()
        self._threads: list[threading.Thread] = []
        self._pending: dict[int, _Pending] = {}  # by file descriptor, oldest first
        self._closed = False
        self._backoff = 0.0
        self._resume_at: float | None = None  # accepting again then, after an accept() error
        self._refusals = _LogLimit(f"{name}: refused connections")
        self._accept_errors = _LogLimit(f"{name}: accept() errors", burst=5)
        self._loop_errors = _LogLimit(f"{name}: event loop errors", burst=5)
        #: Connections refused so far: dropped during the handshake (another protocol, no
        #: authenticated hello in time, too many at once), or whose hello was not welcome.
        self.refused = 0
        listener.listen(_BACKLOG)
        listener.setblocking(False)
        host, port = listener.getsockname()[:2]
        self.address = f"{host}:{port}"
        self._wake_in, self._wake_out = socket.socketpair()
        self._wake_in.setblocking(False)
        self._wake_out.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_in, selectors.EVENT_READ, _WAKE)
        self._selector.register(listener, selectors.EVENT_READ, _LISTEN)
        self._loop = threading.Thread(target=self._run, name=f"{name}-accept", daemon=True)
        try:
            self._loop.start()
        except BaseException:
            self._selector.close()
            for sock in (self._wake_in, self._wake_out, listener):
                sock.close()
            raise

    @property
    def handshaking(self) -> int:
        """Unauthenticated connections held now (at most :data:`MAX_HANDSHAKES`)."""
        return len(self._pending)

    @property
    def accepting(self) -> bool:
        """Whether the event loop runs (it stops only when the server is closed)."""
        return self._loop.is_alive()

    # -- the event loop ------------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        try:
            while not self._closed:
                try:
                    self._step()
                    failures = 0
                except Exception:  # noqa: BLE001 - the loop outlives any one failure
                    failures += 1
                    delay = min(_BACKOFF_MIN * 2 ** (failures - 1), _BACKOFF_MAX)
                    self._loop_errors(logging.ERROR, "%s: the event loop failed (going on in "
                                      "%.2f s)", self._name, delay, exc_info=True)
                    time.sleep(delay)
                    self._rebuild()
        finally:
            self._stop()

    def _step(self) -> None:
        now = time.monotonic()
        wake = [p.deadline for p in self._pending.values()]
        if self._resume_at is not None:
            wake.append(self._resume_at)
        timeout = max(min(wake) - now, 0.0) if wake else None
        listening = False
        for selected, mask in self._selector.select(timeout):
            if self._closed:
                return
            if selected.data is _WAKE:
                with contextlib.suppress(OSError):
                    self._wake_in.recv(4096)
            elif selected.data is _LISTEN:
                listening = True
            elif self._pending.get(selected.data.sock.fileno()) is selected.data:
                self._advance(selected.data, mask)  # (not dropped earlier in this round)
        # New connections only after the handshakes under way have read what came for them: an
        # accept that must drop the oldest never drops one whose hello is already waiting.
        if listening and not self._closed:
            self._accept_some()
        now = time.monotonic()
        for pending in [p for p in self._pending.values() if p.deadline <= now]:
            self._drop(pending, f"no authenticated hello within {HANDSHAKE_TIMEOUT:g} s")
        if self._resume_at is not None and now >= self._resume_at:
            self._resume_at = None
            self._selector.register(self._listener, selectors.EVENT_READ, _LISTEN)

    def _accept_some(self) -> None:
        # As many as there are free handshake slots, and one when there are none (which drops
        # the oldest): a burst larger than the table would drop handshakes in the same round
        # that admitted them, before they could be read.
        for _ in range(max(1, MAX_HANDSHAKES - len(self._pending))):
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as e:
                if not self._closed:
                    self._accept_failed(e)
                return
            self._backoff = 0.0
            self._admit(sock, _peer_name(address))

    def _accept_failed(self, error: OSError) -> None:
        self._backoff = min(max(self._backoff * 2, _BACKOFF_MIN), _BACKOFF_MAX)
        self._resume_at = time.monotonic() + self._backoff
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(self._listener)
        code = errno.errorcode.get(error.errno or 0, "?")
        self._accept_errors(logging.WARNING, "%s: accepting a connection failed (%s: %s); "
                            "trying again in %.2f s", self._name, code, error.strerror or error,
                            self._backoff)

    def _admit(self, sock: socket.socket, peer: str) -> None:
        while len(self._pending) >= MAX_HANDSHAKES:
            oldest = next(iter(self._pending.values()))
            self._drop(oldest, f"more than {MAX_HANDSHAKES} unauthenticated connections at once "
                               "(the oldest is dropped)")
        try:
            sock.setblocking(False)
            handshake = _Handshake(self._key, self._server, secrets.token_bytes(NONCE_BYTES))
            pending = _Pending(sock, peer, handshake, time.monotonic() + HANDSHAKE_TIMEOUT)
            self._send_some(pending)
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if pending.out else 0)
            self._selector.register(sock, events, pending)
        except OSError as e:
            with contextlib.suppress(OSError):
                sock.close()
            self._refuse(peer, f"the connection broke at once ({e})")
            return
        self._pending[sock.fileno()] = pending

    def _advance(self, pending: _Pending, mask: int) -> None:
        sock = pending.sock
        try:
            if mask & selectors.EVENT_WRITE and pending.out:
                self._send_some(pending)
                if not pending.out:
                    self._selector.modify(sock, selectors.EVENT_READ, pending)
            if not mask & selectors.EVENT_READ:
                return
            while True:
                try:
                    n = sock.recv_into(pending.handshake.wanted())
                except BlockingIOError:
                    return
                if not n:
                    raise ChannelError("the peer closed the connection during the handshake")
                hello = pending.handshake.received(n)
                if hello is not None:
                    break
        except (ChannelError, OSError) as e:
            self._drop(pending, str(e))
            return
        self._authenticated(pending, hello)

    @staticmethod
    def _send_some(pending: _Pending) -> None:
        """Send what the socket takes of the rest of the greeting."""
        with contextlib.suppress(BlockingIOError):
            pending.out = pending.out[pending.sock.send(pending.out):]

    def _forget(self, pending: _Pending) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(pending.sock)
        self._pending.pop(pending.sock.fileno(), None)

    def _drop(self, pending: _Pending, reason: str) -> None:
        self._forget(pending)
        with contextlib.suppress(OSError):
            pending.sock.close()
        self._refuse(pending.peer, reason)

    def _refuse(self, peer: str, reason: str) -> None:
        # Logged before it is counted: whoever sees the count finds the log line.
        self._refusals(logging.WARNING, "%s: refused a connection from %s: %s", self._name, peer,
                       reason)
        with self._lock:
            self.refused += 1

    def _authenticated(self, pending: _Pending, hello: dict[str, Any]) -> None:
        self._forget(pending)
        sock = pending.sock
        try:
            reason = self._welcome(hello)
        except Exception as e:  # (logged) a failing check refuses that connection only
            log.error("%s: checking the hello of %s failed", self._name, pending.peer,
                      exc_info=True)
            reason = f"its hello could not be checked ({e!r})"
        if reason is not None:
            with contextlib.suppress(OSError):
                sock.close()
            self._refuse(pending.peer, str(reason))
            return
        try:
            sock.setblocking(True)
            stream = pending.handshake.stream(sock)
        except OSError as e:
            with contextlib.suppress(OSError):
                sock.close()
            self._refuse(pending.peer, f"the connection broke ({e})")
            return
        thread = threading.Thread(target=self._handle, args=(stream, hello),
                                  name=f"{self._name}-{pending.peer}", daemon=True)
        with self._lock:
            if self._closed:
                stream.close()
                return
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
            self._streams.add(stream)
        try:
            thread.start()
        except RuntimeError as e:  # "can't start new thread": out of threads or memory
            with self._lock:
                self._threads.remove(thread)
                self._streams.discard(stream)
            stream.close()
            self._refuse(pending.peer, f"no thread could be started to serve it ({e})")

    def _handle(self, stream: Stream, hello: dict[str, Any]) -> None:
        try:
            self._serve(stream, hello)
        except ChannelError as e:
            log.debug("%s: the connection from %s ended: %s", self._name, stream.peer, e)
        except Exception:  # (logged) a failure ends that connection only
            log.error("%s: serving %s failed", self._name, stream.peer, exc_info=True)
        finally:
            with self._lock:
                self._streams.discard(stream)
            stream.close()

    def _rebuild(self) -> None:
        """A new selector after a failure of the loop: what cannot be registered is dropped."""
        with contextlib.suppress(Exception):
            self._selector.close()
        self._selector = selectors.DefaultSelector()
        with contextlib.suppress(OSError, ValueError):
            self._selector.register(self._wake_in, selectors.EVENT_READ, _WAKE)
        if self._resume_at is None:
            try:
                self._selector.register(self._listener, selectors.EVENT_READ, _LISTEN)
            except (OSError, ValueError) as e:
                self._accept_failed(e if isinstance(e, OSError) else OSError(str(e)))
        for pending in list(self._pending.values()):
            try:
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if pending.out else 0)
                self._selector.register(pending.sock, events, pending)
            except (OSError, ValueError) as e:
                self._pending = {k: p for k, p in self._pending.items() if p is not pending}
                with contextlib.suppress(OSError):
                    pending.sock.close()
                self._refuse(pending.peer, f"lost in a failure of the event loop ({e})")

    def _stop(self) -> None:
        """The loop's end (the server closed): close what it holds."""
        for pending in list(self._pending.values()):
            with contextlib.suppress(OSError):
                pending.sock.close()
        self._pending.clear()
        with contextlib.suppress(Exception):
            self._selector.close()
        for sock in (self._listener, self._wake_in, self._wake_out):
            with contextlib.suppress(OSError):
                sock.close()
        for limit in (self._refusals, self._accept_errors):
            limit.flush()
        self._loop_errors.flush(logging.ERROR)

    def close(self, wait: float = 5.0) -> None:
        """Stop listening and close every connection; wait up to *wait* s for the event loop and
        each connection's thread to end. Idempotent."""
        with self._lock:
            first = not self._closed
            self._closed = True
            streams = list(self._streams)
            threads = list(self._threads)
        if first:
            with contextlib.suppress(OSError):  # refuses new connections at once
                self._listener.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                self._wake_out.send(b"\0")
        for stream in streams:
            stream.close()
        if wait > 0:
            if self._loop is not threading.current_thread():
                self._loop.join(wait)
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join(wait)
