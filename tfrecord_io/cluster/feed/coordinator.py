"""The driver's side of feeding: :class:`FeedCoordinator` runs ``Cluster.train``.

One per cluster. It owns one thread that drives the feeding schedule (:mod:`~tfrecord_io
.cluster.feed.schedule`, where every rule of which epoch is fed when lives, restarts
included) with the current attempt's links to the nodes (:mod:`~tfrecord_io.cluster.feed
.links`) and Spark (:mod:`~tfrecord_io.cluster.feed.source`): it steps the schedule whenever a
node reports, a job ends, a call starts or stops, and at least every :data:`_TICK` seconds
(to notice the attempt's failure). The schedule is only ever touched from that thread: a new
attempt (:meth:`FeedCoordinator.restart`) and the end of the last one
(:meth:`FeedCoordinator.fail`) reach it as inputs, like a new call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfrecord_io.cluster.application import SparkApplication
from tfrecord_io.cluster.feed.links import FeedLinks
from tfrecord_io.cluster.feed.reports import Feeding
from tfrecord_io.cluster.feed.schedule import Call, FeedSchedule
from tfrecord_io.cluster.feed.source import FeedRunner, check_data
from tfrecord_io.errors import ClusterError

__all__ = ["FedAttempt", "FeedCoordinator"]

log = logging.getLogger("tfrecord_io.cluster")

#: Longest time between two steps of the schedule, in seconds.
_TICK = 0.1


@dataclass(frozen=True)
class FedAttempt:
    """What feeding needs of one attempt of the cluster.

    Attributes:
        number: the attempt's number (its nodes refuse links of another).
        nodes: the fed nodes' names, in worker order.
        addresses: each fed node's feed server, ``host:port``.
        failure: returns why the attempt ends early so far, its failure or a resize, or None
            (``Attempt.interruption``).
        reserved: task slots the attempt's nodes hold (the rest may run feeding tasks).
        restartable: whether another attempt may follow it (its failure then suspends the
            feeding until :meth:`FeedCoordinator.restart` or :meth:`FeedCoordinator.fail`).
    """

    number: int
    nodes: list[str]
    addresses: dict[str, str]
    failure: Callable[[], ClusterError | None]
    reserved: int
    restartable: bool = False


class FeedCoordinator:
    """Feeds the readers of a cluster, attempt after attempt (see the module docs).

    Args:
        application: the Spark application, classic or Spark Connect (the feeding jobs are
            reads of the jar's feed source, :mod:`~tfrecord_io.cluster.feed.source`).
        key: the feed's key (:func:`~tfrecord_io.cluster.channel.feed_key`).
        equal: the equal-share rule (``mode="sync"``).
        group: prefix of the feeding jobs' tags and views.
        attempt: the first attempt fed.
    """

    def __init__(self, application: SparkApplication, key: str, equal: bool, group: str,
                 attempt: FedAttempt) -> None:
        self._application = application
        self._key = key
        self._equal = equal
        self._group = group
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._inbox: list[Call] = []
        self._restarts: list[tuple[FedAttempt, FeedLinks, Any]] = []
        self._failed: ClusterError | None = None
        self._live = 0  # calls in the inbox or the schedule, as of the last step
        self._closed = False
        self._links, runner = self._connect(attempt)
        self._schedule = FeedSchedule(self._links, runner, equal, attempt.failure,
                                      restartable=attempt.restartable)
        self._thread = threading.Thread(target=self._loop, name=f"feed-{group}", daemon=True)
        self._thread.start()

    def _connect(self, attempt: FedAttempt) -> tuple[FeedLinks, Any]:
        """The links to *attempt*'s fed nodes and its Spark runner."""
        links = FeedLinks(attempt.nodes, attempt.addresses, self._key, attempt=attempt.number,
                          on_change=self._wake.set)
        fed = [attempt.addresses[n] for n in attempt.nodes]
        runner = FeedRunner(
            self._application, self._key, fed, self._equal, f"{self._group}-{attempt.number}",
            attempt.reserved, self._wake.set, names=attempt.nodes, attempt=attempt.number)
        return links, runner

    def train(self, data: Any, num_epochs: int, feed: str, record_type: str,
              trigger: dict[str, Any] | None, cache: bool = True) -> Feeding:
        """Start feeding *data*; see ``Cluster.train``."""
        check_data(self._application, data)
        streaming = bool(getattr(data, "isStreaming", False))
        if streaming and num_epochs != 1:
            raise ValueError("a streaming DataFrame is fed as one open epoch: num_epochs must be 1")
        feeding = Feeding(on_stop=self._wake.set)
        call = Call(feed, data, num_epochs, feeding, record_type=record_type, cache=cache,
                    streaming=streaming, trigger=trigger)
        with self._lock:
            if self._closed:
                raise ClusterError("the cluster was shut down: nothing to feed")
            self._inbox.append(call)
            self._live += 1
        self._wake.set()
        return feeding

    def restart(self, attempt: FedAttempt) -> None:
        """A new attempt runs: every call not stopped is fed to its nodes from its first
        epoch (the schedule's restart)."""
        links, runner = self._connect(attempt)
        with self._lock:
            if self._closed:
                links.close()
                return
            self._restarts.append((attempt, links, runner))
            self._links = links
        self._wake.set()

    def fail(self, error: ClusterError) -> None:
        """No attempt follows: every call still pending fails with *error*."""
        with self._lock:
            if self._failed is None:
                self._failed = error
        self._wake.set()

    def _loop(self) -> None:
        schedule = self._schedule
        with self._lock:
            fed = self._links  # the links the schedule uses
        while True:
            self._wake.wait(_TICK)
            self._wake.clear()
            with self._lock:
                calls, self._inbox = self._inbox, []
                restarts, self._restarts = self._restarts, []
                closed, failed = self._closed, self._failed
            for attempt, links, runner in restarts:
                schedule.restart(links, runner, attempt.failure,
                                 restartable=attempt.restartable)
                fed.close()  # after the restart: the failed attempt's epochs were failed on it
                fed = links
            for call in calls:
                schedule.add(call)
            if closed or failed is not None:
                schedule.fail(failed or ClusterError("the cluster was shut down while feeding"))
            else:
                try:
                    schedule.step()
                except Exception as e:
                    log.exception("the feeding schedule failed")
                    schedule.fail(ClusterError(f"feeding failed: {e}"))
            with self._lock:
                self._live = len(schedule.calls()) + len(self._inbox)
            if closed:
                return

    # -- the end -------------------------------------------------------------------------------

    def pending(self) -> bool:
        """Whether ``train`` calls are still feeding (or waiting for the next attempt)."""
        with self._lock:
            return self._live > 0

    def end_all(self, after_pending: threading.Event | None = None,
                deadline: float | None = None) -> bool:
        """No more epochs of any feed (``Cluster.wait``): first let the feedings in progress
        finish (unless *after_pending* is set: the cluster is over), then end every feed of
        the current attempt. False, with the feeds not ended yet, if the feedings in progress
        had not finished by *deadline* (``time.monotonic()``)."""
        while after_pending is not None and self.pending() and not after_pending.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            after_pending.wait(_TICK)
        with self._lock:
            links = self._links
        links.end_all()
        return True

    def close(self) -> None:
        """Stop every feeding in progress (they raise ClusterError) and close the links."""
        with self._lock:
            self._closed = True
        self._wake.set()
        self._thread.join(30.0)
        with self._lock:
            links = self._links
        links.close()
