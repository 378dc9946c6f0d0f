"""The feed server of a node process: where feeding tasks deliver batches and the driver its
epoch markers.

It listens on the node's host (a socket the Spark task bound and reported to the driver in its
registration, handed to the node process as a file descriptor), accepts connections that
decrypt with keys derived from the cluster's secret (the cluster's protocol,
:mod:`tfrecord_io.cluster.protocol`, specified in ``docs/protocol.md``; the handshake and the
refusal of connections that do not authenticate are its :class:`~tfrecord_io.cluster.protocol
.StreamServer`'s) and serves two kinds:

* the driver's link (one per node): the server sends ``demand`` (the reader started epoch *e*
  of a feed), ``stopped`` (the reader is done with a feed) and ``closing`` (``main_fun`` ended:
  ``finished`` or ``failed``); the driver sends ``end_epoch``, ``fail_epoch`` and ``end_all``.
* a feeding task (one connection per task and worker): ``batch`` messages into the feed's
  :class:`~tfrecord_io.cluster.feed.buffer.FeedBuffer`, then ``end``, answered with ``ack`` once
  every batch of the connection is buffered. When the feed is stopped the server answers
  ``stopped`` (at once, and to the next batch) and reads the rest without keeping it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from typing import Any

from tfrecord_io.cluster.feed.buffer import DEFAULT_CAPACITY, FeedBuffer
from tfrecord_io.cluster.protocol import Stream, StreamServer
from tfrecord_io.errors import ChannelError

__all__ = ["FeedServer"]

log = logging.getLogger("tfrecord_io.cluster.feed")


class FeedServer:
    """The feed server of one node (see the module docs).

    Args:
        listener: a bound socket (listening or not) on the node's host.
        secret: the cluster's secret.
        capacity: batches each feed buffers (:data:`~tfrecord_io.cluster.feed.buffer
            .DEFAULT_CAPACITY`).
    """

    def __init__(
        self, listener: socket.socket, secret: str, capacity: int = DEFAULT_CAPACITY
    ) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._buffers: dict[str, FeedBuffer] = {}
        self._demands: dict[str, int] = {}
        self._stopped: set[str] = set()
        self._all_closed = False
        self._driver: Stream | None = None
        self._closing: str | None = None
        self._server = StreamServer(listener, secret, self._serve, _is_hello, name="feed server")
        self.address = self._server.address

    # -- the node's side -----------------------------------------------------------------------

    def buffer(self, name: str) -> FeedBuffer:
        """The buffer of feed *name* (made on first use)."""
        with self._lock:
            buf = self._buffers.get(name)
            if buf is None:
                buf = FeedBuffer(name, self._capacity, self._demand)
                if self._all_closed:
                    buf.close()
                if name in self._stopped or self._closing:
                    buf.stop()
                self._buffers[name] = buf
            return buf

    def stop(self, name: str | None = None) -> None:
        """The reader is done with feed *name* (None: every feed, present and future): drop
        its data and tell the driver, so the feeding of it ends promptly."""
        with self._lock:
            names = [name] if name is not None else list(self._buffers)
            self._stopped.update(names)
        for n in names:
            self.buffer(n).stop()
            self._to_driver({"type": "stopped", "feed": n})

    def close(self, outcome: str) -> None:
        """``main_fun`` ended (*outcome* ``"finished"`` or ``"failed"``): stop every feed, tell
        the driver, stop serving."""
        with self._lock:
            self._closing = outcome
            buffers = list(self._buffers.values())
        for buf in buffers:
            buf.stop()
        self._to_driver({"type": "closing", "outcome": outcome})
        self._server.close(wait=0)

    def _demand(self, name: str, epoch: int) -> None:
        with self._lock:
            self._demands[name] = epoch
        self._to_driver({"type": "demand", "feed": name, "epoch": epoch})

    def _to_driver(self, message: dict[str, Any]) -> None:
        wire = self._driver
        if wire is not None:
            with contextlib.suppress(ChannelError):
                wire.send(message)

    # -- connections ---------------------------------------------------------------------------

    def _serve(self, stream: Stream, hello: dict[str, Any]) -> None:
        with self._lock:
            if self._closing:
                return
        try:
            if hello["type"] == "driver":
                self._serve_driver(stream)
            else:
                self._serve_feeder(stream, hello["feed"], int(hello["epoch"]))
        except (ValueError, KeyError, TypeError) as e:
            log.warning("feed server: closing the connection with %s: a malformed message (%r)",
                        stream.peer, e)
        finally:
            with self._lock:
                if self._driver is stream:
                    self._driver = None

    def _serve_driver(self, wire: Stream) -> None:
        with self._lock:
            self._driver = wire
            demands = dict(self._demands)
            stopped = set(self._stopped)
            closing = self._closing
        for name, epoch in sorted(demands.items()):
            wire.send({"type": "demand", "feed": name, "epoch": epoch})
        for name in sorted(stopped):
            wire.send({"type": "stopped", "feed": name})
        if closing:
            wire.send({"type": "closing", "outcome": closing})
        while True:
            message, _ = wire.receive(max_payload=0)
            kind = message["type"]
            if kind == "end_epoch":
                self.buffer(message["feed"]).end_epoch(int(message["epoch"]), message.get("sent"))
            elif kind == "fail_epoch":
                self.buffer(message["feed"]).fail_epoch(int(message["epoch"]), message["reason"])
            elif kind == "end_all":
                with self._lock:
                    self._all_closed = True
                    buffers = list(self._buffers.values())
                for buf in buffers:
                    buf.close()

    def _serve_feeder(self, wire: Stream, name: str, epoch: int) -> None:
        buf = self.buffer(name)
        told = buf.stopped
        wire.send({"type": "stopped" if told else "ready"})
        while True:
            message, payload = wire.receive()
            kind = message["type"]
            if kind == "batch":
                key = (int(message["job"]), int(message["partition"]), int(message["seq"]))
                kept = not told and buf.put(epoch, key, int(message["records"]), payload)
                if not kept and not told:
                    told = True
                    wire.send({"type": "stopped"})
            elif kind == "end":
                wire.send({"type": "ack", "stopped": told or buf.stopped})
                return


def _is_hello(message: dict[str, Any]) -> bool:
    """Whether *message* opens a connection: the driver's link, or a feeding task's."""
    kind = message["type"]
    return kind == "driver" or (kind == "feeder" and isinstance(message.get("feed"), str))
