"""The feed server of a node process: where feeding tasks deliver batches and the driver its
epoch markers.

It listens on the node's host (a socket the Spark task bound and reported to the driver in its
registration, handed to the node process as a file descriptor), accepts connections that
decrypt with keys derived from the cluster's feed key and the node's name (the cluster's
protocol, :mod:`tfrecord_io.cluster.protocol`, specified in ``docs/protocol.md``; the handshake
and the refusal of connections that do not authenticate are its
:class:`~tfrecord_io.cluster.protocol.StreamServer`'s), whose hello names this node's attempt
(a hello of another attempt, a stale feeding task's, is refused and logged), and serves two
kinds:

* the driver's link (one per node): the server sends ``demand`` (the reader started epoch *e*
  of a feed), ``reader_left`` (the reader is done with a feed) and ``closing`` (``main_fun``
  ended: ``finished`` or ``failed``); the driver sends ``end_epoch``, ``fail_epoch``,
  ``end_all`` and ``withdraw_epoch`` (an epoch fed ahead, then stopped), which the server
  answers with ``withdrawn``.
* a feeding task (one connection per task and worker): ``batch`` messages into the feed's
  :class:`~tfrecord_io.cluster.feed.buffer.FeedBuffer`, then ``end``, answered with ``ack`` once
  every batch of the connection is buffered. When the feed is stopped, or its reader is done
  with the connection's epoch (an iteration left early), the server answers ``stopped`` (at
  once, and to the next batch) and reads the rest without keeping it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from typing import Any

from tfrecord_io.cluster import messages
from tfrecord_io.cluster.feed.buffer import DEFAULT_CAPACITY, FeedBuffer
from tfrecord_io.cluster.messages import (
    Ack,
    Batch,
    Closing,
    Demand,
    DriverHello,
    EndEpoch,
    FailEpoch,
    FeederHello,
    Message,
    ReaderLeft,
    Ready,
    Stopped,
    WithdrawEpoch,
    Withdrawn,
)
from tfrecord_io.cluster.protocol import MAX_PAYLOAD, Stream, StreamServer
from tfrecord_io.errors import ChannelError

__all__ = ["FeedServer"]

log = logging.getLogger("tfrecord_io.cluster.feed")


class FeedServer:
    """The feed server of one node (see the module docs).

    Args:
        listener: a bound socket (listening or not) on the node's host.
        key: the cluster's feed key (:func:`~tfrecord_io.cluster.protocol.purpose_key` of
            :data:`~tfrecord_io.cluster.protocol.FEED`).
        name: the node's name (``"worker:0"``): the server's name in the keys' derivation, so
            that a client meaning to reach another node does not decrypt here.
        attempt: the node's attempt: a hello of another attempt is refused.
        capacity: batches each feed buffers (:data:`~tfrecord_io.cluster.feed.buffer
            .DEFAULT_CAPACITY`).
    """

    def __init__(
        self, listener: socket.socket, key: str, *, name: str, attempt: int,
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        self.name = name  #: the node's name
        self.attempt = attempt  #: the node's attempt
        self._capacity = capacity
        self._lock = threading.Lock()
        self._buffers: dict[str, FeedBuffer] = {}
        self._demands: dict[str, int] = {}
        self._left: set[str] = set()  # feeds whose reader is done
        self._all_left = False  # the reader is done with every feed, present and future
        self._driver_lost: str | None = None  # why the driver's link ended early
        self._all_closed = False
        self._driver: Stream | None = None
        self._closing: str | None = None
        self._server = StreamServer(listener, key, self._serve, self._welcome,
                                    name="feed server", server=name)
        self.address = self._server.address

    @property
    def refused(self) -> int:
        """Connections refused so far (no key, another node's, another attempt's...)."""
        return self._server.refused

    # -- the node's side -----------------------------------------------------------------------

    def buffer(self, name: str) -> FeedBuffer:
        """The buffer of feed *name* (made on first use)."""
        left_now = False  # a feed first used after stop(None): the driver is told it is left
        with self._lock:
            buf = self._buffers.get(name)
            if buf is None:
                buf = FeedBuffer(name, self._capacity, self._demand)
                if self._all_closed:
                    buf.close()
                if self._driver_lost is not None:
                    buf.lose_driver(self._driver_lost)
                if self._all_left and name not in self._left:
                    self._left.add(name)
                    left_now = True
                if name in self._left or self._closing:
                    buf.stop()
                self._buffers[name] = buf
        if left_now:
            self._to_driver(ReaderLeft(feed=name))
        return buf

    def stop(self, name: str | None = None) -> None:
        """The reader is done with feed *name* (None: every feed, present and future): drop
        its data and tell the driver, so the feeding of it ends promptly."""
        with self._lock:
            names = [name] if name is not None else list(self._buffers)
            if name is None:
                self._all_left = True  # a feed first used later is left at once (buffer())
            self._left.update(names)
        for n in names:
            self.buffer(n).stop()
            self._to_driver(ReaderLeft(feed=n))

    def close(self, status: str) -> None:
        """``main_fun`` ended (*status* ``"finished"`` or ``"failed"``): stop every feed, tell
        the driver, stop serving."""
        with self._lock:
            self._closing = status
            buffers = list(self._buffers.values())
        for buf in buffers:
            buf.stop()
        self._to_driver(Closing(status=status))
        self._server.close(wait=0)

    def _demand(self, name: str, epoch: int) -> None:
        with self._lock:
            self._demands[name] = epoch
        self._to_driver(Demand(feed=name, epoch=epoch))

    def _to_driver(self, message: Message) -> None:
        wire = self._driver
        if wire is not None:
            with contextlib.suppress(ChannelError):
                wire.send(messages.encode(message))

    # -- connections ---------------------------------------------------------------------------

    def _welcome(self, header: dict[str, Any]) -> str | None:
        """None if *header* opens a connection of this node's attempt: the driver's link, or a
        feeding task's; else why not."""
        try:
            hello = messages.parse(header, messages.FEED_HELLOS)
        except ChannelError as e:
            return str(e)
        assert isinstance(hello, (DriverHello, FeederHello))
        if hello.attempt != self.attempt:
            kind = "feeding task" if isinstance(hello, FeederHello) else "driver link"
            return (f"a {hello.TYPE} hello of attempt {hello.attempt}, but {self.name} is of "
                    f"attempt {self.attempt} (a stale {kind})")
        return None

    def _serve(self, stream: Stream, header: dict[str, Any]) -> None:
        with self._lock:
            if self._closing:
                return
        try:
            hello = messages.parse(header, messages.FEED_HELLOS)
            if isinstance(hello, FeederHello):
                self._serve_feeder(stream, hello.feed, hello.epoch)
            else:
                self._serve_driver(stream)
        finally:
            with self._lock:
                if self._driver is stream:
                    self._driver = None

    def _serve_driver(self, wire: Stream) -> None:
        with self._lock:
            self._driver = wire
            demands = dict(self._demands)
            left = set(self._left)
            closing = self._closing
        for name, epoch in sorted(demands.items()):
            wire.send(messages.encode(Demand(feed=name, epoch=epoch)))
        for name in sorted(left):
            wire.send(messages.encode(ReaderLeft(feed=name)))
        if closing:
            wire.send(messages.encode(Closing(status=closing)))
        try:
            self._follow_driver(wire)
        except ChannelError as e:
            self._lose_driver(wire, str(e))
            raise

    def _follow_driver(self, wire: Stream) -> None:
        """The driver's markers, until its link ends (ChannelError)."""
        while True:
            message, _ = _receive(wire, messages.FROM_DRIVER_LINK, max_payload=0)
            if isinstance(message, EndEpoch):
                self.buffer(message.feed).end_epoch(message.epoch, message.sent)
            elif isinstance(message, FailEpoch):
                self.buffer(message.feed).fail_epoch(message.epoch, message.reason)
            elif isinstance(message, WithdrawEpoch):
                done = self.buffer(message.feed).withdraw(message.epoch, message.job)
                wire.send(messages.encode(Withdrawn(feed=message.feed, epoch=message.epoch,
                                                    job=message.job, withdrawn=done)))
            else:  # EndAll
                with self._lock:
                    self._all_closed = True
                    buffers = list(self._buffers.values())
                for buf in buffers:
                    buf.close()

    def _lose_driver(self, wire: Stream, reason: str) -> None:
        """The driver's link *wire* ended: unless the feeds ended first (``end_all``) or
        ``main_fun`` did, their readers can wait for no marker any more (the link is not made
        again): each raises once it has read what is buffered."""
        with self._lock:
            if self._driver is not wire or self._all_closed or self._closing:
                return
            self._driver_lost = reason
            buffers = list(self._buffers.values())
        log.warning("feed server %s: the driver's link ended (%s): every feed read now fails",
                    self.name, reason)
        for buf in buffers:
            buf.lose_driver(reason)

    def _serve_feeder(self, wire: Stream, name: str, epoch: int) -> None:
        buf = self.buffer(name)
        told = buf.stopped
        wire.send(messages.encode(Stopped() if told else Ready()))
        while True:
            message, payload = _receive(wire, messages.FROM_FEEDER)
            if isinstance(message, Batch):
                key = (message.job, message.partition, message.seq)
                kept = not told and buf.put(epoch, key, message.records, payload)
                if not kept and not told:
                    told = True
                    wire.send(messages.encode(Stopped()))
            else:  # End
                wire.send(messages.encode(Ack(stopped=told or buf.stopped)))
                return


def _receive(wire: Stream, expected: tuple[type[Message], ...],
             max_payload: int = MAX_PAYLOAD) -> tuple[Message, memoryview]:
    """The next message of *wire*, one of the *expected* types; a message the protocol does
    not allow here is logged and ends the connection (ChannelError)."""
    header, payload = wire.receive(max_payload)
    try:
        message = messages.parse(header, expected)
        if len(payload) and not message.PAYLOAD:
            raise ChannelError(f"a {message.TYPE!r} message with a payload")
    except ChannelError as e:
        log.warning("feed server: closing the connection with %s: %s", wire.peer, e)
        wire.close()
        raise
    return message, payload
