"""The driver's side of feeding: :class:`FeedCoordinator` runs ``Cluster.train``.

The first epoch of a call is fed once every node still reading the feed asked for it (readers
pull epochs, so a worker busy with another feed never has a feeding job hold Spark's task
slots against it); each later one ahead, as soon as the last one is fed, and with the batches
kept (``cache``) its job is queued in Spark while the last one's runs. An epoch is one feeding
job (:mod:`~tfrecord_io.cluster.feed.jobs`); then every node is told that the epoch is over and
how many records were sent to it. A job fed ahead is cancelled when a node waits for another
feed's epoch, and fed again once asked. While a job runs the coordinator watches the cluster:
a failed node cancels it and raises the node's :class:`ClusterError` within a second or two.

A streaming DataFrame is one open epoch: every micro-batch (``foreachBatch``) is a feeding
job of the same epoch, which ends when the query stops (:meth:`Feeding.stop`, or a trigger
such as ``availableNow`` that ends by itself).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Any, Callable

from tfrecord_io.cluster import slots
from tfrecord_io.cluster.feed.batches import Plan, is_dataframe, plan_batches
from tfrecord_io.cluster.feed.jobs import FeedJob
from tfrecord_io.cluster.feed.links import FeedLinks
from tfrecord_io.cluster.feed.reports import EpochReport, FeedReport, Feeding
from tfrecord_io.errors import ClusterError

__all__ = ["FeedCoordinator"]

log = logging.getLogger("tfrecord_io.cluster")

#: After a node's link broke or its ``main_fun`` failed, how long to wait for the cluster to
#: report the failure before naming it without details.
_FAILURE_GRACE = 8.0
_POLL = 0.2


class FeedCoordinator:
    """Feeds the readers of one attempt (see the module docs).

    Args:
        sc: the SparkContext.
        secret: the cluster's secret.
        nodes: the fed nodes' names, in worker order.
        addresses: each fed node's feed server, ``host:port``.
        equal: the equal-share rule (``mode="sync"``).
        group: prefix of the feeding jobs' Spark job groups.
        failure: returns the attempt's failure (or None), as :meth:`Attempt.failure` does.
        reserved: task slots the cluster's nodes hold (the rest may run feeding tasks).
    """

    def __init__(
        self,
        sc: Any,
        secret: str,
        nodes: list[str],
        addresses: dict[str, str],
        equal: bool,
        group: str,
        failure: Callable[[], ClusterError | None],
        reserved: int,
    ) -> None:
        self._sc = sc
        self._reserved = reserved
        self._secret = secret
        self._nodes = nodes
        self._addresses = [addresses[n] for n in nodes]
        self._equal = equal
        self._group = group
        self._failure = failure
        self._links = FeedLinks(nodes, addresses, secret)
        self._lock = threading.Lock()
        self._feed_locks: dict[str, threading.Lock] = {}
        self._epochs: dict[str, int] = {}
        self._jobs = itertools.count()
        self._groups = itertools.count()
        self._done: dict[str, int] = {}  # per feed, the last epoch whose end was sent
        self._pending: set[Feeding] = set()
        self._closed = threading.Event()
        self.attempt: int | None = None  #: the attempt whose nodes it feeds

    # -- train ---------------------------------------------------------------------------------

    def train(self, data: Any, num_epochs: int, feed: str, record_type: str,
              trigger: dict[str, Any] | None, cache: bool = True) -> Feeding:
        """Start feeding *data* (in a thread of its own); see ``Cluster.train``."""
        feeding = Feeding()
        streaming = is_dataframe(data) and data.isStreaming
        if streaming and num_epochs != 1:
            raise ValueError("a streaming DataFrame is fed as one open epoch: num_epochs must be 1")
        with self._lock:
            lock = self._feed_locks.setdefault(feed, threading.Lock())
            self._pending.add(feeding)

        def run() -> None:
            try:
                with lock:
                    if streaming:
                        report = self._stream(data, feed, record_type, trigger, feeding)
                    else:
                        report = self._batches(data, num_epochs, feed, record_type, cache,
                                               feeding)
                feeding.set_result(report)
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                feeding.set_exception(e)
            finally:
                with self._lock:
                    self._pending.discard(feeding)

        threading.Thread(target=run, name=f"feed-{feed}", daemon=True).start()
        return feeding

    def _batches(self, data: Any, num_epochs: int, feed: str, record_type: str, cache: bool,
                 feeding: Feeding) -> FeedReport:
        report = FeedReport(feed)
        plan = None
        ahead = False
        keep = cache and num_epochs > 1  # the batches, for the epochs after the first
        queued: list[FeedJob] = []  # the next epoch's job, submitted while this one's ran
        try:
            for i in range(num_epochs):
                if feeding.stopping:
                    report.stopped = True
                    break
                epoch = self._next_epoch(feed)
                if ahead and not self._links.readers(feed):
                    ahead = False  # nobody reads: _await_demand says so below
                if not ahead and not self._demanded(feed, epoch, feeding, report, num_epochs):
                    break
                if plan is None:
                    plan = plan_batches(self._sc, data, len(self._nodes), next(self._jobs),
                                        equal=self._equal, record_type=record_type,
                                        tasks=self._tasks())
                    if keep:
                        plan.persist(self._sc, f"tfrecord-io feed {feed!r}: batches")
                job = queued.pop() if queued else None
                assert job is None or job.epoch == epoch
                # Kept batches are all made once the first epoch is fed: from then on the
                # next epoch's job waits in Spark's queue, and starts as this one's tasks end.
                queue = queued if keep and ahead and i + 1 < num_epochs else None
                result = self._feed_epoch(plan, feed, epoch, ahead, feeding, report, num_epochs,
                                          job, queue)
                if result is None:
                    break
                report.epochs.append(result)
                ahead = True  # the next epoch goes at once: its readers find it buffered
        finally:
            self._cancel(queued, feeding)
            if plan is not None and keep:
                plan.unpersist()
        return report

    def _feed_epoch(self, plan: Plan, feed: str, epoch: int, ahead: bool, feeding: Feeding,
                    report: FeedReport, num_epochs: int, job: FeedJob | None,
                    queue: list[FeedJob] | None) -> EpochReport | None:
        """Feed *epoch* of *plan* (*ahead*: before its readers asked; *job*: its job if it was
        queued already) and end it on the nodes; its report, or None if its readers are gone
        or feeding stopped before it was fed. With *queue*, the next epoch's job is submitted
        (into *queue*) as soon as Spark has this one."""
        result = EpochReport(epoch, dropped=plan.dropped)
        start = time.monotonic()
        log.debug("feeding epoch %d of %r (%s) at %.3f", epoch, feed,
                  "ahead" if ahead else "every reader asked", time.time())

        def queue_next() -> None:
            if queue is not None:
                queue.append(self._job(plan, feed, epoch + 1, feeding))

        try:
            job = job or self._job(plan, feed, epoch, feeding)
            if ahead and not self._feed_job(job, result, feeding, then=queue_next,
                                            preempt=lambda: self._awaited_elsewhere(feed)):
                # Another feed's readers wait for a job that needs the slots this one holds:
                # feed this epoch when it is asked for (a node keeps the batches it already
                # has, and drops them when they come again).
                log.debug("epoch %d of %r gives way to another feed", epoch, feed)
                self._cancel(queue or [], feeding)
                if not self._demanded(feed, epoch, feeding, report, num_epochs):
                    return None
                result = EpochReport(epoch, dropped=plan.dropped)
                self._feed_job(self._job(plan, feed, epoch, feeding), result, feeding)
            elif not ahead:
                self._feed_job(job, result, feeding)
        except BaseException as e:
            self._fail_epoch(feed, epoch, str(e))
            raise
        if plan.per_worker is not None:  # counted: what was not delivered was dropped
            total = plan.per_worker * len(self._nodes) + plan.dropped
            result.dropped = total - sum(result.records.values())
        self._end_epoch(feed, epoch, result)
        log.info("fed epoch %d of %r: %s records in %.2f s (%d dropped)", epoch, feed,
                 sum(result.records.values()), time.monotonic() - start, result.dropped)
        return result

    @staticmethod
    def _cancel(jobs: list[FeedJob], feeding: Feeding) -> None:
        """Cancel *jobs* (queued, not watched) and forget them."""
        while jobs:
            job = jobs.pop()
            job.cancel()
            feeding.forget(job)

    def _demanded(self, feed: str, epoch: int, feeding: Feeding, report: FeedReport,
                  num_epochs: int) -> bool:
        """Wait for every reader's demand of *epoch*; False (with *report* and the nodes told)
        if feeding was stopped or nobody reads *feed* any more."""
        if self._await_demand(feed, epoch, feeding):
            return True
        if feeding.stopping:
            report.stopped = True
            self._end_epoch(feed, epoch, EpochReport(epoch, complete=False))
        else:
            log.info("no node reads feed %r any more: %d epoch(s) not fed", feed,
                     num_epochs - len(report.epochs))
        return False

    def _stream(self, df: Any, feed: str, record_type: str, trigger: dict[str, Any] | None,
                feeding: Feeding) -> FeedReport:
        report = FeedReport(feed)
        epoch = self._next_epoch(feed)
        if not self._await_demand(feed, epoch, feeding):
            if feeding.stopping:  # stopped before it began: an empty epoch
                report.stopped = True
                self._end_epoch(feed, epoch, EpochReport(epoch))
            return report
        result = EpochReport(epoch)

        def micro_batch(batch_df: Any, batch_id: int) -> None:
            if self._equal:  # counted, then fed: computed once
                batch_df.persist()
            try:
                plan = plan_batches(self._sc, batch_df, len(self._nodes), next(self._jobs),
                                    equal=self._equal, record_type=record_type,
                                    tasks=self._tasks())
                result.dropped += plan.dropped
                self._feed_job(self._job(plan, feed, epoch, feeding), result, feeding)
            finally:
                if self._equal:
                    batch_df.unpersist()

        writer = df.writeStream.foreachBatch(micro_batch)
        if trigger:
            writer = writer.trigger(**trigger)
        feeding.query = writer.start()
        if feeding.stopping:
            feeding.query.stop()
        try:
            while not feeding.query.awaitTermination(1.0):
                error = self._failure()
                if error is not None:
                    feeding.query.stop()
                    raise error
            if feeding.query.exception() is not None:
                error = self._failure()
                raise error or ClusterError(
                    f"the stream feeding {feed!r} failed: {feeding.query.exception()}")
        except BaseException as e:
            self._fail_epoch(feed, epoch, str(e))
            raise
        report.stopped = feeding.stopping
        self._end_epoch(feed, epoch, result)
        report.epochs.append(result)
        return report

    # -- one epoch -----------------------------------------------------------------------------

    def _tasks(self) -> int:
        """Feeding tasks per job: the task slots the cluster's nodes leave free (at least 1)."""
        return max(1, slots.free_slots(self._sc) - self._reserved)

    def _next_epoch(self, feed: str) -> int:
        with self._lock:
            self._epochs[feed] = self._epochs.get(feed, 0) + 1
            return self._epochs[feed]

    def _awaited_elsewhere(self, feed: str) -> bool:
        """Whether a node waits for an epoch of another feed that is not fed yet: a job fed
        ahead must then give its task slots up, or the two could wait on each other."""
        with self._lock:
            done = dict(self._done)
        return self._links.awaited_elsewhere(feed, done)

    def _await_demand(self, feed: str, epoch: int, feeding: Feeding) -> bool:
        """Wait until every node still reading *feed* asked for *epoch*; False if none reads
        it any more, or *feeding* was stopped. Raises the cluster's failure."""
        links = self._links
        while True:
            self._check()
            if feeding.stopping:
                return False
            with links.cond:
                readers = links.readers(feed)  # the condition's lock is reentrant
                if all(links.asked(n, feed) >= epoch for n in readers):
                    return bool(readers)
                links.cond.wait(_POLL)

    def _check(self) -> None:
        """Raise the cluster's failure, if any; also if a node's ``main_fun`` failed or its
        link broke (waiting a little for the cluster to say why)."""
        error = self._failure()
        if error is not None:
            raise error
        if self._closed.is_set():
            raise ClusterError("the cluster was shut down while feeding")
        links = self._links
        with links.cond:
            broken = [n for n in self._nodes if links.gone(n) not in (None, "finished")]
        if broken:
            deadline = time.monotonic() + _FAILURE_GRACE
            while time.monotonic() < deadline:
                error = self._failure()
                if error is not None:
                    raise error
                time.sleep(_POLL)
            raise ClusterError(f"{broken[0]} stopped while being fed ({links.gone(broken[0])})",
                               node=broken[0])

    def _job(self, plan: Plan, feed: str, epoch: int, feeding: Feeding) -> FeedJob:
        """The feeding job of *epoch*, submitted (``feeding.stop()`` cancels it)."""
        group = f"{self._group}-feed-{feed}-{epoch}-{next(self._groups)}"
        job = FeedJob(self._sc, plan, self._secret, self._addresses, feed, epoch, group)
        feeding.track(job)
        return job.start()

    def _feed_job(self, job: FeedJob, result: EpochReport, feeding: Feeding,
                  preempt: Callable[[], bool] | None = None,
                  then: Callable[[], None] | None = None) -> bool:
        """Wait for *job*, watching the cluster; add its task reports to *result*. Returns
        False if *preempt* said so while it ran (the job is cancelled, *result* left as it
        was). *then* is called once Spark has the job, while it runs: to queue the next job
        behind it."""
        try:
            while not job.wait(_POLL):
                self._check()
                if then is not None and job.submitted():
                    then()
                    then = None
                if preempt is not None and preempt():
                    job.cancel()
                    return False
        except BaseException:
            job.cancel()
            raise
        finally:
            feeding.forget(job)
        result.jobs += 1
        if job.error is not None:
            if feeding.stopping:
                result.complete = False
                return True
            self._check()
            raise ClusterError(f"feeding epoch {job.epoch} of feed {job.feed!r} failed: "
                               f"{job.error}")
        for task in job.tasks():
            result.tasks.append(task)
            for worker, sent in task["workers"].items():
                w = int(worker)
                result.records[w] = result.records.get(w, 0) + sent["records"]
                result.dropped += sent["dropped"]
        return True

    def _end_epoch(self, feed: str, epoch: int, result: EpochReport) -> None:
        unsure = {int(w) for task in result.tasks for w, s in task["workers"].items()
                  if s["state"] != "ready"}
        for w, node in enumerate(self._nodes):
            sent = None if w in unsure or not result.complete else result.records.get(w, 0)
            self._links.send(node, {"type": "end_epoch", "feed": feed, "epoch": epoch,
                                    "sent": sent})
        with self._lock:
            self._done[feed] = max(epoch, self._done.get(feed, 0))

    def _fail_epoch(self, feed: str, epoch: int, reason: str) -> None:
        for node in self._nodes:
            self._links.send(node, {"type": "fail_epoch", "feed": feed, "epoch": epoch,
                                    "reason": reason})

    # -- the end -------------------------------------------------------------------------------

    def pending(self) -> list[Feeding]:
        """``train`` calls still feeding."""
        with self._lock:
            return list(self._pending)

    def end_all(self, after_pending: threading.Event | None = None) -> None:
        """No more epochs of any feed (``Cluster.wait``): first let the feedings in progress
        finish (unless *after_pending* is set: the cluster is over), then end every feed."""
        while after_pending is not None and self.pending() and not after_pending.is_set():
            after_pending.wait(_POLL)
        self._links.end_all()

    def close(self) -> None:
        """Stop every feeding in progress and close the links."""
        self._closed.set()
        for feeding in self.pending():
            feeding.stop()
        self._links.close()
