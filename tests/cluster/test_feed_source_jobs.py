"""The feed source's FeedJob, driven with a fake session: a feed's jobs run one after the other,
a job cancelled while queued is never submitted, and a cancel interrupts the job's tag again
and again until its collect returns, also when the first interrupts come before the driver has
seen the job. And a call's plan, made with a fake session: its temporary view and the feed's key
leave the session when the plan fails, or when its planning is cancelled."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from tfrecord_io.cluster.feed.job import BaseJob
from tfrecord_io.cluster.feed.source import FeedJob, FeedRunner
from tfrecord_io.errors import ClusterError

WAIT = 10  # seconds; only ever reached when a test fails


class FakeSession:
    """A session's job tags (:class:`~tfrecord_io.cluster.application.JobTags`): jobs tagged as
    Spark's are (per thread); with *tracks*, it tells when a tagged job has reached the
    scheduler (a classic session's status tracker), else it cannot tell (Spark Connect)."""

    def __init__(self, tracks: bool = False) -> None:
        self.tags: dict[int, set[str]] = {}
        self.interrupts: list[str] = []
        self.frames: list[FakeFrame] = []
        self.tracks = tracks

    def describe(self, group: str, description: str) -> None:
        pass

    def add(self, tag: str) -> None:
        self.tags.setdefault(threading.get_ident(), set()).add(tag)

    def remove(self, tag: str) -> None:
        self.tags[threading.get_ident()].discard(tag)

    def interrupt(self, tag: str) -> None:
        self.interrupts.append(tag)
        for frame in self.frames:
            frame.interrupt(tag)

    def submitted(self, tag: str) -> bool | None:
        if not self.tracks:
            return None
        return any(f.seen.is_set() and tag in f.tag for f in self.frames)


class FakeFrame:
    """A feed source read: its collect blocks until released or interrupted. The driver sees
    the job only once *seen* is set: interrupts before that are lost, as in Spark."""

    def __init__(self, session: FakeSession, summaries: list[str], seen: bool = True) -> None:
        self.sparkSession = session
        self.summaries = summaries
        self.submitted = threading.Event()
        self.seen = threading.Event()
        self.release = threading.Event()
        self.interrupted = threading.Event()
        self.missed = threading.Event()  # an interrupt came before the driver saw the job
        self.tag: set[str] = set()
        if seen:
            self.seen.set()
        session.frames.append(self)

    def interrupt(self, tag: str) -> None:
        if self.seen.is_set() and tag in self.tag:
            self.interrupted.set()
        elif tag in self.tag:
            self.missed.set()

    def collect(self) -> list[SimpleNamespace]:
        self.tag = set(self.sparkSession.tags.get(threading.get_ident(), ()))
        self.submitted.set()
        while not self.release.wait(0.01):
            if self.interrupted.is_set():
                raise RuntimeError("OPERATION_CANCELED")
        return [SimpleNamespace(task=t) for t in self.summaries]


def _job(frame: FakeFrame, tag: str = "t1", after: BaseJob | None = None) -> FeedJob:
    return FeedJob(frame, tag, "train", 1, after, wake=lambda: None, tags=frame.sparkSession)


def test_a_job_collects_its_tasks_summaries_under_its_tag():
    session = FakeSession()
    frame = FakeFrame(session, ['{"records": 3}', '{"records": 4}'])
    job = _job(frame, tag="feed-7")
    assert frame.submitted.wait(WAIT)
    frame.release.set()
    assert job.wait(WAIT)
    assert job.error is None and job.value == [{"records": 3}, {"records": 4}]
    assert frame.tag == {"feed-7"}
    assert all(not tags for tags in session.tags.values())  # the tag is removed after


def test_where_spark_cannot_tell_a_queued_job_is_submitted_when_the_previous_one_ends():
    session = FakeSession()
    first, second = FakeFrame(session, []), FakeFrame(session, [])
    running = _job(first, "t1")
    queued = _job(second, "t2", after=running)
    assert first.submitted.wait(WAIT)
    assert not second.submitted.wait(0.2)
    first.release.set()
    assert second.submitted.wait(WAIT)
    second.release.set()
    assert queued.wait(WAIT) and queued.error is None


def test_where_spark_tells_a_queued_job_is_submitted_once_the_previous_one_reached_it():
    # A classic session: the next epoch's job waits in Spark's queue behind the running one,
    # so its tasks start as that one's end.
    session = FakeSession(tracks=True)
    first, second = FakeFrame(session, []), FakeFrame(session, [], seen=False)
    running = _job(first, "t1")
    queued = _job(second, "t2", after=running)
    assert second.submitted.wait(WAIT)
    assert not running.done()
    first.release.set()
    second.release.set()
    assert queued.wait(WAIT) and queued.error is None


def test_where_spark_tells_a_job_queued_behind_one_not_yet_submitted_waits_for_it():
    session = FakeSession(tracks=True)
    first, second = FakeFrame(session, [], seen=False), FakeFrame(session, [])
    running = _job(first, "t1")
    queued = _job(second, "t2", after=running)
    assert first.submitted.wait(WAIT)
    assert not second.submitted.wait(0.2)  # its predecessor has not reached the scheduler
    first.seen.set()
    assert second.submitted.wait(WAIT)
    first.release.set()
    second.release.set()
    assert queued.wait(WAIT)


def test_a_job_cancelled_while_queued_ends_at_once_and_is_never_submitted():
    session = FakeSession()
    first, second = FakeFrame(session, []), FakeFrame(session, [])
    running = _job(first, "t1")
    queued = _job(second, "t2", after=running)
    queued.cancel()
    assert queued.done()
    assert isinstance(queued.error, ClusterError)
    first.release.set()
    assert running.wait(WAIT)
    assert not second.submitted.wait(0.2)


def test_cancelling_a_running_job_interrupts_its_tag_and_ends_it_cancelled():
    session = FakeSession()
    frame = FakeFrame(session, [])
    job = _job(frame, "t1")
    assert frame.submitted.wait(WAIT)
    job.cancel()
    assert job.wait(WAIT)
    assert isinstance(job.error, ClusterError) and "cancelled" in str(job.error)
    assert session.interrupts[0] == "t1"


def test_a_cancel_before_spark_has_seen_the_job_is_repeated_until_it_takes():
    session = FakeSession()
    frame = FakeFrame(session, [], seen=False)
    job = _job(frame, "t1")
    assert frame.submitted.wait(WAIT)
    job.cancel()
    assert frame.missed.wait(WAIT)  # the first interrupt is lost: Spark has not seen the job
    assert not job.done()
    frame.seen.set()
    assert job.wait(WAIT)
    assert isinstance(job.error, ClusterError)
    assert len(session.interrupts) >= 2


def test_a_job_that_fails_on_its_own_ends_with_sparks_error():
    class Failing(FakeFrame):
        def collect(self):
            raise RuntimeError("executor lost")

    job = _job(Failing(FakeSession(), []), "t1")
    assert job.wait(WAIT)
    assert isinstance(job.error, RuntimeError) and "executor lost" in str(job.error)


@pytest.mark.parametrize("ended_first", [True, False])
def test_done_callbacks_run_once_whether_added_before_or_after_the_end(ended_first):
    outcome, calls = BaseJob(lambda: None), []
    if ended_first:
        outcome.end(1)
    outcome.add_done_callback(calls.append)
    if not ended_first:
        assert calls == []
        outcome.end(1)
    assert calls == [outcome]


def test_a_job_whose_tagging_fails_ends_with_that_error_instead_of_never_ending():
    class Stopped(FakeSession):  # a SparkContext stopped meanwhile
        def describe(self, group, description):
            raise AttributeError("'NoneType' object has no attribute 'setJobGroup'")

    frame = FakeFrame(Stopped(), [])
    job = _job(frame, "t1")
    assert job.wait(WAIT)
    assert isinstance(job.error, AttributeError) and "setJobGroup" in str(job.error)
    assert not frame.submitted.is_set()


# -- a call's plan: its view and key live exactly as long as the call -------------------------


class PlanSession:
    """A session as :meth:`FeedRunner.make_plan` uses it: its conf, its temporary views, reads
    of the feed source (the count, which may fail or block, and the release)."""

    def __init__(self, count_error: BaseException | None = None) -> None:
        self.conf = self  # conf.set / conf.unset
        self.values: dict[str, str] = {}
        self.views: set[str] = set()
        self.count_error = count_error
        self.counting = threading.Event()
        self.count_done = threading.Event()
        self.read = self  # read.format(...).options(...).load()

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)

    def format(self, source: str) -> PlanSession:
        return self

    def options(self, view: str, action: str, **options: object) -> SimpleNamespace:
        return SimpleNamespace(load=lambda: SimpleNamespace(
            collect=lambda: self._collect(view, action)))

    def _collect(self, view: str, action: str) -> list[SimpleNamespace]:
        if action == "release":
            self.views.discard(view)
            return []
        assert action == "count"
        self.counting.set()
        assert self.count_done.wait(WAIT)
        if self.count_error is not None:
            raise self.count_error
        return [SimpleNamespace(partition=0, rows=4)]


