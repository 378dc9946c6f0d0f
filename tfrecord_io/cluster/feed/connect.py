"""Spark Connect, as the feeding schedule uses it (:class:`~tfrecord_io.cluster.feed.schedule
.Runner`): :class:`ConnectRunner` feeds a Connect DataFrame without a JVM in this process.

A Connect client has only the DataFrame API, so the feed's Spark work is reached through a
data source of the jar, ``org.tfrecordio.spark.feed.FeedSource`` (:data:`~tfrecord_io.spark
.jvm.FEED_SOURCE`), that runs on the Connect server's driver: the data fed is registered as a
temporary view of its session; reading the source with ``action=count`` counts the view's
rows per partition (the equal-share rule, :func:`~tfrecord_io.cluster.feed.plan.deal`), and
reading it with ``action=send`` runs one epoch's feeding job, whose rows are its tasks'
reports. The batches and the feeding tasks are the classic path's (``FeedBatches``,
``FeedSender``): rows are encoded in the executors' JVMs and sent from there, nothing crosses
to this process but the reports. Kept batches (``cache=True``) live in the server's storage
under the view's name until the call ends (``action=release``).

A feeding job is the ``collect`` of that read, in a thread of its own, carrying a job tag
(the client's tags are per thread); :meth:`ConnectFeedJob.cancel` interrupts the tag again and
again until the ``collect`` has returned, so a cancel takes effect whatever the job's state,
also when it comes before the server has seen the operation. The jobs of one feed run one
after the other: a job queued behind the running epoch is submitted when that one ends (the
server runs concurrent operations in no fixed order, and a later epoch's job must never hold
the task slots that the epoch being read needs).
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

from tfrecord_io.cluster.application import SparkApplication
from tfrecord_io.cluster.feed.outcome import Outcome, ThreadJob
from tfrecord_io.cluster.feed.plan import BATCH_BYTES, Deal, deal
from tfrecord_io.cluster.feed.reports import EpochReport
from tfrecord_io.cluster.feed.schedule import Call
from tfrecord_io.cluster.slots import feeding_tasks
from tfrecord_io.errors import ClusterError, SparkConnectError
from tfrecord_io.spark.jvm import FEED_SOURCE, is_connect

__all__ = ["ConnectPlan", "ConnectFeedJob", "ConnectRunner", "key_conf"]

log = logging.getLogger("tfrecord_io.cluster")

#: Seconds between two interrupts of a cancelled feeding job.
_INTERRUPT_EVERY = 0.5
_views = itertools.count(1)


@dataclass
class ConnectPlan:
    """A call's batches as the Connect server makes them: the view of the data, the deal.

    Attributes:
        session: the Connect session the data belongs to.
        view: the temporary view of the data (and the name of its kept batches).
        rule: how records are dealt (:func:`~tfrecord_io.cluster.feed.plan.deal`).
        job: the batches' job number (retried tasks' batches are told apart by it).
        keep: whether the batches are kept on the server for later epochs.
        tasks: feeding tasks per job at most (partitions are coalesced), or None.
    """

    session: Any
    view: str
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


def key_conf(view: str) -> str:
    """The session configuration that holds the feed's key for the call fed from *view*: its
    name has ``secret`` in it, so Spark's default ``spark.redaction.regex`` redacts it, and
    no ``spark.`` prefix, so Spark does not copy it into the properties of the session's jobs
    (which its listener bus may log whole, unredacted)."""
    return f"tfrecordio.feed.secret.{view}"


class ConnectFeedJob(Outcome):
    """One epoch's feeding job over Spark Connect (see the module docs): *frame*, the feed
    source's read, collected in a thread under *tag* once *after* (the feed's previous job, or
    None) has ended."""

    def __init__(self, frame: Any, tag: str, feed: str, epoch: int, after: Outcome | None,
                 wake: Callable[[], None]) -> None:
        super().__init__(wake)
        self.feed = feed
        self.epoch = epoch
        self._frame = frame
        self._session = frame.sparkSession
        self._tag = tag
        self._turn = threading.Lock()  # orders its start against a cancel
        self._started = False
        self._cancelled = threading.Event()
        if after is None:
            self._start()
        else:
            after.add_done_callback(lambda _: self._start())

    def _start(self) -> None:
        with self._turn:
            if self._cancelled.is_set():  # cancelled while queued: never submitted
                return
            self._started = True
        threading.Thread(target=self._run, name=f"{self._tag}-collect", daemon=True).start()

    def _run(self) -> None:
        session = self._session
        session.addTag(self._tag)
        try:
            rows = self._frame.collect()
        except BaseException as e:  # noqa: BLE001 - the job's outcome, read by the schedule
            self.end(error=ClusterError("cancelled") if self._cancelled.is_set() else e)
            return
        finally:
            session.removeTag(self._tag)
        self.end([json.loads(row.report) for row in rows])

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
                self._session.interruptTag(self._tag)
            except Exception:  # retried until the job has ended
                log.debug("interrupting %s failed", self._tag, exc_info=True)
            self.wait(_INTERRUPT_EVERY)


class ConnectRunner:
    """The :class:`~tfrecord_io.cluster.feed.schedule.Runner` of one attempt over Spark
    Connect.

    Args:
        application: the Spark Connect application (its driver runs the jobs).
        key: the feed's key (set, for each call, as a session configuration value whose name
            Spark redacts, read by the feed source on the server: never an option of a plan).
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
        self._group = re.sub(r"\W", "_", group)
        self._reserved = reserved
        self._wake = wake
        self._jobs = 0
        self._last: dict[str, ConnectFeedJob] = {}

    @staticmethod
    def check(data: Any) -> None:
        """Raise unless *data* is what a Connect client can feed: a batch DataFrame.

        Raises:
            TypeError: *data* is not a Spark Connect DataFrame.
            SparkConnectError: *data* is a streaming DataFrame.
        """
        if not (is_connect(data) and hasattr(data, "sparkSession")):
            raise TypeError(f"a cluster started from a Spark Connect session feeds a DataFrame "
                            f"of a Connect session, not {type(data).__name__}")
        if getattr(data, "isStreaming", False):
            raise SparkConnectError(
                "a streaming DataFrame is fed from a classic session only (its micro-batches "
                "are fed by foreachBatch on the driver): over Spark Connect feed batch "
                "DataFrames")

    def plan(self, call: Call) -> ThreadJob:
        self._jobs += 1
        job = self._jobs
        view = f"tfrecord_io_feed_{self._group}_{next(_views)}"

        def work() -> ConnectPlan:
            session = call.data.sparkSession
            # a Config request, not a plan: no operation event records it, and Spark redacts
            # the value wherever it shows the session's configuration (spark.redaction.regex)
            session.conf.set(key_conf(view), self._key)
            call.data.createOrReplaceTempView(view)
            plan = ConnectPlan(session, view, Deal(), job, call.keep,
                               feeding_tasks(self._application, self._reserved))
            if self.equal:
                rows = plan.read("count").collect()
                counts = [int(r.rows) for r in sorted(rows, key=lambda r: r.partition)]
                plan.rule = deal(counts, len(self._addresses))
            return plan

        return ThreadJob(f"feed-{call.feed}-plan", work, self._wake)

    def feed(self, call: Call, epoch: int) -> ConnectFeedJob:
        plan: ConnectPlan = call.plan
        self._jobs += 1
        rule = plan.rule
        frame = plan.read(
            "send", recordType=call.record_type, offsets=rule.offsets, counts=rule.counts,
            limit=rule.limit, workers=len(self._addresses), job=plan.job,
            batchBytes=BATCH_BYTES, tasks=plan.tasks or 0,
            keyConf=key_conf(plan.view),
            addresses=",".join(self._addresses), names=",".join(self._names),
            attempt=self._attempt, feed=call.feed, epoch=epoch, keep=plan.keep)
        tag = f"tfrecord-io-{self._group}-feed-{self._jobs}"
        job = ConnectFeedJob(frame, tag, call.feed, epoch,
                             self._last.get(call.feed), self._wake)
        self._last[call.feed] = job
        return job

    def stream(self, call: Call, epoch: int, result: EpochReport) -> Outcome:
        raise SparkConnectError("a streaming DataFrame is fed from a classic session only")

    def release(self, call: Call) -> None:
        plan: ConnectPlan | None = call.plan
        if plan is None:
            return
        try:
            if plan.keep:
                plan.read("release").collect()
            plan.session.catalog.dropTempView(plan.view)
            plan.session.conf.unset(key_conf(plan.view))
        except Exception:  # the session may be gone; nothing else to free
            log.warning("could not free the feed's view %s", plan.view, exc_info=True)
