"""Stopping a fed stream (``Feeding.stop()``) with the driver's schedule, the stream job and
the nodes' buffers real, and Spark faked: the query and the feeding jobs of its micro-batches.
What the workers were sent is checked at the stop as at any epoch's end, and a micro-batch cut
short leaves no worker with a false count; a query that cannot start fails its own call, not the
schedule (tests/cluster/test_feed_stream.py runs streams on Spark)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from tfrecord_io.cluster.feed.batch_format import pack
from tfrecord_io.cluster.feed.buffer import FeedBuffer
from tfrecord_io.cluster.feed.job import BaseJob
from tfrecord_io.cluster.feed.reports import Feeding
from tfrecord_io.cluster.feed.schedule import UNREACHED_GRACE, Call, FeedSchedule
from tfrecord_io.cluster.feed.stream import StreamJob
from tfrecord_io.cluster.messages import EndEpoch, FailEpoch
from tfrecord_io.errors import ClusterError

NODES = ["worker:0", "worker:1"]


def _sent(records: int, state: str = "ready", **more) -> dict:
    return {"records": records, "batches": 1 if records else 0, "dropped": 0, "state": state,
            **more}


class World:
    """Two workers reading one stream; micro-batch *i*'s feeding job is ``jobs[i](world)``."""

    def __init__(self, jobs: list[Callable[[World], BaseJob]]) -> None:
        self.demands: dict[str, dict[str, int]] = {n: {} for n in NODES}
        self.buffers = {n: FeedBuffer("events", 32, self._demand(n)) for n in NODES}
        self.jobs = jobs
        self.in_flight = threading.Event()  # the last micro-batch's job is running
        self.clock = 0.0
        self.schedule = FeedSchedule(self, self, equal=False, failure=lambda: None,
                                     clock=lambda: self.clock)
        self.feeding = Feeding()
        self.call = Call("events", self, 1, self.feeding, streaming=True)
        self.schedule.add(self.call)
        self.read: dict[str, object] = {}
        self._threads = [threading.Thread(target=self._read, args=(n,)) for n in NODES]
        for thread in self._threads:
            thread.start()

    def _demand(self, node: str) -> Callable[[str, int], None]:
        return lambda feed, epoch: self.demands[node].__setitem__(feed, epoch)

    def _read(self, node: str) -> None:
        got = 0
        try:
            for batch in self.buffers[node].epoch():
                got += len(batch)
            self.read[node] = got
        except ClusterError as e:
            self.read[node] = e

    def deliver(self, node: str, job: int, records: int) -> None:
        """A batch of *records* records that reached *node* (acknowledged)."""
        self.buffers[node].put(1, (job, 0, 0), records, memoryview(pack([b"r"] * records)))

    def run_until(self, done: Callable[[], bool], tick: float = 0.0) -> None:
        deadline = time.monotonic() + 20
        while not done():
            assert time.monotonic() < deadline, "the schedule did not get there"
            self.schedule.step()
            self.clock += tick
            time.sleep(0.01)

    def stop(self) -> None:
        self.feeding.stop()
        self.run_until(lambda: self.call.over, tick=1.0)
        for thread in self._threads:
            thread.join(10)

    # Links (the driver's links to the nodes)
    nodes = NODES

    def readers(self, feed: str) -> list[str]:
        return list(NODES)

    def asked(self, node: str, feed: str) -> int:
        return self.demands[node].get(feed, 0)

    def gone(self, node: str) -> None:
        return None  # both still read

    def awaited_elsewhere(self, feed: str, done: dict) -> bool:
        return False

    def awaited(self, node: str) -> dict[str, int]:
        return dict(self.demands[node])

    def send(self, node: str, message) -> None:
        if isinstance(message, EndEpoch):
            self.buffers[node].end_epoch(message.epoch, message.sent)
        elif isinstance(message, FailEpoch):
            self.buffers[node].fail_epoch(message.epoch, message.reason)

    # Runner (the feeding jobs)
    def stream(self, call: Call, epoch: int, result) -> StreamJob:
        return StreamJob(self, call, epoch, result, lambda: None)

    def release(self, call: Call) -> None:
        pass

    # FeedRunner, as StreamJob uses it; and the streaming DataFrame
    equal = False

    def make_plan(self, df, record_type):
        return type("Plan", (), {"dropped": 0})()

    def send_batches(self, plan, feed: str, epoch: int) -> BaseJob:
        make = self.jobs.pop(0)
        if not self.jobs:
            self.in_flight.set()
        return make(self)

    def free(self, plan) -> None:
        pass

    @property
    def writeStream(self):  # noqa: N802 - pyspark's name
        return _Writer()


