"""One feeding job: the jar's ``org.tfrecordio.spark.feed.FeedSender`` sending one epoch of a
plan's batches (:mod:`~tfrecord_io.cluster.feed.batches`) from the executors' JVMs, run as a
Spark job from a driver thread under a job group of its own, so that it can be cancelled.

The coordinator (:mod:`~tfrecord_io.cluster.feed.coordinator`) decides when a job starts and
watches the cluster while it runs; a :class:`FeedJob` only runs, reports and cancels.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tfrecord_io.cluster.feed.batches import Plan

__all__ = ["FEED_SENDER_CLASS", "FeedJob"]

#: The jar's feeding task (it sends the batches from the executors' JVMs).
FEED_SENDER_CLASS = "org.tfrecordio.spark.feed.FeedSender"
#: How long a cancelled job's thread may take to end.
_CANCEL_JOIN = 30.0


class FeedJob:
    """Epoch *epoch* of feed *feed*: *plan*'s batches sent to the feed servers at *addresses*
    (in worker order), as Spark job group *group*. Call :meth:`start` once.

    Attributes:
        group: the Spark job group.
        epoch: the epoch it feeds.
    """

    def __init__(self, sc: Any, plan: Plan, secret: str, addresses: list[str], feed: str,
                 epoch: int, group: str) -> None:
        self._sc = sc
        self._plan = plan
        self._secret = secret
        self._addresses = addresses
        self.feed = feed
        self.epoch = epoch
        self.group = group
        self._lines: list[str] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=group, daemon=True)

    def start(self) -> FeedJob:
        """Submit the job (from a thread of its own); returns at once."""
        self._thread.start()
        return self

    def _run(self) -> None:
        from tfrecord_io.spark.jvm import java_class  # noqa: PLC0415 - Spark on the driver

        try:
            self._sc.setJobGroup(self.group, f"tfrecord-io feed {self.feed!r}, epoch "
                                             f"{self.epoch}", True)
            sender = java_class(self._sc, FEED_SENDER_CLASS)
            tasks = sender.sendTo(self._plan.jrdd, self._secret, self._addresses, self.feed,
                                  self.epoch)
            self._lines = [str(line) for line in tasks.collect()]
        except BaseException as e:  # noqa: BLE001 - reported by tasks()
            self._error = e

    def wait(self, timeout: float) -> bool:
        """Wait up to *timeout* seconds for the job to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def submitted(self) -> bool:
        """Whether Spark has the job (it is queued, running or done): a job submitted after
        this one is scheduled after it (Spark's FIFO order within a pool)."""
        if not self._thread.is_alive():
            return True
        return bool(self._sc.statusTracker().getJobIdsForGroup(self.group))

    def cancel(self, wait: bool = True) -> None:
        """Cancel the job (its tasks are interrupted, which closes their sockets); with *wait*,
        wait for its thread to end."""
        self._sc.cancelJobGroup(self.group)
        if wait:
            self._thread.join(_CANCEL_JOIN)

    @property
    def error(self) -> BaseException | None:
        """Why the ended job failed (or was cancelled), None if it succeeded."""
        return self._error

    def tasks(self) -> list[dict[str, Any]]:
        """The ended job's task reports (the JSON lines ``FeedSender`` returns: each task's
        executor and, per worker, what it sent). Call after :meth:`wait` said it ended and
        :attr:`error` is None."""
        assert self._lines is not None, "the job has not succeeded"
        return [json.loads(line) for line in self._lines]
