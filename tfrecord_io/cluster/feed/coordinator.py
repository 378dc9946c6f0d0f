"""The driver's side of feeding: :class:`FeedCoordinator` runs ``Cluster.train``.

It owns one thread that drives the feeding schedule (:mod:`~tfrecord_io.cluster.feed
.schedule`, where every rule of which epoch is fed when lives) with the attempt's links to the
nodes (:mod:`~tfrecord_io.cluster.feed.links`) and Spark (:mod:`~tfrecord_io.cluster.feed
.jobs`): it steps the schedule whenever a node reports, a job ends, a call starts or stops,
and at least every :data:`_TICK` seconds (to notice the attempt's failure). The schedule is
only ever touched from that thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from tfrecord_io.cluster.application import SparkApplication
from tfrecord_io.cluster.feed.connect import ConnectRunner
from tfrecord_io.cluster.feed.jobs import SparkRunner
from tfrecord_io.cluster.feed.links import FeedLinks
from tfrecord_io.cluster.feed.reports import Feeding
from tfrecord_io.cluster.feed.schedule import Call, FeedSchedule
from tfrecord_io.errors import ClusterError

__all__ = ["FeedCoordinator", "check_data"]

log = logging.getLogger("tfrecord_io.cluster")

#: Longest time between two steps of the schedule, in seconds.
_TICK = 0.1


#: The feeding schedule's Spark (:class:`~tfrecord_io.cluster.feed.schedule.Runner`), by the
#: application's kind.
_RUNNERS: dict[str, type[SparkRunner] | type[ConnectRunner]] = {
    "classic": SparkRunner, "connect": ConnectRunner}


def check_data(application: SparkApplication, data: Any) -> None:
    """Raise unless *data* is what ``Cluster.train`` feeds in *application*: a DataFrame of
    its kind of session, or an RDD of ``bytes`` in a classic one.

    Raises:
        TypeError: anything else.
        SparkConnectError: a streaming DataFrame over Spark Connect.
    """
    _RUNNERS[application.kind].check(data)


class FeedCoordinator:
    """Feeds the readers of one attempt (see the module docs).

    Args:
        application: the Spark application (classic: the feeding jobs are submitted through
            its SparkContext, :mod:`~tfrecord_io.cluster.feed.jobs`; Spark Connect: through
            the DataFrame API, :mod:`~tfrecord_io.cluster.feed.connect`).
        key: the feed's key (:func:`~tfrecord_io.cluster.channel.feed_key`).
        nodes: the fed nodes' names, in worker order.
        addresses: each fed node's feed server, ``host:port``.
        equal: the equal-share rule (``mode="sync"``).
        group: prefix of the feeding jobs' Spark job groups.
        failure: returns the attempt's failure (or None), as :meth:`Attempt.failure` does.
        reserved: task slots the cluster's nodes hold (the rest may run feeding tasks).
        attempt: the number of the attempt whose nodes it feeds.
    """

    def __init__(
        self,
        application: SparkApplication,
        key: str,
        nodes: list[str],
        addresses: dict[str, str],
        equal: bool,
        group: str,
        failure: Callable[[], ClusterError | None],
        reserved: int,
        attempt: int,
    ) -> None:
        self.attempt = attempt  #: the attempt whose nodes it feeds
        self.failure = failure  #: returns that attempt's failure so far, or None
        self._application = application
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._inbox: list[Call] = []
        self._pending: set[Feeding] = set()
        self._closed = False
        self._links = FeedLinks(nodes, addresses, key, attempt=attempt,
                                on_change=self._wake.set)
        fed = [addresses[n] for n in nodes]
        self._runner = _RUNNERS[application.kind](application, key, fed, equal, group,
                                                  reserved, self._wake.set, names=nodes,
                                                  attempt=attempt)
        self._schedule = FeedSchedule(self._links, self._runner, equal, failure)
        self._thread = threading.Thread(target=self._loop, name=f"feed-{group}", daemon=True)
        self._thread.start()

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
            self._pending.add(feeding)
        feeding.add_done_callback(self._forget)
        self._wake.set()
        return feeding

    def _forget(self, feeding: Feeding) -> None:
        with self._lock:
            self._pending.discard(feeding)

    def _loop(self) -> None:
        schedule = self._schedule
        while True:
            self._wake.wait(_TICK)
            self._wake.clear()
            with self._lock:
                calls, self._inbox = self._inbox, []
                closed = self._closed
            for call in calls:
                schedule.add(call)
            if closed:
                schedule.fail(ClusterError("the cluster was shut down while feeding"))
                return
            try:
                schedule.step()
            except Exception as e:
                log.exception("the feeding schedule failed")
                schedule.fail(ClusterError(f"feeding failed: {e}"))

    # -- the end -------------------------------------------------------------------------------

    def broken(self) -> list[str]:
        """The fed nodes that read no more because their link broke or ``main_fun`` failed
        (not those whose ``main_fun`` finished)."""
        return [n for n in self._links.nodes if self._links.gone(n) not in (None, "finished")]

    def pending(self) -> list[Feeding]:
        """``train`` calls still feeding."""
        with self._lock:
            return list(self._pending)

    def end_all(self, after_pending: threading.Event | None = None) -> None:
        """No more epochs of any feed (``Cluster.wait``): first let the feedings in progress
        finish (unless *after_pending* is set: the cluster is over), then end every feed."""
        while after_pending is not None and self.pending() and not after_pending.is_set():
            after_pending.wait(_TICK)
        self._links.end_all()

    def close(self) -> None:
        """Stop every feeding in progress (they raise ClusterError) and close the links."""
        with self._lock:
            self._closed = True
        self._wake.set()
        self._thread.join(30.0)
        self._links.close()
