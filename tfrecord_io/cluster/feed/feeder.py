"""The feeding task: what runs on an executor for each partition of a feeding job.

:class:`Feeder` is the function given to ``mapPartitions`` over the batch RDD (see
:mod:`tfrecord_io.cluster.feed.batches`). It runs on any executor: it opens one authenticated
connection per worker it has batches for (:mod:`tfrecord_io.cluster.feed.wire`), streams each
batch whole (TCP backpressure holds it back while the worker's buffer is full), then asks each
worker to acknowledge that everything it sent is buffered there. A worker that answers
``stopped`` (its reader is done, or ``main_fun`` ended), or that cannot be reached, gets
nothing more: the rest of its batches are dropped at once, and when no worker reads any more
the task stops pulling its input (the rest is never even encoded), so it ends promptly. The
task returns one JSON line: what it sent to whom, and what it dropped.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from typing import Any, Iterator

from tfrecord_io.cluster.channel import ChannelError
from tfrecord_io.cluster.feed.wire import FeedWire, connect

__all__ = ["BATCH_HEADER", "MAGIC", "Feeder"]

#: The header of a batch: magic, worker, job, partition, sequence number, records (big-endian).
BATCH_HEADER = struct.Struct("!6i")
#: ``"TFFB"``: the first int of every batch.
MAGIC = 0x54464642


class _Link:
    """The connection to one worker, or why there is none."""

    def __init__(self, wire: FeedWire | None, state: str) -> None:
        self.wire = wire
        self.state = state  # "ready", "stopped", "unreachable"
        self.records = 0
        self.batches = 0
        self.dropped = 0

    def poll(self) -> None:
        """Take in a ``stopped`` the server may have sent meanwhile (without blocking)."""
        if self.wire is not None and self.state == "ready" and self.wire.readable():
            try:
                message, _ = self.wire.receive(max_payload=0)
            except ChannelError:
                self.state = "unreachable"
                return
            if message["type"] == "stopped":
                self.state = "stopped"


class Feeder:
    """The ``mapPartitions`` function of one feeding job (a module-level class, so Spark
    pickles it by reference plus these four fields).

    Args:
        secret: the cluster's secret.
        addresses: ``host:port`` of each worker's feed server, by worker index.
        feed: the feed's name.
        epoch: the epoch being fed.
    """

    def __init__(self, secret: str, addresses: list[str], feed: str, epoch: int) -> None:
        self.secret = secret
        self.addresses = list(addresses)
        self.feed = feed
        self.epoch = epoch

    def _open(self, worker: int) -> _Link:
        hello = {"type": "feeder", "feed": self.feed, "epoch": self.epoch}
        try:
            wire = connect(self.addresses[worker], self.secret, hello)
            reply, _ = wire.receive(max_payload=0)
        except (ChannelError, OSError):
            return _Link(None, "unreachable")
        if reply["type"] != "ready":
            wire.close()
            return _Link(None, "stopped")
        return _Link(wire, "ready")

    def __call__(self, batches: Iterator[bytes]) -> Iterator[str]:
        started = time.time()
        links: dict[int, _Link] = {}
        abandoned = False
        for batch in batches:
            magic, worker, job, partition, seq, records = BATCH_HEADER.unpack_from(batch)
            if magic != MAGIC or not 0 <= worker < len(self.addresses):
                raise ValueError(f"not a feed batch (magic {magic:#x}, worker {worker})")
            if not links:  # every worker at once: know early when none reads any more
                links = {w: self._open(w) for w in range(len(self.addresses))}
            link = links[worker]
            link.poll()
            if link.state != "ready":
                link.dropped += records
                if not any(other.state == "ready" for other in links.values()):
                    abandoned = True  # nobody reads: leave the rest of the data unmade
                    break
                continue
            header = {"type": "batch", "job": job, "partition": partition, "seq": seq,
                      "records": records}
            try:
                link.wire.send(header, memoryview(batch)[BATCH_HEADER.size:])  # type: ignore[union-attr]
            except ChannelError:
                link.state = "unreachable"
                link.dropped += records
                continue
            link.records += records
            link.batches += 1
        sent = time.time()
        report: dict[str, Any] = {"pid": os.getpid(), "host": socket.gethostname(),
                                  "started": started, "sent": sent, "abandoned": abandoned,
                                  "workers": {}}
        for worker, link in sorted(links.items()):
            if link.wire is not None:
                _finish(link)
            report["workers"][str(worker)] = {
                "records": link.records, "batches": link.batches, "dropped": link.dropped,
                "state": link.state,
            }
        report["ended"] = time.time()
        yield json.dumps(report)


def _finish(link: _Link) -> None:
    """Send ``end`` and wait for the ``ack`` (every batch buffered on the worker)."""
    wire = link.wire
    assert wire is not None
    try:
        wire.send({"type": "end"})
        while True:
            message, _ = wire.receive(max_payload=0)
            if message["type"] == "stopped":
                link.state = "stopped"
            elif message["type"] == "ack":
                if message.get("stopped"):
                    link.state = "stopped"
                break
    except ChannelError:
        link.state = "unreachable"
    finally:
        wire.close()
