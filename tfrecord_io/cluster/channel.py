"""The cluster's control channel: driver <-> nodes, authenticated, JSON only.

The driver runs a :class:`ControlServer`; each node's Spark task connects with a
:class:`NodeConnection` and uses it to register, send its output lines, heartbeats and result,
and to hear "stop". Nothing on it is ever unpickled.

Wire format: newline-terminated lines. On accepting a connection the server sends a random
nonce (hex). After that every line in either direction is ``MAC SPACE JSON`` where ``MAC`` is
the hex HMAC-SHA256, under the cluster's secret, of ``nonce:direction:sequence:JSON``
(direction ``n`` for node -> driver, ``d`` for driver -> node; sequence counts the lines of
that direction from 0). A line whose MAC does not verify -- wrong secret, replayed from
another connection, reordered, altered -- is never parsed: the connection is closed, a warning
is logged, and the cluster carries on. A line longer than :data:`MAX_LINE` bytes is refused the
same way, before it is buffered whole.

The secret is made per cluster by the driver (:func:`new_secret`) and reaches the nodes inside
the Spark task closure, so it is as private as Spark's own driver <-> executor traffic (turn on
``spark.authenticate`` and ``spark.network.crypto.enabled`` to protect that). The channel
authenticates and protects integrity; it does not encrypt: log lines cross it in clear.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import socket
import threading
from typing import Any, Callable

__all__ = [
    "MAX_LINE",
    "MAC_BYTES",
    "ChannelError",
    "ControlServer",
    "NodeConnection",
    "new_secret",
    "new_nonce",
    "signer",
]

log = logging.getLogger(__name__)

#: Longest line accepted, in bytes (a log line or a traceback, JSON-encoded).
MAX_LINE = 1 << 20
#: Bytes of a MAC (HMAC-SHA256) in binary form.
MAC_BYTES = 32
_HANDSHAKE_TIMEOUT = 10.0


class ChannelError(ConnectionError):
    """The peer closed the connection, or sent a line that does not authenticate."""


def new_secret() -> str:
    """A fresh random secret for one cluster (256 bits, hex)."""
    return secrets.token_hex(32)


def new_nonce() -> str:
    """A fresh random nonce for one connection (128 bits, hex)."""
    return secrets.token_hex(16)


def signer(secret: str, nonce: str, direction: str, seq: int) -> hmac.HMAC:
    """The keyed hash of the channel's scheme for message *seq* of *direction* (``"n"`` node ->
    driver, ``"d"`` driver -> node) on the connection of *nonce*: HMAC-SHA256 under *secret*,
    primed with ``nonce:direction:seq:``. Feed it the message (``update``) and take its
    ``digest()``; other authenticated streams of the cluster (the feed) sign the same way."""
    return hmac.new(secret.encode(), f"{nonce}:{direction}:{seq}:".encode(), hashlib.sha256)


def _mac(secret: str, nonce: str, direction: str, seq: int, payload: bytes) -> str:
    h = signer(secret, nonce, direction, seq)
    h.update(payload)
    return h.hexdigest()


class _Wire:
    """One authenticated connection, either side: signs what it sends, checks what it reads."""

    def __init__(self, sock: socket.socket, secret: str, nonce: str, outgoing: str) -> None:
        self._sock = sock
        self._reader = sock.makefile("rb")
        self._secret = secret
        self._nonce = nonce
        self._out = outgoing
        self._in = "d" if outgoing == "n" else "n"
        self._sent = 0
        self._received = 0
        self._send_lock = threading.Lock()
        self.closed = False

    def send(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message, separators=(",", ":")).encode()
        with self._send_lock:
            if self.closed:
                raise ChannelError("connection closed")
            mac = _mac(self._secret, self._nonce, self._out, self._sent, payload)
            self._sent += 1
            try:
                self._sock.sendall(mac.encode() + b" " + payload + b"\n")
            except OSError as e:
                raise ChannelError(f"send failed: {e}") from e

    def receive(self) -> dict[str, Any]:
        """The next message. Raises ChannelError at EOF or on a line that does not verify."""
        try:
            line = self._reader.readline(MAX_LINE + 1)
        except (OSError, ValueError) as e:
            raise ChannelError(f"connection lost: {e}") from e
        if not line:
            raise ChannelError("connection closed by the peer")
        if len(line) > MAX_LINE or not line.endswith(b"\n"):
            raise ChannelError(f"a line longer than {MAX_LINE} bytes, or cut short")
        mac, _, payload = line.rstrip(b"\n").partition(b" ")
        expected = _mac(self._secret, self._nonce, self._in, self._received, payload)
        if not hmac.compare_digest(mac, expected.encode()):
            raise ChannelError("a message that does not authenticate (wrong secret?)")
        self._received += 1
        message = json.loads(payload)
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ChannelError("a message without a type")
        return message

    def close(self) -> None:
        with self._send_lock:
            self.closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._reader.close()
        with contextlib.suppress(OSError):
            self._sock.close()


Handler = Callable[[str, dict[str, Any]], None]


class ControlServer:
    """The driver's end: accepts nodes, hands their messages to *on_message*.

    Args:
        host: the address to bind (the driver's address Spark uses, never every interface).
        secret: the cluster's secret (:func:`new_secret`).
        on_message: called as ``on_message(node, message)`` from the connection's reader thread;
            the first message of a connection must be ``{"type": "hello", "node": NAME, ...}``.
        on_lost: called as ``on_lost(node, reason)`` when an authenticated connection ends.
    """

    def __init__(
        self,
        host: str,
        secret: str,
        on_message: Handler,
        on_lost: Callable[[str, str], None],
    ) -> None:
        self._secret = secret
        self._on_message = on_message
        self._on_lost = on_lost
        self._listener = socket.create_server((host, 0))
        self.address = f"{host}:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._wires: dict[str, _Wire] = {}
        self._all: set[_Wire] = set()
        self._threads: list[threading.Thread] = []
        self.refused = 0
        self._closed = False
        self._accepter = threading.Thread(
            target=self._accept, name="cluster-control-accept", daemon=True
        )
        self._accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, peer = self._listener.accept()
            except OSError:
                return  # closed
            thread = threading.Thread(
                target=self._serve, args=(sock, peer), name=f"cluster-control-{peer}", daemon=True
            )
            with self._lock:
                if self._closed:
                    sock.close()
                    return
                self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket, peer: Any) -> None:
        nonce = new_nonce()
        wire = _Wire(sock, self._secret, nonce, "d")
        with self._lock:
            self._all.add(wire)
        node = None
        try:
            sock.settimeout(_HANDSHAKE_TIMEOUT)
            sock.sendall(nonce.encode() + b"\n")
            hello = wire.receive()
            if hello["type"] != "hello" or not isinstance(hello.get("node"), str):
                raise ChannelError("the first message is not a hello")
            sock.settimeout(None)
        except (ChannelError, OSError, ValueError) as e:
            with self._lock:
                self.refused += 1
            log.warning("cluster control channel: refused a connection from %s: %s", peer, e)
            wire.close()
            with self._lock:
                self._all.discard(wire)
            return
        node = hello["node"]
        with self._lock:
            old = self._wires.get(node)
            self._wires[node] = wire
        if old is not None:
            old.close()
        reason = "connection closed"
        try:
            self._on_message(node, hello)
            while True:
                self._on_message(node, wire.receive())
        except ChannelError as e:
            reason = str(e)
        except Exception as e:  # noqa: BLE001 - a bad message ends that node's connection only
            reason = f"bad message: {e!r}"
        finally:
            wire.close()
            with self._lock:
                self._all.discard(wire)
                current = self._wires.get(node) is wire
                if current:
                    del self._wires[node]
            if current and not self._closed:
                self._on_lost(node, reason)

    def send(self, node: str, message: dict[str, Any]) -> bool:
        """Send *message* to *node*; False if it is not connected (any more)."""
        with self._lock:
            wire = self._wires.get(node)
        if wire is None:
            return False
        try:
            wire.send(message)
            return True
        except ChannelError:
            return False

    def connected(self) -> list[str]:
        """The nodes connected now."""
        with self._lock:
            return list(self._wires)

    def close(self) -> None:
        """Stop listening and close every connection. Idempotent."""
        with self._lock:
            self._closed = True
            wires = list(self._all)
            threads = list(self._threads)
        with contextlib.suppress(OSError):  # wakes the accept() blocked in the other thread
            self._listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.close()
        for wire in wires:
            wire.close()
        self._accepter.join(5.0)
        for thread in threads:
            thread.join(5.0)


class NodeConnection:
    """A node's end of the channel.

    Args:
        address: the driver's ``host:port``.
        secret: the cluster's secret.
        hello: the registration message (``{"type": "hello", "node": ..., ...}``), sent at once.
    """

    def __init__(self, address: str, secret: str, hello: dict[str, Any], timeout: float = 30.0):
        host, _, port = address.rpartition(":")
        sock = socket.create_connection((host, int(port)), timeout=timeout)
        try:
            nonce = sock.makefile("rb").readline(256).strip().decode()
            if not nonce:
                raise ChannelError(f"the driver at {address} closed the connection")
            sock.settimeout(None)
            self._wire = _Wire(sock, secret, nonce, "n")
            self._wire.send(hello)
        except BaseException:
            sock.close()
            raise
        self.fileno = sock.fileno

    def send(self, message: dict[str, Any]) -> None:
        """Send one message (thread-safe). Raises ChannelError if the driver is gone."""
        self._wire.send(message)

    def receive(self) -> dict[str, Any]:
        """The next message from the driver (blocks). Raises ChannelError if it is gone."""
        return self._wire.receive()

    def close(self) -> None:
        """Close the connection. Idempotent."""
        self._wire.close()