class PlanFrame:
    """A classic DataFrame (it has a ``_jdf``) of a :class:`PlanSession`."""

    def __init__(self, session: PlanSession) -> None:
        self._jdf = object()
        self.schema = object()
        self.sparkSession = session

    def createOrReplaceTempView(self, view: str) -> None:  # noqa: N802 - pyspark's name
        self.sparkSession.views.add(view)


def _runner(free_slots: int = 4) -> FeedRunner:
    application = SimpleNamespace(kind="classic", master="local[4]",
                                  free_slots=lambda: free_slots,
                                  conf=lambda key, default=None: default)
    return FeedRunner(application, "feed-key", ["h:1", "h:2"], True, "g", 2, lambda: None,
                      names=["worker:0", "worker:1"], attempt=0)


def test_a_plan_whose_count_fails_leaves_no_view_and_no_key_in_the_session():
    session = PlanSession(count_error=RuntimeError("the source failed"))
    session.count_done.set()
    with pytest.raises(RuntimeError, match="the source failed"):
        _runner().make_plan(PlanFrame(session), "Example")
    assert session.views == set()
    assert session.values == {}


def test_a_plan_with_no_task_slot_for_feeding_leaves_no_view_and_no_key_in_the_session():
    session = PlanSession()
    with pytest.raises(ClusterError, match="needs a task slot for feeding"):
        _runner(free_slots=2).make_plan(PlanFrame(session), "Example")
    assert session.views == set()
    assert session.values == {}


@pytest.mark.parametrize("made_first", [True, False])
def test_a_planning_cancelled_frees_its_plan_once_made(made_first):
    session = PlanSession()
    call = SimpleNamespace(feed="train", data=PlanFrame(session), record_type="Example",
                           keep=True)
    job = _runner().plan(call)
    assert session.counting.wait(WAIT)
    if made_first:
        session.count_done.set()
        assert job.wait(WAIT)
        job.cancel()  # e.g. Feeding.stop() before the schedule took the plan
    else:
        job.cancel()  # e.g. train(..., timeout=...) while the data is being counted
        session.count_done.set()
    deadline = time.monotonic() + WAIT
    while session.views or session.values:
        assert time.monotonic() < deadline, "the cancelled planning's view and key were kept"
        time.sleep(0.01)
