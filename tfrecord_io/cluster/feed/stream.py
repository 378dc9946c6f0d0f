"""A streaming DataFrame fed as one epoch (classic sessions): :class:`StreamJob` feeds each
micro-batch of its query, from ``foreachBatch`` on the driver, through the runner's plan and
feeding job (:mod:`~tfrecord_io.cluster.feed.source`), one after the other, until the query
stops."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tfrecord_io.cluster.feed.job import BaseJob
from tfrecord_io.cluster.feed.reports import EpochReport
from tfrecord_io.cluster.feed.schedule import Call
from tfrecord_io.errors import ClusterError

if TYPE_CHECKING:
    from tfrecord_io.cluster.feed.source import FeedRunner

__all__ = ["StreamJob"]


class StreamJob(BaseJob):
    """*call*'s streaming DataFrame fed as epoch *epoch* (adding to *result*): a feeding job
    per micro-batch; its query starts at construction. A query that cannot start (a bad
    ``trigger``, a source Spark refuses) ends the job at once with the reason: that call fails,
    not the cluster's other feeds."""

    def __init__(self, runner: FeedRunner, call: Call, epoch: int, result: EpochReport,
                 wake: Callable[[], None]) -> None:
        super().__init__(wake)
        self._runner = runner
        self._stop = threading.Event()
        self._query: Any = None
        try:
            writer = call.data.writeStream.foreachBatch(
                lambda df, batch_id: self._micro_batch(call, epoch, result, df))
            if call.trigger:
                writer = writer.trigger(**call.trigger)
            self._query = call.feeding.query = writer.start()
        except Exception as e:  # noqa: BLE001 - the call's error, read by the schedule
            given = (f" with trigger={call.trigger!r} (the keyword arguments of "
                     "writeStream.trigger)" if call.trigger else "")
            self.end(error=ClusterError(
                f"the query of the stream fed as {call.feed!r} could not start{given}: "
                f"{type(e).__name__}: {e}"))
            return
        threading.Thread(target=self._watch, name=f"feed-{call.feed}-stream", daemon=True
                         ).start()

    def _micro_batch(self, call: Call, epoch: int, result: EpochReport, df: Any) -> None:
        runner = self._runner
        if runner.equal:  # counted, then fed: computed once
            df.persist()
        plan = None
        try:
            plan = runner.make_plan(df, call.record_type)
            result.dropped += plan.dropped
            job = runner.send_batches(plan, call.feed, epoch)
            cut = False
            while not job.wait(0.2):
                if self._stop.is_set():
                    job.cancel()
                    cut = True
            if cut and job.error is not None:
                # Stopped in the middle of this micro-batch: some of its batches may have
                # reached the workers without being counted, so the epoch's end says to no
                # worker how many records were sent.
                result.complete = False
                return
            if job.error is not None:
                raise ClusterError(f"feeding a micro-batch of {call.feed!r} failed: {job.error}")
            result.jobs += 1
            result.add_tasks(job.value)
        finally:
            if plan is not None:
                runner.free(plan)
            if runner.equal:
                df.unpersist()

    def _watch(self) -> None:
        query = self._query
        try:
            query.awaitTermination()
            error = query.exception()
        except BaseException as e:  # noqa: BLE001 - the stream's error, read by the schedule
            error = e
        self.end(error=ClusterError(f"the stream failed: {error}") if error else None)

    def cancel(self) -> None:
        """Stop the query (in a thread: stopping waits for its micro-batch)."""
        if self._query is not None and not self._stop.is_set():
            self._stop.set()
            threading.Thread(target=self._query.stop, daemon=True).start()
