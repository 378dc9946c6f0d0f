"""The ``Cluster.train`` calls of a cluster that may restart (``max_attempts`` > 1): each call
is fed again, from its first epoch, to every new attempt's nodes.

A feeding belongs to one attempt (one :class:`~tfrecord_io.cluster.feed.coordinator.
FeedCoordinator`); when that attempt fails, its feedings fail with it. :class:`Replays` keeps,
per call, the :class:`~tfrecord_io.cluster.feed.reports.Feeding` the caller holds (the *outer*
future) apart from the feeding of the current attempt (the *inner* one), so that:

- an inner feeding that succeeds completes the outer one (the report of the attempt that fed),
  unless a node of that attempt broke meanwhile: its share was dropped, and the attempt's
  failure is on its way, so the call waits for it (at most :data:`~tfrecord_io.cluster.feed.
  schedule.FAILURE_GRACE` seconds, the schedule's own grace for a broken link);
- an inner feeding that fails while its attempt has not failed (a feeding error, a shutdown, a
  stop) fails the outer one at once;
- an inner feeding that fails because its attempt failed leaves the outer one pending: the
  driver then calls :meth:`Replays.restart` with the new attempt's coordinator (every call not
  stopped is fed again, also those already fed to the failed attempt, since the new nodes
  start over) or :meth:`Replays.fail` when no attempt is left.

A streaming DataFrame cannot be fed twice (its query's progress is gone with the attempt): on a
restart its call fails with :class:`~tfrecord_io.errors.ClusterError`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfrecord_io.cluster.feed.reports import Feeding
from tfrecord_io.cluster.feed.schedule import FAILURE_GRACE
from tfrecord_io.errors import ClusterError

__all__ = ["Replays"]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Call:
    args: tuple[Any, ...]  # FeedCoordinator.train's: data, num_epochs, feed, record_type, ...
    outer: Feeding
    streaming: bool
    inner: Feeding | None = None
    stopped: bool = False


class Replays:
    """Every ``train()`` call of one cluster, fed to each of its attempts (see the module docs).
    Thread-safe: calls come from the caller's thread, restarts from the driver's supervisor,
    completions from the coordinators' threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._order = threading.Lock()
        self._calls: list[_Call] = []

    def start(
        self,
        target: Callable[[], tuple[Any, Callable[[], ClusterError | None]]],
        data: Any,
        num_epochs: int,
        feed: str,
        record_type: str,
        trigger: dict[str, Any] | None,
        cache: bool,
    ) -> Feeding:
        """Feed a new call to the current attempt and keep it for the attempts after; returns
        the caller's :class:`Feeding`. *target* returns the current attempt's coordinator and
        a function returning that attempt's failure so far (or None)."""
        outer = Feeding(on_stop=lambda: self._stop(call))
        call = _Call((data, num_epochs, feed, record_type, trigger, cache), outer,
                     streaming=bool(getattr(data, "isStreaming", False)))
        with self._order:  # not between a restart's coordinator and its list of calls
            self._feed(call, *target())
            with self._lock:
                self._calls.append(call)
        return outer

    def restart(self, target: Callable[[], tuple[Any, Callable[[], ClusterError | None]]]) -> None:
        """Feed every call not stopped again, from its first epoch, to the new attempt that
        *target* returns (as for :meth:`start`); a stream's call fails instead."""
        with self._order:
            coordinator, failure = target()
            with self._lock:
                calls = [c for c in self._calls
                         if not c.stopped and not (c.streaming and c.outer.done())]
            for call in calls:
                if call.streaming:
                    self._settle(call, ClusterError(
                        f"feed {call.args[2]!r}: the attempt it fed failed and a stream cannot "
                        "be fed again to the next attempt (start its query again with a new "
                        "train() call)"
                    ))
                    continue
                log.info("feeding %r again (%d epochs) to the new attempt", call.args[2],
                         call.args[1])
                try:
                    self._feed(call, coordinator, failure)
                except ClusterError as e:
                    self._settle(call, e)

    def fail(self, error: BaseException) -> None:
        """No attempt is left: every call still pending fails with *error*."""
        with self._lock:
            calls = list(self._calls)
        for call in calls:
            self._settle(call, error)

    def _feed(self, call: _Call, coordinator: Any,
              failure: Callable[[], ClusterError | None]) -> None:
        inner = coordinator.train(*call.args)
        with self._lock:
            call.inner = inner
            stopped = call.stopped
        if stopped:
            inner.stop()
        inner.add_done_callback(lambda done: self._inner_done(call, done, coordinator, failure))

    def _inner_done(self, call: _Call, inner: Feeding, coordinator: Any,
                    failure: Callable[[], ClusterError | None]) -> None:
        with self._lock:
            if inner is not call.inner:
                return  # an earlier attempt's feeding, superseded
        error = inner.exception()
        if error is not None:
            if call.stopped or failure() is None:
                self._settle(call, error)
            return  # else the attempt failed: restart() or fail() settles the call
        if failure() is None and coordinator.broken():
            threading.Thread(target=self._settle_unless_failed, args=(call, inner, failure),
                             name="feed-replay-grace", daemon=True).start()
        elif failure() is None:
            self._settle(call, None, inner.result())

    def _settle_unless_failed(self, call: _Call, inner: Feeding,
                              failure: Callable[[], ClusterError | None]) -> None:
        """A node broke while *inner* fed: complete the call with its report only if the
        attempt has not failed within the grace (else the next attempt feeds it again)."""
        deadline = time.monotonic() + FAILURE_GRACE
        while failure() is None and time.monotonic() < deadline and not call.outer.done():
            time.sleep(0.1)
        if failure() is None:
            self._settle(call, None, inner.result())

    def _settle(self, call: _Call, error: BaseException | None, report: Any = None) -> None:
        with self._lock:
            if call.outer.done():
                return
            if error is None:
                call.outer.set_result(report)
            else:
                call.outer.set_exception(error)

    def _stop(self, call: _Call) -> None:
        with self._lock:
            call.stopped = True
            inner = call.inner
        if inner is not None:
            inner.stop()
