"""The feed's authenticated binary stream: JSON headers with large byte payloads, each signed.

One :class:`FeedWire` is one TCP connection to a node's feed server, from the driver (or a
test). Feeding tasks speak the same protocol from the executors' JVMs (the jar's
``org.tfrecordio.spark.feed.FeedWire``). The server opens with a random nonce (a hex line, as the control channel does);
after that every message in either direction is::

    uint32 header_length, uint64 payload_length   (big-endian)
    header   (JSON object with a "type")
    payload  (bytes: a batch of records, or nothing)
    MAC      (32 bytes: HMAC-SHA256 under the cluster's secret, of nonce:direction:seq: and all
              of the above; see :func:`tfrecord_io.cluster.channel.signer`)

Lengths are checked against :data:`MAX_HEADER` and :data:`MAX_PAYLOAD` before anything is
allocated for them; a message whose MAC does not verify (wrong secret, replayed, reordered,
altered) is never parsed and ends the connection with :class:`~tfrecord_io.cluster.channel
.ChannelError`.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import socket
import struct
import threading
from typing import Any

from tfrecord_io.cluster.channel import MAC_BYTES, ChannelError, new_nonce, signer

__all__ = ["MAX_HEADER", "MAX_PAYLOAD", "FeedWire", "connect", "accept"]

#: Longest JSON header accepted, in bytes.
MAX_HEADER = 64 * 1024
#: Largest payload accepted, in bytes: a batch is about 1 MiB, but one record makes a batch of
#: its own, and records may have up to 256 MiB (the framing's default limit).
MAX_PAYLOAD = (1 << 28) + (1 << 20)
_PREFIX = struct.Struct("!IQ")
_HANDSHAKE_TIMEOUT = 10.0


class FeedWire:
    """One authenticated connection, either end (made by :func:`connect` or :func:`accept`)."""

    def __init__(self, sock: socket.socket, secret: str, nonce: str, outgoing: str) -> None:
        self.sock = sock
        self._secret = secret
        self._nonce = nonce
        self._out = outgoing
        self._in = "d" if outgoing == "n" else "n"
        self._sent = 0
        self._received = 0
        self._send_lock = threading.Lock()
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, header: dict[str, Any], payload: Any = b"") -> None:
        """Send one message (thread-safe). *payload*: any bytes-like object, sent without a
        copy. Raises ChannelError if the connection is gone."""
        head = json.dumps(header, separators=(",", ":")).encode()
        view = memoryview(payload).cast("B")
        prefix = _PREFIX.pack(len(head), view.nbytes)
        with self._send_lock:
            mac = signer(self._secret, self._nonce, self._out, self._sent)
            mac.update(prefix)
            mac.update(head)
            mac.update(view)
            self._sent += 1
            try:
                self.sock.sendall(prefix + head)
                if view.nbytes:
                    self.sock.sendall(view)
                self.sock.sendall(mac.digest())
            except OSError as e:
                raise ChannelError(f"send failed: {e}") from e

    def _read_into(self, buf: memoryview) -> None:
        got = 0
        while got < len(buf):
            try:
                n = self.sock.recv_into(buf[got:])
            except OSError as e:
                raise ChannelError(f"connection lost: {e}") from e
            if n == 0:
                raise ChannelError("connection closed by the peer")
            got += n

    def receive(self, max_payload: int = MAX_PAYLOAD) -> tuple[dict[str, Any], memoryview]:
        """The next message: its header and its payload. Raises ChannelError at EOF, on a
        length over the limits (*max_payload*), or on a message that does not authenticate."""
        prefix = bytearray(_PREFIX.size)
        self._read_into(memoryview(prefix))
        head_len, payload_len = _PREFIX.unpack(prefix)
        if head_len > MAX_HEADER or payload_len > max_payload:
            raise ChannelError(
                f"a message announcing a {head_len}-byte header and a {payload_len}-byte "
                f"payload, over the limits ({MAX_HEADER}, {max_payload})"
            )
        body = bytearray(head_len + payload_len + MAC_BYTES)
        view = memoryview(body)
        self._read_into(view)
        mac = signer(self._secret, self._nonce, self._in, self._received)
        mac.update(prefix)
        mac.update(view[: head_len + payload_len])
        if not hmac.compare_digest(mac.digest(), view[head_len + payload_len:]):
            raise ChannelError("a message that does not authenticate (wrong secret?)")
        self._received += 1
        try:
            header = json.loads(view[:head_len].tobytes())
        except ValueError as e:
            raise ChannelError(f"a header that is not JSON: {e}") from e
        if not isinstance(header, dict) or not isinstance(header.get("type"), str):
            raise ChannelError("a message without a type")
        return header, view[head_len: head_len + payload_len]

    def readable(self) -> bool:
        """Whether a message (or EOF) is waiting, without blocking."""
        import select  # noqa: PLC0415

        try:
            ready, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(ready)

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


def connect(address: str, secret: str, hello: dict[str, Any], timeout: float = 30.0) -> FeedWire:
    """Connect to the feed server at ``host:port`` and send *hello* (the first message)."""
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        line = b""
        while not line.endswith(b"\n") and len(line) < 256:
            chunk = sock.recv(1)
            if not chunk:
                raise ChannelError(f"the feed server at {address} closed the connection")
            line += chunk
        sock.settimeout(None)
        wire = FeedWire(sock, secret, line.strip().decode(), "n")
        wire.send(hello)
    except BaseException:
        sock.close()
        raise
    return wire


def accept(sock: socket.socket, secret: str) -> tuple[FeedWire, dict[str, Any]]:
    """The server's end of a new connection: send the nonce, read and check the hello.
    Raises ChannelError (or OSError) if the peer does not authenticate within 10 s."""
    nonce = new_nonce()
    sock.settimeout(_HANDSHAKE_TIMEOUT)
    sock.sendall(nonce.encode() + b"\n")
    wire = FeedWire(sock, secret, nonce, "d")
    hello, _ = wire.receive(max_payload=0)  # nothing large from a peer not yet authenticated
    sock.settimeout(None)
    return wire, hello