class _Writer:
    def foreachBatch(self, fn):  # noqa: N802 - pyspark's name
        self.fn = fn
        return self

    def start(self):
        return _Query(self.fn)


class _Query:
    """Micro-batches one after the other until stopped (a stream that never ends by itself)."""

    def __init__(self, fn) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn) -> None:
        batch = 0
        while not self._stopped.is_set():
            try:
                fn(object(), batch)
            except Exception:  # noqa: BLE001 - a stopped query reports no exception
                return
            batch += 1
            self._stopped.wait(0.05)

    def stop(self) -> None:
        self._stopped.set()

    def awaitTermination(self) -> None:  # noqa: N802 - pyspark's name
        self._thread.join()

    def exception(self) -> None:
        return None


class Finished(BaseJob):
    """A micro-batch's feeding job, ended: every worker got *records*, or as *sent* says."""

    def __init__(self, world: World, number: int, sent: dict[str, dict]) -> None:
        super().__init__(lambda: None)
        for w, s in sent.items():
            if s["records"]:
                world.deliver(NODES[int(w)], number, s["records"])
        self.end([{"pid": 1, "host": "executor-7", "workers": sent}])

    def cancel(self) -> None:
        pass


class Running(BaseJob):
    """A micro-batch's feeding job still running: *records* already reached worker 0."""

    def __init__(self, world: World, number: int, records: int) -> None:
        super().__init__(lambda: None)
        world.deliver(NODES[0], number, records)

    def cancel(self) -> None:
        if not self.done():
            self.end(error=ClusterError("the feeding job was cancelled"))


def test_a_stream_stopped_in_a_micro_batch_ends_its_epoch_without_a_count():
    world = World([lambda w: Finished(w, 1, {"0": _sent(10), "1": _sent(10)}),
                   lambda w: Running(w, 2, 6)])
    world.run_until(world.in_flight.is_set)
    world.stop()
    report = world.feeding.result(timeout=0)
    assert report.stopped
    assert world.read == {"worker:0": 16, "worker:1": 10}  # no false mismatch raised


def _world_whose_first_micro_batch_missed_worker_1() -> World:
    """The stream's first micro-batch could not reach worker 1; its second is running."""
    unreachable = _sent(0, "unreachable", cause="could not connect to the feed server",
                        address="10.0.0.2:4000")
    world = World([lambda w: Finished(w, 1, {"0": _sent(5), "1": unreachable}),
                   lambda w: Running(w, 2, 0)])
    world.run_until(world.in_flight.is_set)
    return world


_UNREACHED = r"could not reach worker:1 .*feed server 10\.0\.0\.2:4000.*executor-7"


def test_a_worker_a_micro_batch_could_not_reach_fails_the_stopped_stream():
    world = _world_whose_first_micro_batch_missed_worker_1()
    world.stop()
    with pytest.raises(ClusterError, match=_UNREACHED):
        world.feeding.result(timeout=0)
    assert all(isinstance(world.read[n], ClusterError) for n in NODES)
    assert UNREACHED_GRACE < 20  # the grace passed in the schedule's clock, not in real time


def test_a_worker_a_micro_batch_could_not_reach_fails_the_running_stream():
    world = _world_whose_first_micro_batch_missed_worker_1()
    world.run_until(lambda: world.call.over, tick=1.0)  # no stop: the stream goes on
    with pytest.raises(ClusterError, match=_UNREACHED):
        world.feeding.result(timeout=0)
    for thread in world._threads:
        thread.join(10)
    assert all(isinstance(world.read[n], ClusterError) for n in NODES)


