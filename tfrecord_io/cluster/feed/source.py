"""Spark, as the feeding schedule uses it (:class:`~tfrecord_io.cluster.feed.schedule.Runner`):
:class:`FeedRunner` plans a call's batches and runs an epoch's feeding job, in a classic session
and over Spark Connect alike.

The feed's Spark work is reached through the DataFrame API, by reading a data source of the
jar, ``org.tfrecordio.spark.feed.FeedSource`` (:data:`~tfrecord_io.spark.jvm.FEED_SOURCE`),
that runs on the application's driver (this process's JVM, or the Connect server's): the data
fed is registered as a temporary view of its session; reading the source with
``action=count`` counts the view's rows per partition (the equal-share rule,
:func:`~tfrecord_io.cluster.feed.plan.deal`), and reading it with ``action=send`` runs one
epoch's feeding job, whose rows are its tasks' summaries (JSON, each an entry of
``EpochReport.tasks``). The batches are made (``FeedBatches``: rows encoded to
``tf.train.Example`` in the executors' JVMs) and sent (``FeedSender``) from the executors:
nothing crosses to this process but the summaries. An RDD of
``bytes`` records (classic sessions) is first made a DataFrame of one binary column in the JVM
(:func:`~tfrecord_io.spark.jvm.records_frame`, fed as ``ByteArray``). Kept batches
(``cache=True``) live in the driver's storage under the view's name until the call ends
(``action=release``). A streaming DataFrame (classic sessions) is fed micro-batch by
micro-batch through the same reads (:mod:`~tfrecord_io.cluster.feed.stream`).

A feeding job is the ``collect`` of that read, in a thread of its own, carrying a job tag
(:class:`~tfrecord_io.cluster.application.JobTags`: tags are per thread);
:meth:`FeedJob.cancel` interrupts the tag again and again until the ``collect`` has returned,
so a cancel takes effect whatever the job's state, also when it comes before Spark has seen
the job. The jobs of one feed reach Spark one after the other, in epoch order: a later epoch's
job must never hold the task slots that the epoch being read needs, and Spark runs jobs first
come, first served. In a classic session a job queued behind the running epoch is started once
that one's Spark job is in the scheduler's queue (the status tracker knows its tag), so its
tasks start as the running epoch's end; over Spark Connect, where the server runs concurrent
operations in no fixed order, once that one has ended.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfrecord_io.cluster.application import JobTags, SparkApplication
from tfrecord_io.cluster.feed.job import BaseJob, ThreadJob
from tfrecord_io.cluster.feed.plan import BATCH_BYTES, Deal, deal
from tfrecord_io.cluster.feed.reports import EpochReport
from tfrecord_io.cluster.feed.schedule import Call
from tfrecord_io.cluster.feed.stream import StreamJob
from tfrecord_io.cluster.slots import feeding_tasks
from tfrecord_io.errors import ClusterError, SparkConnectError
from tfrecord_io.spark.jvm import FEED_SOURCE, is_connect, is_dataframe, records_frame

__all__ = ["FeedJob", "FeedRunner", "SourcePlan", "check_data", "key_conf"]

log = logging.getLogger("tfrecord_io.cluster")

#: Seconds between two interrupts of a cancelled feeding job.
_INTERRUPT_EVERY = 0.5
#: Seconds between two looks whether the feed's previous job has reached Spark's scheduler.
_QUEUED_POLL = 0.02
_views = itertools.count(1)


def check_data(application: SparkApplication, data: Any) -> None:
    """Raise unless *data* is what ``Cluster.train`` feeds in *application*: a DataFrame of
    its kind of session, an RDD of ``bytes`` or a streaming DataFrame in a classic one.

    Raises:
        TypeError: anything else.
        SparkConnectError: a streaming DataFrame over Spark Connect.
    """
    if application.kind == "connect":
        if not (is_connect(data) and hasattr(data, "sparkSession")):
            raise TypeError(f"a cluster started from a Spark Connect session feeds a DataFrame "
                            f"of a Connect session, not {type(data).__name__}")
        if getattr(data, "isStreaming", False):
            raise SparkConnectError(
                "a streaming DataFrame is fed from a classic session only (its micro-batches "
                "are fed by foreachBatch on the driver): over Spark Connect feed batch "
                "DataFrames")
        return
    from pyspark import RDD  # noqa: PLC0415 - Spark on the driver

    if not (is_dataframe(data) or isinstance(data, RDD)):
        raise TypeError(
            "a cluster started from a classic session feeds a DataFrame of a classic "
            f"session or an RDD of bytes records, not {type(data).__name__}")


def key_conf(view: str) -> str:
    """The session configuration that holds the feed's key for the call fed from *view*: its
    name has ``secret`` in it, so Spark's default ``spark.redaction.regex`` redacts it, and
    no ``spark.`` prefix, so Spark does not copy it into the properties of the session's jobs
    (which its listener bus may log whole, unredacted)."""
    return f"tfrecordio.feed.secret.{view}"


@dataclass
class SourcePlan:
    """A call's batches as the feed source makes them: the view of the data, the deal.

    Attributes:
        session: the session the data belongs to.
        view: the temporary view of the data (and the name of its kept batches).
        record_type: how its rows are encoded (``ByteArray`` for an RDD's records).
        rule: how records are dealt (:func:`~tfrecord_io.cluster.feed.plan.deal`).
        job: the batches' job number (retried tasks' batches are told apart by it).
        keep: whether the batches are kept on the driver for later epochs.
        tasks: feeding tasks per job at most (partitions are coalesced), or None.
    """

    session: Any
    view: str
    record_type: str
    rule: Deal
    job: int
    keep: bool
    tasks: int | None = None

    @property
    def per_worker(self) -> int | None:
        """Records each worker gets per epoch (the equal-share rule), else None."""
        return self.rule.per_worker

    @property
    def dropped(self) -> int:
        """Records left out by the equal-share rule."""
        return self.rule.dropped

    def read(self, action: str, **options: Any) -> Any:
        """The feed source's DataFrame for *action* on this plan's view."""
        return self.session.read.format(FEED_SOURCE).options(
            view=self.view, action=action, **options).load()


class FeedJob(BaseJob):
    """One epoch's feeding job (see the module docs): *frame*, the feed source's read,
    collected in a thread under *tag* once *after* (the feed's previous job, or None) has
    reached Spark's scheduler or, where that cannot be told, has ended. *tags*: the job tags
    of the frame's session (by default); *group*: its job group in a classic session's UI."""

    def __init__(self, frame: Any, tag: str, feed: str, epoch: int, after: BaseJob | None,
                 wake: Callable[[], None], tags: JobTags | None = None, group: str = "") -> None:
        super().__init__(wake)
        self._group = group or tag
        self.feed = feed
        self.epoch = epoch
        self._frame = frame
        self._tags = tags or JobTags(frame.sparkSession)
        self._tag = tag
        self._turn = threading.Lock()  # orders its start against a cancel
        self._started = False
        self._cancelled = threading.Event()
        if after is None:
            self._start()
            return
        after.add_done_callback(lambda _: self._start())
        if isinstance(after, FeedJob) and after.queued() is not None:
            threading.Thread(target=self._start_once_queued, args=(after,),
                             name=f"{tag}-after", daemon=True).start()

    def queued(self) -> bool | None:
        """Whether its Spark job has reached the scheduler (queued, running or ended), or None
        where the session cannot tell."""
        return self._tags.submitted(self._tag)

    def _start_once_queued(self, after: FeedJob) -> None:
        while not (after.done() or self._started or self._cancelled.is_set()):
            if after.queued():
                self._start()
                return
            self._cancelled.wait(_QUEUED_POLL)

    def _start(self) -> None:
        with self._turn:
            if self._cancelled.is_set() or self._started:  # cancelled while queued: never run
                return
            self._started = True
        threading.Thread(target=self._run, name=f"{self._tag}-collect", daemon=True).start()

    def _run(self) -> None:
        # Whatever fails here (tagging the job included: a stopped SparkContext) ends the job
        # with the error: a job that never ends would hold its feed for good.
        try:
            self._tags.describe(self._group,
                                f"tfrecord-io feed {self.feed!r}, epoch {self.epoch}")
            self._tags.add(self._tag)
            try:
                rows = self._frame.collect()
            finally:
                self._tags.remove(self._tag)
            tasks = [json.loads(row.task) for row in rows]
        except BaseException as e:  # noqa: BLE001 - the job's error, read by the schedule
            self.end(error=ClusterError("cancelled") if self._cancelled.is_set() else e)
            return
        self.end(tasks)

    def cancel(self) -> None:
        """Cancel the job, whatever its state; returns at once."""
        with self._turn:
            if self.done() or self._cancelled.is_set():
                return
            self._cancelled.set()
            started = self._started
        if not started:
            self.end(error=ClusterError("cancelled"))
            return
        threading.Thread(target=self._interrupt, name=f"{self._tag}-cancel",
                         daemon=True).start()

    def _interrupt(self) -> None:
        while not self.done():
            try:
                self._tags.interrupt(self._tag)
            except Exception:  # retried until the job has ended
                log.debug("interrupting %s failed", self._tag, exc_info=True)
            self.wait(_INTERRUPT_EVERY)


class FeedRunner:
    """The :class:`~tfrecord_io.cluster.feed.schedule.Runner` of one attempt.

    Args:
        application: the Spark application (its driver runs the jobs).
        key: the feed's key (set, for each call, as a session configuration value whose name
            Spark redacts, read by the feed source on the driver: never an option of a read).
        addresses: the fed nodes' feed servers, ``host:port``, in worker order.
        equal: the equal-share rule (``mode="sync"``).
        group: prefix of the feeding jobs' tags and views.
        reserved: task slots the cluster's nodes hold (the rest may run feeding tasks).
        wake: called when a job ends (the schedule has something to do).
        names: the fed nodes' names, in worker order (each feed link is bound to its node).
        attempt: the attempt whose nodes it feeds.
    """

    def __init__(self, application: SparkApplication, key: str, addresses: list[str],
                 equal: bool, group: str, reserved: int, wake: Callable[[], None], *,
                 names: list[str], attempt: int) -> None:
        self._application = application
        self._key = key
        self._addresses = addresses
        self._names = names
        self._attempt = attempt
        self.equal = equal
        self._name = group
        self._group = re.sub(r"\W", "_", group)
        self._reserved = reserved
        self._wake = wake
        self._jobs = itertools.count(1)
        self._last: dict[str, FeedJob] = {}

    def make_plan(self, data: Any, record_type: str, keep: bool = False) -> SourcePlan:
        """The plan of *data* for the fed nodes: its view, its key, counted under the
        equal-share rule (a Spark job). Free it with :meth:`free`; a plan that fails (no task
        slot for feeding, a count that fails) frees its view and key before it raises, and
        :meth:`plan`'s job frees the plan of a planning cancelled."""
        if not (is_dataframe(data) or is_connect(data)):
            data, record_type = records_frame(data), "ByteArray"
        tasks = feeding_tasks(self._application, self._reserved)  # before the view exists
        view = f"tfrecord_io_feed_{self._group}_{next(_views)}"
        session = data.sparkSession
        plan = SourcePlan(session, view, record_type, Deal(), next(self._jobs), keep, tasks)
        try:
            # a Config request, not a plan: no operation event records it, and Spark redacts
            # the value wherever it shows the session's configuration (spark.redaction.regex)
            session.conf.set(key_conf(view), self._key)
            data.createOrReplaceTempView(view)  # dropped by the release, which keeps data cached
            if self.equal:
                rows = plan.read("count").collect()
                counts = [int(r.rows) for r in sorted(rows, key=lambda r: r.partition)]
                plan.rule = deal(counts, len(self._addresses))
        except BaseException:
            self.free(plan)  # no call will hold this plan: its view and key go now
            raise
        return plan

    def send_batches(self, plan: SourcePlan, feed: str, epoch: int) -> FeedJob:
        """Start the feeding job of *epoch* of *plan*'s batches, after the feed's last job."""
        rule = plan.rule
        frame = plan.read(
            "send", recordType=plan.record_type, offsets=rule.offsets, counts=rule.counts,
            limit=rule.limit, workers=len(self._addresses), job=plan.job,
            batchBytes=BATCH_BYTES, tasks=plan.tasks or 0,
            keyConf=key_conf(plan.view),
            addresses=",".join(self._addresses), names=",".join(self._names),
            attempt=self._attempt, feed=feed, epoch=epoch, keep=plan.keep)
        number = next(self._jobs)
        tag = f"tfrecord-io-{self._group}-feed-{number}"
        job = FeedJob(frame, tag, feed, epoch, self._last.get(feed), self._wake,
                      group=f"{self._name}-feed-{feed}-{epoch}-{number}")
        self._last[feed] = job
        return job

    @staticmethod
    def free(plan: SourcePlan) -> None:
        """Free *plan*'s kept batches, view and key. The feed source drops the view: the
        session's ``catalog.dropTempView`` would also uncache *data* (the plan the view names)
        if the caller had cached it."""
        try:
            plan.read("release").collect()
            plan.session.conf.unset(key_conf(plan.view))
        except Exception:  # the session may be gone; nothing else to free
            log.warning("could not free the feed's view %s", plan.view, exc_info=True)

    # -- Runner --------------------------------------------------------------------------------

    def plan(self, call: Call) -> ThreadJob:
        return ThreadJob(f"feed-{call.feed}-plan",
                         lambda: self.make_plan(call.data, call.record_type, call.keep),
                         self._wake, discard=self.free)

    def send_epoch(self, call: Call, epoch: int) -> FeedJob:
        return self.send_batches(call.plan, call.feed, epoch)

    def stream(self, call: Call, epoch: int, result: EpochReport) -> BaseJob:
        if self._application.kind == "connect":
            raise SparkConnectError("a streaming DataFrame is fed from a classic session only")
        return StreamJob(self, call, epoch, result, self._wake)

    def release(self, call: Call) -> None:
        if call.plan is not None:
            self.free(call.plan)
