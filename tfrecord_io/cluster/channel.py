"""The cluster's control channel: driver <-> nodes, encrypted, JSON only.

The driver runs a :class:`ControlServer`; each node's Spark task connects with a
:class:`NodeConnection` and uses it to register, send its output lines, heartbeats and result,
and to hear "stop". The only payload on it is the "done" message's: ``main_fun``'s return
value, pickled (:mod:`tfrecord_io.cluster.results`), at most
:data:`~tfrecord_io.cluster.results.MAX_VALUE_BYTES`.

It speaks the cluster's protocol (:mod:`tfrecord_io.cluster.protocol`, specified in
``docs/protocol.md``): every message is a JSON header (and at most that one payload), encrypted and
authenticated with keys derived from the cluster's secret for this connection and direction.
A message that does not decrypt -- wrong secret, replayed from another connection, reordered,
reflected, altered -- is never parsed: the connection is closed, a warning is logged, and the
cluster carries on. A message longer than :data:`~tfrecord_io.cluster.protocol.MAX_HEADER`
bytes is refused the same way, before it is read.

The secret is made per cluster by the driver (:func:`new_secret`) and reaches the nodes inside
the Spark task closure, so it is as private as Spark's own driver <-> executor traffic (turn on
``spark.authenticate`` and ``spark.network.crypto.enabled`` to protect that).
"""

from __future__ import annotations

import secrets
import socket
import threading
from typing import Any, Callable

from tfrecord_io.cluster.protocol import Stream, StreamServer, connect
from tfrecord_io.cluster.results import MAX_VALUE_BYTES
from tfrecord_io.errors import ChannelError

__all__ = ["ControlServer", "NodeConnection", "new_secret"]

def new_secret() -> str:
    """A fresh random secret for one cluster (256 bits, hex)."""
    return secrets.token_hex(32)


def _is_hello(message: dict[str, Any]) -> bool:
    return message["type"] == "hello" and isinstance(message.get("node"), str)


Handler = Callable[[str, dict[str, Any], dict[str, Any]], None]


class ControlServer:
    """The driver's end: accepts nodes, hands their messages to *on_message*.

    Args:
        host: the address to bind (the driver's address Spark uses, never every interface).
        secret: the cluster's secret (:func:`new_secret`).
        on_message: called as ``on_message(node, message, hello)`` from the connection's reader
            thread; the first message of a connection must be ``{"type": "hello", "node": NAME,
            ...}`` (*hello*: that first message, for every message of the connection).
        on_lost: called as ``on_lost(node, reason, hello)`` when an authenticated connection
            ends (*hello*: that connection's registration, which says which attempt it was of).
    """

    def __init__(
        self,
        host: str,
        secret: str,
        on_message: Handler,
        on_lost: Callable[[str, str, dict[str, Any]], None],
    ) -> None:
        self._on_message = on_message
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._streams: dict[str, Stream] = {}
        self._closed = False
        listener = socket.create_server((host, 0))
        self.address = f"{host}:{listener.getsockname()[1]}"
        self._server = StreamServer(
            listener, secret, self._serve, _is_hello, name="cluster-control"
        )

    @property
    def refused(self) -> int:
        """Connections refused at the handshake (no secret, or not a hello) so far."""
        return self._server.refused

    def _serve(self, stream: Stream, hello: dict[str, Any]) -> None:
        node = hello["node"]
        with self._lock:
            old = self._streams.get(node)
            self._streams[node] = stream
        if old is not None:
            old.close()
        reason = "connection closed"
        try:
            self._on_message(node, hello, hello)
            while True:
                message, payload = stream.receive(max_payload=MAX_VALUE_BYTES)
                if len(payload):
                    if message["type"] != "done":
                        raise ChannelError(f"a {message['type']!r} message with a payload")
                    message["payload"] = bytes(payload)
                self._on_message(node, message, hello)
        except ChannelError as e:
            reason = str(e)
        except Exception as e:  # noqa: BLE001 - a bad message ends that node's connection only
            reason = f"bad message: {e!r}"
        finally:
            stream.close()
            with self._lock:
                current = self._streams.get(node) is stream
                if current:
                    del self._streams[node]
            if current and not self._closed:
                self._on_lost(node, reason, hello)

    def send(self, node: str, message: dict[str, Any]) -> bool:
        """Send *message* to *node*; False if it is not connected (any more)."""
        with self._lock:
            stream = self._streams.get(node)
        if stream is None:
            return False
        try:
            stream.send(message)
            return True
        except ChannelError:
            return False

    def connected(self) -> list[str]:
        """The nodes connected now."""
        with self._lock:
            return list(self._streams)

    def close(self) -> None:
        """Stop listening and close every connection. Idempotent."""
        with self._lock:
            self._closed = True
        self._server.close()


class NodeConnection:
    """A node's end of the channel.

    Args:
        address: the driver's ``host:port``.
        secret: the cluster's secret.
        hello: the registration message (``{"type": "hello", "node": ..., ...}``), sent at once.
    """

    def __init__(self, address: str, secret: str, hello: dict[str, Any], timeout: float = 30.0):
        self._stream = connect(address, secret, hello, timeout)
        self.fileno = self._stream.sock.fileno

    def send(self, message: dict[str, Any], payload: bytes = b"") -> None:
        """Send one message (thread-safe), with *payload* only for "done" (the pickled return
        value). Raises ChannelError if the driver is gone."""
        self._stream.send(message, payload)

    def receive(self) -> dict[str, Any]:
        """The next message from the driver (blocks). Raises ChannelError if it is gone."""
        return self._stream.receive(max_payload=0)[0]

    def close(self) -> None:
        """Close the connection. Idempotent."""
        self._stream.close()
