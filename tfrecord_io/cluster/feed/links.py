"""The driver's links to the feed servers of one attempt's nodes, and what they report.

:class:`FeedLinks` connects to every fed node's feed server (encrypted and authenticated: the
cluster's protocol, :mod:`tfrecord_io.cluster.protocol`, ``docs/protocol.md``) and keeps, per
node, the epochs its reader asked for (``demand``), the feeds its reader left, and whether
``main_fun`` ended there (``closing``: ``finished`` or ``failed``) or the link broke. It sends
the driver's markers: the end of an epoch (with the records sent, for the node's exactly-once
check), a failed epoch, the withdrawal of an epoch fed ahead (and keeps the nodes' answers),
the end of every feed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from tfrecord_io.cluster import messages
from tfrecord_io.cluster.messages import (
    Closing,
    Demand,
    DriverHello,
    EndAll,
    Message,
    ReaderLeft,
    Withdrawn,
)
from tfrecord_io.cluster.protocol import Stream, connect
from tfrecord_io.errors import ChannelError

__all__ = ["FeedLinks"]

log = logging.getLogger("tfrecord_io.cluster")


class FeedLinks:
    """Links to the feed servers of *nodes* (names in worker order) at *addresses*, of attempt
    *attempt*, under the feed key *key* (each link bound to its node's name: a server that is
    not that node's does not decrypt it); *on_change* is called after each report of a node."""

    def __init__(self, nodes: list[str], addresses: dict[str, str], key: str, *, attempt: int,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.nodes = list(nodes)
        self._on_change = on_change
        self.cond = threading.Condition()
        self._demands: dict[str, dict[str, int]] = {n: {} for n in nodes}
        self._left: dict[str, set[str]] = {n: set() for n in nodes}
        self._closing: dict[str, str] = {}
        self._withdrawn: dict[str, dict[tuple[str, int, int], bool]] = {n: {} for n in nodes}
        self._wires: dict[str, Stream] = {}
        self._closed = False
        for node in nodes:
            try:
                wire = connect(addresses[node], key,
                               messages.encode(DriverHello(attempt=attempt)), server=node)
            except (ChannelError, OSError) as e:
                self._closing[node] = f"unreachable ({e})"
                continue
            self._wires[node] = wire
            threading.Thread(target=self._read, args=(node, wire), name=f"feed-link-{node}",
                             daemon=True).start()

    def _read(self, node: str, wire: Stream) -> None:
        reason = "lost"
        try:
            while True:
                message = messages.parse(wire.receive(max_payload=0)[0],
                                         messages.FROM_FEED_SERVER)
                with self.cond:
                    if isinstance(message, Demand):
                        feeds = self._demands[node]
                        feeds[message.feed] = max(feeds.get(message.feed, 0), message.epoch)
                    elif isinstance(message, ReaderLeft):
                        self._left[node].add(message.feed)
                        log.info("%s left feed %r (its reader is done with it)", node, message.feed)
                    elif isinstance(message, Withdrawn):
                        self._withdrawn[node][message.feed, message.epoch, message.job] = \
                            message.withdrawn
                    elif isinstance(message, Closing):
                        reason = message.status
                        self._closing[node] = reason
                    self.cond.notify_all()
                self._on_change()
        except ChannelError as e:
            if "closed the connection" not in str(e) and reason == "lost":
                log.warning("the feed link to %s ended: %s", node, e)
        with self.cond:
            self._closing.setdefault(node, reason)
            self.cond.notify_all()
        self._on_change()

    # -- what the nodes reported ---------------------------------------------------------------

    def gone(self, node: str) -> str | None:
        """Why *node* reads no more (``finished``, ``failed``, ``lost``...), or None."""
        with self.cond:
            return self._closing.get(node)

    def asked(self, node: str, feed: str) -> int:
        """The last epoch of *feed* that *node*'s reader asked for (0: none)."""
        with self.cond:
            return self._demands[node].get(feed, 0)

    def readers(self, feed: str) -> list[str]:
        """The nodes that may still read *feed*."""
        with self.cond:
            return [n for n in self.nodes
                    if n not in self._closing and feed not in self._left[n]]

    def awaited_elsewhere(self, feed: str, done: dict[str, int]) -> bool:
        """Whether a node still up waits for an epoch of a feed other than *feed* that has not
        ended (*done*: per feed, the last epoch whose end was sent)."""
        with self.cond:
            return any(asked > done.get(other, 0)
                       for n in self.nodes if n not in self._closing
                       for other, asked in self._demands[n].items()
                       if other != feed and other not in self._left[n])

    def awaited(self, node: str) -> dict[str, int]:
        """Per feed that *node*'s reader has not left, the last epoch it asked for."""
        with self.cond:
            return {feed: epoch for feed, epoch in self._demands[node].items()
                    if feed not in self._left[node]}

    def withdrawn(self, node: str, feed: str, epoch: int, job: int) -> bool | None:
        """*node*'s answer to the withdrawal of *epoch* of *feed* fed by *job* (True:
        withdrawn; False: its reader had begun it), or None while there is none."""
        with self.cond:
            return self._withdrawn[node].get((feed, epoch, job))

    # -- markers -------------------------------------------------------------------------------

    def send(self, node: str, message: Message) -> None:
        """Send *message* to *node*'s feed server, if the link is up."""
        wire = self._wires.get(node)
        if wire is not None:
            with contextlib.suppress(ChannelError):
                wire.send(messages.encode(message))

    def end_all(self) -> None:
        """Every feed of every node has ended: readers' further epochs are empty."""
        for node in self.nodes:
            self.send(node, EndAll())

    def close(self) -> None:
        """Close every link. Idempotent."""
        with self.cond:
            if self._closed:
                return
            self._closed = True
        for wire in self._wires.values():
            wire.close()
