"""The cluster's control channel: driver <-> nodes, encrypted, typed messages only.

The driver runs a :class:`ControlServer`; each node's Spark task connects with a
:class:`NodeConnection` and uses it to register, send its output lines, heartbeats and result,
and to hear "stop". Messages are the types of :mod:`tfrecord_io.cluster.messages`, checked on
arrival (a message of another type, with a field missing, unknown or of the wrong type ends
that connection). The only payload on it is the :class:`~tfrecord_io.cluster.messages.Done`
message's: ``main_fun``'s return value, pickled (:mod:`tfrecord_io.cluster.results`), at most
:data:`~tfrecord_io.cluster.results.MAX_VALUE_BYTES`.

It speaks the cluster's protocol (:mod:`tfrecord_io.cluster.protocol`, specified in
``docs/protocol.md``) under the cluster's control key (:func:`control_key`), which only the
nodes' Spark tasks get: feeding tasks get the feed key, which opens no control connection. A
message that does not decrypt -- wrong key, replayed from another connection, reordered,
reflected, altered -- is never parsed: the connection is closed, a warning is logged, and the
cluster carries on.

Registration is checked before anything else happens: a hello is refused (logged, counted in
:attr:`ControlServer.refused`, the connection closed) when the driver's *admit* rejects it (a
node of an attempt already over, a name that is not one of the attempt's nodes) or the same
node of the same attempt is connected already; a live node's connection is never touched by
someone else's hello.

The driver keeps the cluster's secret (:func:`new_secret`); the node tasks get the control and
feed keys derived from it inside the Spark task closure, as private as Spark's own driver <->
executor traffic (turn on ``spark.authenticate`` and ``spark.network.crypto.enabled`` to
protect that).
"""

from __future__ import annotations

import logging
import secrets
import socket
import threading
from collections.abc import Callable
from typing import Any

from tfrecord_io.cluster import messages
from tfrecord_io.cluster.messages import Hello, Message
from tfrecord_io.cluster.protocol import CONTROL, FEED, Stream, StreamServer, connect, purpose_key
from tfrecord_io.cluster.results import MAX_VALUE_BYTES
from tfrecord_io.errors import ChannelError

__all__ = ["ControlServer", "NodeConnection", "new_secret", "control_key", "feed_key",
           "SERVER_NAME"]

log = logging.getLogger("tfrecord_io.cluster")

#: The control server's name in the keys' derivation (a client bound to another server's name
#: does not decrypt here).
SERVER_NAME = "driver"


def new_secret() -> str:
    """A fresh random secret for one cluster (256 bits, hex). It stays on the driver."""
    return secrets.token_hex(32)


def control_key(secret: str) -> str:
    """The key of the control channel: for the nodes' Spark tasks only."""
    return purpose_key(secret, CONTROL)


def feed_key(secret: str) -> str:
    """The key of the feed: for the nodes' feed servers, the driver's links and the feeding
    tasks; it opens no control connection."""
    return purpose_key(secret, FEED)


#: ``on_message(hello, message, payload)``: a message of a registered node (*hello*: its
#: registration; *payload*: a :class:`~tfrecord_io.cluster.messages.Done`'s pickled value, or
#: empty).
Handler = Callable[[Hello, Message, bytes], None]


