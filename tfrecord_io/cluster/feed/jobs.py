"""Spark, as the feeding schedule uses it (:class:`~tfrecord_io.cluster.feed.schedule.Runner`):
:class:`SparkRunner` plans a call's batches, submits an epoch's feeding job, runs a stream.

A feeding job is the jar's ``org.tfrecordio.spark.feed.FeedSender`` sending one epoch of a
plan's batches (:mod:`~tfrecord_io.cluster.feed.plan`) from the executors' JVMs. It is
submitted with Spark's asynchronous ``collectAsync`` from the schedule's own thread, so it is
in Spark's queue (FIFO within a pool) when :meth:`SparkRunner.feed` returns, and cancelled
through its own future (``FutureAction.cancel``: that job, by its id, whatever its state),
never by a job group that a job submitted a moment later could escape. Its tasks are
interrupted on cancel, which closes their sockets and frees their slots.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from tfrecord_io.cluster.application import SparkApplication
from tfrecord_io.cluster.feed.outcome import Outcome, ThreadJob
from tfrecord_io.cluster.feed.plan import Plan, plan_batches
from tfrecord_io.cluster.feed.reports import EpochReport
from tfrecord_io.cluster.feed.schedule import Call
from tfrecord_io.cluster.slots import feeding_tasks
from tfrecord_io.errors import ClusterError

__all__ = ["FeedJob", "SparkRunner"]

log = logging.getLogger("tfrecord_io.cluster")


class FeedJob(Outcome):
    """Epoch *epoch* of feed *feed*: *plan*'s batches sent to the feed servers at *addresses*
    (in worker order), submitted at construction (see the module docs)."""

    def __init__(self, sc: Any, plan: Plan, secret: str, addresses: list[str], feed: str,
                 epoch: int, group: str, wake: Callable[[], None], *, names: list[str],
                 attempt: int) -> None:
        super().__init__(wake)
        from tfrecord_io.spark.jvm import FEED_SENDER_CLASS, java_class  # noqa: PLC0415 - Spark on the driver

        self.feed = feed
        self.epoch = epoch
        self._cancelled = False
        self._future: Any = None
        try:
            sc.setJobGroup(group, f"tfrecord-io feed {feed!r}, epoch {epoch}", True)
            sender = java_class(sc, FEED_SENDER_CLASS)
            tasks = sender.sendTo(plan.jrdd, secret, addresses, names, attempt, feed, epoch)
            self._future = tasks.collectAsync()  # in Spark's queue from here on
        except Exception as e:  # noqa: BLE001 - the job's outcome, read by the schedule
            self.end(error=e)
            return
        threading.Thread(target=self._wait, name=f"{group}-wait", daemon=True).start()

    def _wait(self) -> None:
        try:
            lines = self._future.get()
        except BaseException as e:  # noqa: BLE001 - the job's outcome, read by the schedule
            self.end(error=e if not self._cancelled else ClusterError("cancelled"))
            return
        self.end([json.loads(str(line)) for line in lines])

    def cancel(self) -> None:
        """Cancel the job (queued or running: its tasks are interrupted); returns at once."""
        if not self.done():
            self._cancelled = True
            self._future.cancel(True)


class _StreamJob(Outcome):
    """A streaming DataFrame fed as one epoch: a feeding job per micro-batch."""

    def __init__(self, runner: SparkRunner, call: Call, epoch: int, result: EpochReport,
                 wake: Callable[[], None]) -> None:
        super().__init__(wake)
        self._runner = runner
        self._stop = threading.Event()
        writer = call.data.writeStream.foreachBatch(
            lambda df, batch_id: self._micro_batch(call, epoch, result, df))
        if call.trigger:
            writer = writer.trigger(**call.trigger)
        self._query = call.feeding.query = writer.start()
        threading.Thread(target=self._watch, name=f"feed-{call.feed}-stream", daemon=True
                         ).start()

    def _micro_batch(self, call: Call, epoch: int, result: EpochReport, df: Any) -> None:
        runner = self._runner
        if runner.equal:  # counted, then fed: computed once
            df.persist()
        try:
            plan = runner.make_plan(df, call.record_type)
            result.dropped += plan.dropped
            job = runner.submit(plan, call.feed, epoch)
            while not job.wait(0.2):
                if self._stop.is_set():
                    job.cancel()
            if job.error is not None:
                raise ClusterError(f"feeding a micro-batch of {call.feed!r} failed: {job.error}")
            result.jobs += 1
            result.add_tasks(job.value)
        finally:
            if runner.equal:
                df.unpersist()

    def _watch(self) -> None:
        query = self._query
        try:
            query.awaitTermination()
            error = query.exception()
        except BaseException as e:  # noqa: BLE001 - the stream's outcome
            error = e
        self.end(error=ClusterError(f"the stream failed: {error}") if error else None)

    def cancel(self) -> None:
        """Stop the query (in a thread: stopping waits for its micro-batch)."""
        if not self._stop.is_set():
            self._stop.set()
            threading.Thread(target=self._query.stop, daemon=True).start()


class SparkRunner:
    """The :class:`~tfrecord_io.cluster.feed.schedule.Runner` of one attempt.

    Args:
        application: the classic Spark application (its SparkContext submits the jobs).
        key: the feed's key (the feeding tasks get it, never the cluster's secret).
        addresses: the fed nodes' feed servers, ``host:port``, in worker order.
        equal: the equal-share rule (``mode="sync"``).
        group: prefix of the feeding jobs' Spark job groups (names in Spark's UI).
        reserved: task slots the cluster's nodes hold (the rest may run feeding tasks).
        wake: called when a job ends (the schedule has something to do).
        names: the fed nodes' names, in worker order (each feed link is bound to its node).
        attempt: the attempt whose nodes it feeds.
    """

    def __init__(self, application: SparkApplication, key: str, addresses: list[str],
                 equal: bool, group: str, reserved: int, wake: Callable[[], None], *,
                 names: list[str], attempt: int) -> None:
        self._application = application
        self._sc = application.spark_context()
        self._key = key
        self._addresses = addresses
        self._names = names
        self._attempt = attempt
        self.equal = equal
        self._group = group
        self._reserved = reserved
        self._wake = wake
        self._jobs = 0

    def make_plan(self, data: Any, record_type: str) -> Plan:
        """The batches of *data* for the fed nodes (a new job number: its batches are told
        apart from any other plan's)."""
        self._jobs += 1
        return plan_batches(self._sc, data, len(self._addresses), self._jobs, equal=self.equal,
                            record_type=record_type,
                            tasks=feeding_tasks(self._application, self._reserved))

    def submit(self, plan: Plan, feed: str, epoch: int) -> FeedJob:
        """Submit the feeding job of *epoch* of *plan*."""
        self._jobs += 1
        return FeedJob(self._sc, plan, self._key, self._addresses, feed, epoch,
                       f"{self._group}-feed-{feed}-{epoch}-{self._jobs}", self._wake,
                       names=self._names, attempt=self._attempt)

    @staticmethod
    def check(data: Any) -> None:
        """Raise TypeError unless *data* is a DataFrame of a classic session or an RDD (what
        ``train`` feeds from a classic session)."""
        from pyspark import RDD  # noqa: PLC0415 - Spark on the driver

        from tfrecord_io.spark.jvm import is_dataframe  # noqa: PLC0415 - Spark on the driver

        if not (is_dataframe(data) or isinstance(data, RDD)):
            raise TypeError(
                "a cluster started from a classic session feeds a DataFrame of a classic "
                f"session or an RDD of bytes records, not {type(data).__name__}")

    # -- Runner --------------------------------------------------------------------------------

    def plan(self, call: Call) -> ThreadJob:
        def work() -> Plan:
            plan = self.make_plan(call.data, call.record_type)
            if call.keep:
                plan.persist(self._sc, f"tfrecord-io feed {call.feed!r}: batches")
            return plan

        return ThreadJob(f"feed-{call.feed}-plan", work, self._wake)

    def feed(self, call: Call, epoch: int) -> FeedJob:
        return self.submit(call.plan, call.feed, epoch)

    def stream(self, call: Call, epoch: int, result: EpochReport) -> _StreamJob:
        return _StreamJob(self, call, epoch, result, self._wake)

    def release(self, call: Call) -> None:
        if call.keep and call.plan is not None:
            call.plan.unpersist()