class _RefusedWriter(_Writer):
    def start(self):
        raise ValueError("Value for processingTime must be a non empty string")


class RefusedWorld(World):
    """A stream whose query does not start (say a bad ``trigger``)."""

    @property
    def writeStream(self):  # noqa: N802 - pyspark's name
        return _RefusedWriter()


def test_a_stream_whose_query_cannot_start_fails_its_own_call_with_the_cause_and_nothing_else():
    world = RefusedWorld([])
    for node in NODES:
        world.demands[node]["events"] = 1
    world.run_until(lambda: world.call.over)
    with pytest.raises(ClusterError, match="could not start.*processingTime"):
        world.feeding.result(timeout=0)
    assert world.schedule.error is None  # the cluster's other feeds go on
    later = Call("train", object(), 1, Feeding())
    world.schedule.add(later)
    assert not later.feeding.done()
    world.stop()
    assert all(isinstance(world.read[n], ClusterError) for n in NODES)


class _FailingQuery(_Query):
    """A query that runs one micro-batch once :data:`_GO` is set and ends with its exception,
    as Spark's does."""

    def _run(self, fn) -> None:
        self.error = None
        _GO.wait(10)
        try:
            fn(object(), 0)
        except Exception as e:  # noqa: BLE001 - the query's exception
            self.error = e

    def exception(self):
        return self.error


_GO = threading.Event()


class _FailingWriter(_Writer):
    def start(self):
        return _FailingQuery(self.fn)


class FailingWorld(World):
    @property
    def writeStream(self):  # noqa: N802 - pyspark's name
        return _FailingWriter()


class Failed(BaseJob):
    """A micro-batch's feeding job that failed."""

    def __init__(self, world: World) -> None:
        super().__init__(lambda: None)
        self.end(error=RuntimeError("Job aborted: a feeding task failed 4 times"))

    def cancel(self) -> None:
        pass


def test_a_stream_that_failed_before_a_stop_fails_the_stopped_call_with_its_error():
    # The query's failure and Feeding.stop() reach the schedule in the same step: the stop
    # must not end the epoch as fed and hide the failure.
    world = FailingWorld([Failed])
    world.run_until(lambda: bool(world.call.inflight) and world.call.inflight[0].job is not None)
    job = world.call.inflight[0].job
    _GO.set()
    assert job.wait(10) and job.error is not None
    world.stop()
    with pytest.raises(ClusterError, match="the stream failed: .*Job aborted"):
        world.feeding.result(timeout=0)
    assert all(isinstance(world.read[n], ClusterError) for n in NODES)


class _Frame:
    """A micro-batch's DataFrame, as the equal-share rule persists it."""

    def persist(self) -> None:
        pass

    def unpersist(self) -> None:
        pass


class _SyncQuery(_Query):
    def __init__(self, fn) -> None:
        super().__init__(lambda df, batch: fn(_Frame(), batch))


class _SyncWriter(_Writer):
    def start(self):
        return _SyncQuery(self.fn)


class SyncWorld(World):
    """``mode="sync"``: each micro-batch of 5 records is counted for the 2 workers (1 dropped)."""

    equal = True

    def make_plan(self, df, record_type):
        return type("Plan", (), {"dropped": 1})()

    @property
    def writeStream(self):  # noqa: N802 - pyspark's name
        return _SyncWriter()


def test_a_synchronous_stream_drops_each_micro_batchs_remainder_so_its_epoch_may_drop_more():
    # What docs/feeding.md ("Streams") and the rules state: the equal-share rule applies per
    # micro-batch, so one stream epoch may drop W - 1 records per micro-batch, W or more in all.
    world = SyncWorld([lambda w: Finished(w, 1, {"0": _sent(2), "1": _sent(2)}),
                       lambda w: Finished(w, 2, {"0": _sent(2), "1": _sent(2)}),
                       lambda w: Running(w, 3, 0)])
    world.run_until(world.in_flight.is_set)
    world.stop()
    (epoch,) = world.feeding.result(timeout=0).epochs
    assert (epoch.jobs, epoch.dropped) == (2, 3)  # 3 micro-batches planned, 2 fed whole
    assert epoch.dropped >= len(NODES)