class ControlServer:
    """The driver's end: admits nodes, hands their messages to *on_message*.

    Args:
        host: the address to bind (the driver's address Spark uses, never every interface).
        key: the control key (:func:`control_key`).
        on_message: called as ``on_message(hello, message, payload)`` from the connection's
            reader thread, first with the hello itself.
        on_lost: called as ``on_lost(hello, reason)`` when an admitted connection ends.
        admit: ``admit(hello)``: None to accept the registration, else why it is refused.
    """

    def __init__(
        self,
        host: str,
        key: str,
        on_message: Handler,
        on_lost: Callable[[Hello, str], None],
        admit: Callable[[Hello], str | None] = lambda hello: None,
    ) -> None:
        self._on_message = on_message
        self._on_lost = on_lost
        self._admit = admit
        self._lock = threading.Lock()
        self._streams: dict[tuple[str, int], Stream] = {}
        self._closed = False
        listener = socket.create_server((host, 0))
        self.address = f"{host}:{listener.getsockname()[1]}"
        self._server = StreamServer(
            listener, key, self._serve, self._welcome, name="cluster-control", server=SERVER_NAME
        )

    @property
    def refused(self) -> int:
        """Connections refused so far: at the handshake (no key, not a hello), or a
        registration refused (stale, unknown or duplicate)."""
        return self._server.refused

    def _welcome(self, header: dict[str, Any]) -> str | None:
        try:
            hello = messages.parse(header, messages.CONTROL_HELLOS)
        except ChannelError as e:
            return str(e)
        assert isinstance(hello, Hello)
        reason = self._admit(hello)
        if reason is not None:
            return reason
        with self._lock:
            if (hello.node, hello.attempt) in self._streams:
                return (f"{hello.node} of attempt {hello.attempt} is connected already "
                        "(a duplicate registration)")
        return None

    def _serve(self, stream: Stream, header: dict[str, Any]) -> None:
        hello = messages.parse(header, messages.CONTROL_HELLOS)
        assert isinstance(hello, Hello)
        key = (hello.node, hello.attempt)
        with self._lock:
            if key in self._streams or self._closed:  # a duplicate that raced the first
                log.warning("cluster-control: refused a second registration of %s (attempt %d) "
                            "from %s", hello.node, hello.attempt, stream.peer)
                return
            self._streams[key] = stream
        reason = "connection closed"
        try:
            self._on_message(hello, hello, b"")
            while True:
                header, payload = stream.receive(max_payload=MAX_VALUE_BYTES)
                message = messages.parse(header, messages.FROM_NODE_TASK)
                if len(payload) and not message.PAYLOAD:
                    raise ChannelError(f"a {message.TYPE!r} message with a payload")
                self._on_message(hello, message, bytes(payload))
        except ChannelError as e:
            reason = str(e)
        except Exception as e:  # noqa: BLE001 - a bad message ends that node's connection only
            reason = f"bad message: {e!r}"
        finally:
            stream.close()
            with self._lock:
                del self._streams[key]
                closed = self._closed
            if not closed:
                self._on_lost(hello, reason)

    def send(self, node: str, attempt: int, message: Message) -> bool:
        """Send *message* to *node* of *attempt*; False if it is not connected (any more)."""
        with self._lock:
            stream = self._streams.get((node, attempt))
        if stream is None:
            return False
        try:
            stream.send(messages.encode(message))
            return True
        except ChannelError:
            return False

    def disconnect(self, node: str, attempt: int) -> bool:
        """Close the connection of *node* of *attempt* (one the driver gave up on: a silent
        node's, whose host may never close it), so that its reader thread ends; False if it is
        not connected (any more)."""
        with self._lock:
            stream = self._streams.get((node, attempt))
        if stream is None:
            return False
        stream.close()
        return True

    def connected(self) -> list[tuple[str, int]]:
        """The nodes connected now, as ``(node, attempt)``."""
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
        key: the control key.
        hello: the registration, sent at once.
        timeout: seconds to connect and make the handshake.
    """

    def __init__(self, address: str, key: str, hello: Hello, timeout: float = 30.0):
        self._stream = connect(address, key, messages.encode(hello), timeout, server=SERVER_NAME)
        self.fileno = self._stream.sock.fileno

    def send(self, message: Message, payload: bytes = b"") -> None:
        """Send one message (thread-safe), with *payload* only for :class:`Done` (the pickled
        return value). Raises ChannelError if the driver is gone."""
        self._stream.send(messages.encode(message), payload)

    def receive(self) -> Message:
        """The next message from the driver (blocks). Raises ChannelError if it is gone or
        sent something else than the protocol allows."""
        return messages.parse(self._stream.receive(max_payload=0)[0], messages.FROM_DRIVER)

    def close(self) -> None:
        """Close the connection. Idempotent."""
        self._stream.close()
