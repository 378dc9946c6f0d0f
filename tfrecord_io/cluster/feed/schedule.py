"""The driver's feeding state machine: which epoch of which feed is fed when, in one place.

:class:`FeedSchedule` holds every ``Cluster.train`` call of one attempt (:class:`Call`) and the
state of each of their epochs (:class:`EpochState`). It has no thread, no lock and no Spark:
it sees the world through two small interfaces, the links to the nodes (:class:`Links`: who
reads which feed, which epoch each node asked for, which node is gone; markers sent to the
nodes) and the job runner (:class:`Runner`: plan a call's batches, submit an epoch's feeding
job, cancel it, tell whether it is done), and every change happens in :meth:`FeedSchedule.step`.
The coordinator (:mod:`~tfrecord_io.cluster.feed.coordinator`) calls ``step`` from one thread
whenever something may have changed; the tests call it with fakes through thousands of
interleavings (``tests/cluster/test_feed_schedule.py``).

The states of one epoch, and the only transitions between them (:data:`TRANSITIONS`; every
change goes through :meth:`Epoch.move`, which refuses any other)::

    WAITING  --every reader asked-->            PLANNING (the call's first epoch: batches
                                                          are made, counted in sync mode)
    WAITING  --every reader asked-->            FEEDING  (its job submitted)
    WAITING  --the call's previous epoch fed,
               its batches kept, no node waits
               for another feed-->              AHEAD    (its job submitted before it is asked)
    PLANNING --planned-->                       FEEDING
    AHEAD    --every reader asked-->            FEEDING  (from then on it is never given up)
    AHEAD    --a node waits for another feed's
               epoch not fed yet-->             WAITING  (given way: its job cancelled; fed
                                                          again once asked, nodes keep the
                                                          batches they have and drop repeats)
    AHEAD, FEEDING --job done-->                FED      (end markers sent, in epoch order)
    any live state --Feeding.stop()-->          STOPPED  (job cancelled, end markers "unsure")
    WAITING  --Feeding.stop(), no node asked,
               no job ever fed it-->            WITHDRAWN (no marker; its number is the feed's
                                                          next call's)
    AHEAD, WAITING (gave way) --Feeding.stop(),
               no node asked-->                 WITHDRAWING (job cancelled; ``withdraw_epoch``
                                                          sent: nodes drop its batches)
    WITHDRAWING --every node withdrew it-->     WITHDRAWN
    WITHDRAWING --a node's reader had begun it-->
                                                STOPPED  (end markers "unsure": read short)
    any live state --failure-->                 FAILED   (job cancelled, fail markers sent)
    WAITING  --no node reads the feed-->        UNREAD   (the call ends: nobody would read it)

Why it cannot stall:

* a cancel always takes effect: a job is submitted synchronously by :meth:`Runner.send_epoch`
  (it is in Spark's queue when the call returns), so there is no window in which a cancel
  could come before the job exists; a job the schedule decided not to run is never submitted;
* only AHEAD jobs may wait on nodes that read something else, and an AHEAD job gives way as
  soon as any node waits for an epoch of another feed that is not fed: so the task slots are
  free for the job (or the planning) that the nodes wait for;
* a FEEDING job's readers have all asked for its epoch, so its batches are taken and it ends;
* what no call feeds cannot be fed: readers that wait for such a feed's epoch hold up every
  call whose epoch they have not asked for, and the log says so after
  :data:`STALL_WARNING`.

Why no record is fed twice or lost when an epoch gives way: only a call whose batches are kept
(:attr:`Call.keep`) is fed ahead, and its jobs send the very batches they sent before, so the
nodes' dropping of repeats is exact. A call without kept batches reads its DataFrame anew in
each job (one that reshuffles itself reads differently every time), so it is never fed ahead:
its epochs are submitted once asked, as FEEDING, and never given up.

Failure has one path: :meth:`FeedSchedule.fail` (the attempt failed with no attempt to
follow, the cluster was shut down, a node's link broke and the cluster did not say why within
the grace, or a feeding job failed) cancels every job, sends the fail markers and ends every
call with the error. A call whose own data fails (a partition changed since it was counted)
fails alone.

Restarts are an input too. A schedule told that its attempt may be followed by another
(``restartable``) does not end its calls when that attempt fails: it *suspends*
(:meth:`FeedSchedule.step` sees the failure): every job is cancelled, every live epoch FAILED,
and every call not stopped, also those already fed to the failed attempt (the new nodes start
over), goes back before its first epoch, its batches freed; a stream's call fails (its query's
progress is gone with the attempt). :meth:`FeedSchedule.restart` gives the schedule the next
attempt's links and runner, and the calls are fed to it from their first epoch, in their
order; :meth:`FeedSchedule.fail` ends them when no attempt follows. A call whose epochs were
all fed while a node of a restartable attempt broke is not complete: the attempt's failure is
on its way, and the call is fed again after it (or fails after the grace, as above).
"""

from __future__ import annotations

import enum
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tfrecord_io.cluster.feed.reports import EpochReport, Feeding, FeedReport
from tfrecord_io.cluster.messages import EndEpoch, FailEpoch, Message, WithdrawEpoch
from tfrecord_io.errors import ClusterError

__all__ = ["TRANSITIONS", "Call", "Epoch", "EpochState", "FeedSchedule", "Job", "Links",
           "Runner"]

log = logging.getLogger("tfrecord_io.cluster")

#: After a node's link broke, how long to wait for the cluster to report the failure before
#: naming it without details.
FAILURE_GRACE = 8.0
#: After a feeding job found a worker's feed server unreachable, how long to wait for the
#: node's link to say that its ``main_fun`` ended (then the rest of that worker's data is the
#: documented drop) before the epoch fails, naming the worker.
UNREACHED_GRACE = 5.0
#: How long an epoch waits for readers that wait, themselves, for an epoch of a feed that no
#: ``train`` call feeds (a misspelt name, or two feeds read in turns but fed by blocking calls
#: one after the other: neither side can go on) before the log says so, once per epoch.
STALL_WARNING = 30.0


class EpochState(enum.Enum):
    """The state of one epoch of one ``train`` call (see the module docs)."""

    WAITING = "waiting"
    PLANNING = "planning"
    AHEAD = "ahead"
    FEEDING = "feeding"
    FED = "fed"
    STOPPED = "stopped"
    FAILED = "failed"
    UNREAD = "unread"
    WITHDRAWING = "withdrawing"
    WITHDRAWN = "withdrawn"

    @property
    def live(self) -> bool:
        """Whether the epoch may still change."""
        return self in _LIVE


_LIVE = {EpochState.WAITING, EpochState.PLANNING, EpochState.AHEAD, EpochState.FEEDING,
         EpochState.WITHDRAWING}

_S = EpochState
#: Every transition an epoch may make (the table of the module docs); :meth:`Epoch.move` makes
#: each change and refuses any other, so the seeded runs of the tests check every transition.
TRANSITIONS: frozenset[tuple[EpochState, EpochState]] = frozenset({
    (_S.WAITING, _S.PLANNING),
    (_S.WAITING, _S.FEEDING),
    (_S.WAITING, _S.AHEAD),
    (_S.PLANNING, _S.FEEDING),
    (_S.AHEAD, _S.FEEDING),
    (_S.AHEAD, _S.WAITING),
    (_S.AHEAD, _S.FED),
    (_S.FEEDING, _S.FED),
    (_S.WAITING, _S.UNREAD),
    (_S.WAITING, _S.WITHDRAWN),
    (_S.WAITING, _S.WITHDRAWING),
    (_S.AHEAD, _S.WITHDRAWING),
    (_S.WITHDRAWING, _S.WITHDRAWN),
    *((live, _S.STOPPED) for live in _LIVE),
    *((live, _S.FAILED) for live in _LIVE),
})


class Job(Protocol):
    """A unit of Spark work the runner started: a call's planning, an epoch's feeding job, or
    a stream's query."""

    def done(self) -> bool:
        """Whether it has ended (succeeded, failed or was cancelled)."""

    def cancel(self) -> None:
        """Cancel it, whatever its state; returns at once."""

    @property
    def error(self) -> BaseException | None:
        """Why the ended job failed (or was cancelled); None if it succeeded."""

    @property
    def value(self) -> Any:
        """The ended job's result: a planning's plan, a feeding job's task reports."""


class Runner(Protocol):
    """Spark, as the schedule uses it."""

    def plan(self, call: Call) -> Job:
        """Start making *call*'s batches; the job's value is the plan (``dropped``,
        ``per_worker``: the records each worker gets per epoch in sync mode, else None;
        ``job``: the number its batches carry, which a withdrawal names)."""

    def send_epoch(self, call: Call, epoch: int) -> Job:
        """Submit the feeding job of *epoch* of *call* (``call.plan``'s batches): it is in
        Spark's queue when this returns. Its value: the task reports."""

    def stream(self, call: Call, epoch: int, result: EpochReport) -> Job:
        """Start feeding *call*'s streaming DataFrame as *epoch* (adding to *result*)."""

    def release(self, call: Call) -> None:
        """*call* is over: free its kept batches."""


class Links(Protocol):
    """The nodes, as the schedule uses them (:class:`~tfrecord_io.cluster.feed.links
    .FeedLinks`)."""

    nodes: list[str]

    def readers(self, feed: str) -> list[str]:
        """The nodes that may still read *feed*."""

    def asked(self, node: str, feed: str) -> int:
        """The last epoch of *feed* that *node* asked for (0: none)."""

    def gone(self, node: str) -> str | None:
        """Why *node* reads no more (``finished``, ``failed``, ``lost``...), or None."""

    def awaited_elsewhere(self, feed: str, done: dict[str, int]) -> bool:
        """Whether a node still up waits for an epoch of a feed other than *feed* that has
        not ended (*done*: per feed, the last epoch ended)."""

    def awaited(self, node: str) -> dict[str, int]:
        """Per feed that *node*'s reader has not left, the last epoch it asked for."""

    def send(self, node: str, message: Message) -> None:
        """Send a marker to *node* (nothing if its link is down)."""

    def withdrawn(self, node: str, feed: str, epoch: int, job: int) -> bool | None:
        """*node*'s answer to the withdrawal of *epoch* of *feed* fed by *job* (True:
        withdrawn; False: its reader had begun it), or None while there is none (an answer
        names the job: the same epoch number may be withdrawn again, from a later call)."""


@dataclass
class Epoch:
    """One epoch of a call: its number (per feed), state, job and report."""

    number: int
    state: EpochState = EpochState.WAITING
    job: Job | None = None
    gave_way: int = 0  #: times its job gave its slots up
    #: when its ended job was found to have missed a worker whose node still reads
    unreached_since: float | None = None
    #: since when its readers wait for a feed that no call feeds (see :data:`STALL_WARNING`)
    stalled_since: float | None = None
    stall_told: bool = False  #: whether the log said so
    stop_cancelled: bool = False  #: a stream's: whether ``Feeding.stop()`` stopped its query
    result: EpochReport = field(init=False)

    def __post_init__(self) -> None:
        self.result = EpochReport(self.number)

    def move(self, state: EpochState) -> None:
        """Change to *state*, one of :data:`TRANSITIONS` from the current state.

        Raises:
            AssertionError: not a transition of the schedule (a bug in it).
        """
        if (self.state, state) not in TRANSITIONS:
            raise AssertionError(f"epoch {self.number}: {self.state.name} -> {state.name} is "
                                 "not a transition of the feeding schedule")
        self.state = state


@dataclass(eq=False)
class Call:
    """One ``Cluster.train`` call: *epochs* epochs of *data* fed as *feed*."""

    feed: str
    data: Any
    epochs: int
    feeding: Feeding
    record_type: str = "Example"
    cache: bool = True
    streaming: bool = False
    trigger: dict[str, Any] | None = None
    report: FeedReport = field(init=False)
    plan: Any = None  #: the batches (set once planned)
    planning: Job | None = None
    inflight: list[Epoch] = field(default_factory=list)  #: the current epoch, then ones queued
    started: int = 0  #: epochs given a number so far
    over: bool = False

    def __post_init__(self) -> None:
        self.report = FeedReport(self.feed)

    def restart(self) -> None:
        """Back before its first epoch, for a new attempt: no batches, nothing in flight, a
        new report (the caller keeps the one it may have had)."""
        self.report = FeedReport(self.feed)
        self.plan = None
        self.planning = None
        self.inflight = []
        self.started = 0
        self.over = False

    @property
    def keep(self) -> bool:
        """Whether the batches are kept for the later epochs (made once)."""
        return self.cache and self.epochs > 1 and not self.streaming


class FeedSchedule:
    """Every feeding of one attempt (see the module docs).

    Args:
        links: the nodes.
        runner: Spark.
        equal: the equal-share rule (``mode="sync"``): what a worker did not get was dropped.
        failure: the attempt's failure so far, or None.
        clock: seconds, monotonic (the tests pass their own).
        restartable: whether another attempt may follow this one (then its failure suspends
            the schedule instead of failing it; see the module docs).
    """

    def __init__(self, links: Links, runner: Runner, equal: bool,
                 failure: Callable[[], ClusterError | None],
                 clock: Callable[[], float] = time.monotonic, *,
                 restartable: bool = False) -> None:
        self._links = links
        self._runner = runner
        self._equal = equal
        self._failure = failure
        self._restartable = restartable
        self._clock = clock
        self._calls: dict[str, deque[Call]] = {}
        self._completed: list[Call] = []  # calls fed to this attempt, fed again to the next
        self._numbers: dict[str, int] = {}  # per feed, the last epoch number given
        self._done: dict[str, int] = {}  # per feed, the last epoch whose end was sent
        self._lost_since: float | None = None
        self.error: ClusterError | None = None  #: set once the schedule failed
        #: the failure of the attempt fed, while the schedule waits for the next one
        self.suspended: ClusterError | None = None

    # -- inputs --------------------------------------------------------------------------------

    def add(self, call: Call) -> None:
        """A new ``train`` call; fed after the earlier calls of its feed."""
        if self.error is not None:
            self._end(call, self.error)
            return
        self._calls.setdefault(call.feed, deque()).append(call)

    def calls(self) -> list[Call]:
        """The calls not over yet."""
        return [c for q in self._calls.values() for c in q]

    def fail(self, error: ClusterError) -> None:
        """End everything with *error*: every job cancelled, every live epoch failed on the
        nodes, every call raising *error*."""
        if self.error is None:
            self.error = error
        for queue in self._calls.values():
            while queue:
                call = queue.popleft()
                self._fail_inflight(call, error)
                self._end(call, error)
        self._completed.clear()

    def restart(self, links: Links, runner: Runner, failure: Callable[[], ClusterError | None],
                *, restartable: bool = False) -> None:
        """The next attempt runs: its *links*, *runner* and *failure* replace the failed
        attempt's, and every call suspended is fed to it from its first epoch (see the module
        docs). Calls that the failed attempt's schedule had ended stay ended; new calls are
        fed to the new attempt."""
        if self.error is None and self.suspended is None:  # restarted before a step saw why
            self._suspend(self._failure() or ClusterError("the attempt was restarted"))
        self.error = None
        self._links, self._runner, self._failure = links, runner, failure
        self._restartable = restartable
        self._numbers.clear()
        self._done.clear()
        self._lost_since = None
        self.suspended = None
        log.info("feeding %d call(s) again to the new attempt", len(self.calls()))

    def _suspend(self, error: ClusterError) -> None:
        """The attempt failed and another may follow: every job cancelled, every live epoch
        failed on the nodes, every call not stopped back before its first epoch (those fed
        already too), streams failed."""
        self.suspended = error
        log.info("the attempt fed failed; its feeding waits for the next one: %s", error)
        again: dict[str, deque[Call]] = {}
        fed, self._completed = self._completed, []
        for call in fed + [c for q in self._calls.values() for c in q]:
            self._fail_inflight(call, error)
            if call.feeding.stopping and call.over:
                continue  # fed and stopped since: not fed again
            if call.streaming:
                self._end(call, ClusterError(
                    f"feed {call.feed!r}: the attempt it fed failed and a stream cannot be fed "
                    "again to the next attempt (start its query again with a new train() "
                    "call)"))
                continue
            if call.plan is not None:
                self._runner.release(call)
            call.restart()
            again.setdefault(call.feed, deque()).append(call)
        self._calls = again

    def _fail_inflight(self, call: Call, error: ClusterError) -> None:
        """Every live epoch of *call* FAILED (its job cancelled; fail markers sent for the
        epoch being read and those already submitted), its planning cancelled."""
        for epoch in call.inflight:
            self._cancel(epoch)
            if epoch.state is not EpochState.WAITING or epoch is call.inflight[0]:
                self._markers(FailEpoch(feed=call.feed, epoch=epoch.number, reason=str(error)))
            epoch.move(EpochState.FAILED)
        call.inflight.clear()
        if call.planning is not None:
            call.planning.cancel()
            call.planning = None

    # -- the one place where things change ----------------------------------------------------

    def step(self) -> None:
        """Look at the nodes, the jobs and the calls, and make every transition now due."""
        if self.error is not None:
            return
        if self.suspended is not None:
            self._stop_suspended()
            return
        failure = self._failure()
        if failure is not None and self._restartable:
            self._suspend(failure)
            return
        error = failure or self._cluster_failure()
        if error is not None:
            self.fail(error)
            return
        for queue in self._calls.values():
            while queue:
                call = queue[0]
                try:
                    self._advance(call)
                except ClusterError as e:
                    if self.error is not None:  # the whole schedule failed meanwhile
                        return
                    self._fail_call(call, e)
                if not call.over:
                    break
                queue.popleft()
            if self.error is not None:
                return

    def _advance(self, call: Call) -> None:
        if call.feeding.stopping:
            self._stop(call)
            return
        while not call.over:
            if not call.inflight:
                if call.started == call.epochs:
                    if self._restartable and self._broken():
                        return  # a node broke while fed: complete only if no restart follows
                    self._finish(call)
                    return
                self._new_epoch(call)
            if not self._advance_epoch(call, call.inflight[0]):
                break
        for epoch in call.inflight[1:]:  # jobs queued behind the current one
            self._give_way_if_awaited(call, epoch)

    def _advance_epoch(self, call: Call, epoch: Epoch) -> bool:
        """Move the call's current *epoch* on; whether it ended (the next may go on)."""
        feed = call.feed
        if epoch.state is EpochState.WAITING:
            readers = self._links.readers(feed)
            if not readers:
                epoch.move(EpochState.UNREAD)
                log.info("no node reads feed %r any more: %d epoch(s) not fed", feed,
                         call.epochs - len(call.report.epochs))
                call.inflight.clear()
                self._finish(call)
                return False
            missing = [n for n in readers if self._links.asked(n, feed) < epoch.number]
            if missing:
                self._tell_if_stalled(call, epoch, missing)
                return False
            log.debug("every reader asked for epoch %d of %r", epoch.number, feed)
            if call.streaming:
                epoch.job = self._runner.stream(call, epoch.number, epoch.result)
                epoch.move(EpochState.FEEDING)
            elif call.plan is None:
                call.planning = self._runner.plan(call)
                epoch.move(EpochState.PLANNING)
            else:
                self._submit(call, epoch, EpochState.FEEDING)
        if epoch.state is EpochState.PLANNING:
            job = call.planning
            assert job is not None
            if not job.done():
                return False
            call.planning = None
            if job.error is not None:
                raise self._job_error(call, epoch, job.error, "making the batches of")
            call.plan = job.value
            self._submit(call, epoch, EpochState.FEEDING)
        if epoch.state not in (EpochState.AHEAD, EpochState.FEEDING):
            return False
        job = epoch.job
        assert job is not None
        if not job.done():
            if call.streaming:  # a micro-batch that missed a worker fails the stream now
                self._all_reached(call, epoch, job)
            self._give_way_if_awaited(call, epoch)
            return False
        if job.error is not None:
            if self._broken():  # the node's failure is the cause: step() names it
                return False
            raise self._job_error(call, epoch, job.error, "feeding")
        if not self._all_reached(call, epoch, job):
            return False
        self._fed(call, epoch, job)
        return True

    def _all_reached(self, call: Call, epoch: Epoch, job: Job) -> bool:
        """Whether *job*'s tasks reached every worker that still reads: a worker they could
        not reach is data lost, unless its node's ``main_fun`` ended (its link says so within
        :data:`UNREACHED_GRACE`; then it is the documented drop of a worker that returned).

        Raises:
            ClusterError: a worker whose node still reads was not reached, naming it, its feed
                server, the feeding task's host and the cause.
        """
        # A stream's micro-batches add their tasks from Spark's thread: read a copy.
        tasks = list(epoch.result.tasks) if call.streaming else (job.value or [])
        missed = [(int(w), task, sent) for task in tasks
                  for w, sent in task["workers"].items()
                  if sent.get("state") == "unreachable"
                  and self._links.gone(self._links.nodes[int(w)]) is None]
        if not missed:
            return True
        now = self._clock()
        if epoch.unreached_since is None:
            epoch.unreached_since = now
        if now - epoch.unreached_since < UNREACHED_GRACE:
            return False
        w, task, sent = missed[0]
        node = self._links.nodes[w]
        where = (f"{node} (worker {w}, feed server {sent.get('address', '?')}) from the "
                 f"feeding task on {task.get('host', '?')}: "
                 f"{sent.get('cause') or 'no cause given'}; the epoch failed rather than lose "
                 "that worker's data")
        if sent.get("idle"):  # connected, then no byte moved for the feeding task's idle timeout
            raise ClusterError(
                f"feeding epoch {epoch.number} of feed {call.feed!r} gave up on {where} (a "
                f"worker that reads no batch for {sent['idle']:g} s holds its feeding task "
                "back; set the Spark configuration spark.tfrecordio.feed.idleTimeout, in "
                "seconds, above the longest time a worker spends between two epochs)",
                node=node)
        raise ClusterError(
            f"feeding epoch {epoch.number} of feed {call.feed!r} could not reach {where} (is "
            "the node's host reachable from the executors? a firewall between executors?)",
            node=node)

    def _tell_if_stalled(self, call: Call, epoch: Epoch, missing: list[str]) -> None:
        """Log, once, when *epoch* (WAITING) has waited :data:`STALL_WARNING` seconds for
        readers (*missing*: those that have not asked for it) that wait for an epoch of a feed
        that no call feeds: nothing the schedule does can end that wait."""
        fed = {c.feed for c in self.calls()}
        unfed = sorted({(other, asked) for n in missing
                        for other, asked in self._links.awaited(n).items()
                        if other not in fed and asked > self._done.get(other, 0)})
        if not unfed:
            epoch.stalled_since = None
            return
        now = self._clock()
        if epoch.stalled_since is None:
            epoch.stalled_since = now
        if epoch.stall_told or now - epoch.stalled_since < STALL_WARNING:
            return
        epoch.stall_told = True
        awaited = ", ".join(f"feed {other!r} (epoch {asked})" for other, asked in unfed)
        log.warning(
            "epoch %d of feed %r has waited %.0f s for %s to ask for it, but they wait for "
            "%s, which no train() call feeds: feeding stalls until one does. Feed it with "
            "another train() call (train(..., block=False) when the workers read feeds in "
            "turns, so that both calls are running), or check the feeds' names in train() and "
            "ctx.feed()", epoch.number, call.feed, now - epoch.stalled_since,
            ", ".join(missing), awaited)

    def _new_epoch(self, call: Call) -> Epoch:
        """The call's next epoch, numbered and in flight; fed ahead when the call already fed
        one, keeps its batches and no node waits for another feed."""
        feed = call.feed
        self._numbers[feed] = self._numbers.get(feed, 0) + 1
        epoch = Epoch(self._numbers[feed])
        call.started += 1
        call.inflight.append(epoch)
        if call.started > 1 and call.keep and self._links.readers(feed) and \
                not self._awaited_elsewhere(feed):
            self._submit(call, epoch, EpochState.AHEAD)
        return epoch

    def _submit(self, call: Call, epoch: Epoch, state: EpochState) -> None:
        """Submit *epoch*'s job, as *state*. With kept batches, once the call's first epoch is
        fed, the next epoch's job is queued in Spark behind this one: it starts as this
        one's tasks end."""
        assert call.plan is not None
        epoch.job = self._runner.send_epoch(call, epoch.number)
        epoch.move(state)
        log.debug("submitted epoch %d of %r (%s)", epoch.number, call.feed, state.value)
        if (call.keep and call.started > 1 and call.started < call.epochs
                and len(call.inflight) == 1 and epoch is call.inflight[0]
                and not self._awaited_elsewhere(call.feed)):
            self._numbers[call.feed] += 1
            queued = Epoch(self._numbers[call.feed])
            call.started += 1
            queued.job = self._runner.send_epoch(call, queued.number)
            queued.move(EpochState.AHEAD)
            call.inflight.append(queued)
            log.debug("submitted epoch %d of %r (ahead, behind epoch %d)", queued.number,
                      call.feed, epoch.number)

    def _give_way_if_awaited(self, call: Call, epoch: Epoch) -> bool:
        """AHEAD -> FEEDING once every reader asked; AHEAD -> WAITING (job cancelled) when a
        node waits for another feed's epoch. Whether it gave way."""
        if epoch.state is not EpochState.AHEAD:
            return False
        readers = self._links.readers(call.feed)
        if readers and all(self._links.asked(n, call.feed) >= epoch.number for n in readers):
            epoch.move(EpochState.FEEDING)
            return False
        if not self._awaited_elsewhere(call.feed):
            return False
        log.debug("epoch %d of %r gives way to another feed", epoch.number, call.feed)
        self._cancel(epoch)
        epoch.move(EpochState.WAITING)
        epoch.gave_way += 1
        epoch.result = EpochReport(epoch.number)
        return True

    def _fed(self, call: Call, epoch: Epoch, job: Job) -> None:
        """AHEAD/FEEDING -> FED: the job's reports counted, the end markers sent."""
        result = epoch.result
        if not call.streaming:  # a stream's micro-batches counted themselves
            result.jobs += 1
            result.add_tasks(job.value)
            plan = call.plan
            result.dropped += plan.dropped
            if plan.per_worker is not None:  # counted: what was not delivered was dropped
                total = plan.per_worker * len(self._links.nodes) + plan.dropped
                result.dropped = total - sum(result.records.values())
        epoch.move(EpochState.FED)
        self._end_markers(call.feed, result)
        call.report.epochs.append(result)
        call.inflight.pop(0)
        log.info("fed epoch %d of %r: %s records (%d dropped)", epoch.number, call.feed,
                 sum(result.records.values()), result.dropped)
        if call.streaming:
            call.report.stopped = call.feeding.stopping
            self._finish(call)

    # -- the ends ------------------------------------------------------------------------------

    def _stop(self, call: Call) -> None:
        """``Feeding.stop()``: jobs cancelled, the live epochs ended short; a stream's query
        is stopped and its epoch ends as fed (an empty one if it had not begun). What was fed
        is checked as at any epoch's end: a worker that still reads and that a feeding task
        could not reach fails the call (:meth:`_all_reached`), and a job (or the planning)
        that failed before the stop's cancel fails it too (:meth:`_failed_before_stop`): a
        stop does not hide either."""
        if call.streaming:
            if not call.inflight and call.started == 0:
                self._new_epoch(call)
            epoch = call.inflight[0] if call.inflight else None
            if epoch is not None and epoch.job is not None:
                # once the stop stopped the query, an error may be the stop's own doing
                if not epoch.stop_cancelled and \
                        self._failed_before_stop(call, epoch, epoch.job, "feeding"):
                    return
                epoch.job.cancel()
                epoch.stop_cancelled = True
                if epoch.job.done() and self._all_reached(call, epoch, epoch.job):
                    self._fed(call, epoch, epoch.job)
                return
        if call.planning is not None and call.inflight and \
                self._failed_before_stop(call, call.inflight[0], call.planning,
                                         "making the batches of"):
            return
        while call.inflight:  # an epoch whose job ended before the stop counts as fed
            first = call.inflight[0]
            if first.job is None or not first.job.done():
                break
            if self._failed_before_stop(call, first, first.job, "feeding"):
                return
            if not self._all_reached(call, first, first.job):
                return  # within the grace: the next step looks again
            self._fed(call, first, first.job)
        self._withdraw_unasked(call)
        for i, epoch in enumerate(call.inflight):
            if epoch.state is EpochState.WITHDRAWING:
                continue
            had_job = epoch.job is not None
            self._cancel(epoch)
            epoch.move(EpochState.STOPPED)
            epoch.result.complete = call.streaming
            self._end_markers(call.feed, epoch.result)
            if had_job and i == 0:
                call.report.epochs.append(epoch.result)
        call.inflight[:] = [e for e in call.inflight if e.state is EpochState.WITHDRAWING]
        if call.planning is not None:
            call.planning.cancel()
            call.planning = None
        if call.inflight and not self._settle_withdrawals(call):
            return  # the next step looks at the answers again
        call.report.stopped = True
        self._finish(call)

    def _withdraw_unasked(self, call: Call) -> None:
        """The stopped *call*'s last epochs that no node asked for are withdrawn, so that their
        numbers go to the feed's next call and the readers' next epoch is that call's first,
        not a short or empty one. One that no job fed (no batch of it exists) is WITHDRAWN at
        once; a reader whose ask is still on its way waits in it for the next call's batches.
        One fed ahead (or that gave way) has batches on the nodes: it is WITHDRAWING, its job
        cancelled, and every node is asked to drop its batches (:meth:`_settle_withdrawals`
        reads the answers)."""
        for epoch in reversed(list(call.inflight)):  # a copy: the loop removes from it
            if epoch.state not in (EpochState.WAITING, EpochState.AHEAD) or any(
                    self._links.asked(n, call.feed) >= epoch.number for n in self._links.nodes):
                return
            if epoch.state is EpochState.WAITING and not epoch.gave_way:
                call.inflight.remove(epoch)
                epoch.move(EpochState.WITHDRAWN)
                self._numbers[call.feed] = epoch.number - 1
                log.debug("epoch %d of %r was stopped before it was asked for or fed: its "
                          "number goes to the feed's next call", epoch.number, call.feed)
                continue
            self._cancel(epoch)
            epoch.move(EpochState.WITHDRAWING)
            self._markers(WithdrawEpoch(feed=call.feed, epoch=epoch.number, job=call.plan.job))

    def _settle_withdrawals(self, call: Call) -> bool:
        """Whether every node still up answered the withdrawal of *call*'s WITHDRAWING epochs
        (its only epochs left); then each is WITHDRAWN, its number the feed's next call's,
        unless a node's reader had begun it or a later one: that epoch is STOPPED and ended
        short on every node, as a stop ends the epoch being read (a node that dropped its
        batches reads it empty)."""
        links = self._links
        up = [n for n in links.nodes if links.gone(n) is None]
        answers = {(n, e.number): links.withdrawn(n, call.feed, e.number, call.plan.job)
                   for n in up for e in call.inflight}
        if None in answers.values():
            return False
        begun = max((number for (_, number), done in answers.items() if not done), default=0)
        for epoch in call.inflight:
            if epoch.number <= begun:
                epoch.move(EpochState.STOPPED)
                epoch.result.complete = False
                self._end_markers(call.feed, epoch.result)
                call.report.epochs.append(epoch.result)
            else:
                epoch.move(EpochState.WITHDRAWN)
        withdrawn = [e.number for e in call.inflight if e.state is EpochState.WITHDRAWN]
        if withdrawn:
            self._numbers[call.feed] = min(withdrawn) - 1
            log.debug("epochs %s of %r, fed ahead, were withdrawn from every node: their "
                      "numbers go to the feed's next call", withdrawn, call.feed)
        call.inflight.clear()
        return True

    def _failed_before_stop(self, call: Call, epoch: Epoch, job: Job, doing: str) -> bool:
        """Whether *job* of *epoch* had failed by itself (before the stop cancelled anything:
        the stop's own cancels come after this look): if so, the call fails with the job's
        error, as it would have without the stop. Returns True (the next step looks again)
        while that failure is a broken node's, which :meth:`step` names.

        Raises:
            ClusterError: the job's failure.
        """
        if not job.done() or job.error is None:
            return False
        if self._broken():
            return True
        raise self._job_error(call, epoch, job.error, doing)

    def _stop_suspended(self) -> None:
        """While suspended, a stopped call ends (with what it had fed, nothing)."""
        for feed, queue in self._calls.items():
            stopped = [c for c in queue if c.feeding.stopping]
            for call in stopped:
                call.report.stopped = True
                self._end(call, None)
            self._calls[feed] = deque(c for c in queue if not c.over)

    def _finish(self, call: Call) -> None:
        if call.over:
            return
        for epoch in call.inflight:
            self._cancel(epoch)
        call.inflight.clear()
        self._end(call, None)
        if self._restartable and not call.streaming:
            self._completed.append(call)

    def _end(self, call: Call, error: BaseException | None) -> None:
        call.over = True
        if call.plan is not None:
            self._runner.release(call)
        if not call.feeding.done():
            if error is None:
                call.feeding.set_result(call.report)
            else:
                call.feeding.set_exception(error)

    def _fail_call(self, call: Call, error: ClusterError) -> None:
        """A call's own failure: its jobs cancelled, its live epochs failed on the nodes."""
        for epoch in call.inflight:
            self._cancel(epoch)
            epoch.move(EpochState.FAILED)
            self._markers(FailEpoch(feed=call.feed, epoch=epoch.number, reason=str(error)))
        call.inflight.clear()
        self._end(call, error)

    @staticmethod
    def _job_error(call: Call, epoch: Epoch, error: BaseException, doing: str) -> ClusterError:
        """The error a call whose job failed ends with."""
        if isinstance(error, ClusterError):
            return error
        return ClusterError(f"{doing} epoch {epoch.number} of feed {call.feed!r} failed: "
                            f"{error}")

    def _broken(self) -> list[str]:
        """The nodes whose link broke (not those whose ``main_fun`` finished)."""
        links = self._links
        return [n for n in links.nodes if links.gone(n) not in (None, "finished")]

    def _cluster_failure(self) -> ClusterError | None:
        """The attempt's failure; or, once a node's link broke and the attempt said nothing
        for :data:`FAILURE_GRACE` seconds, a failure naming that node."""
        error = self._failure()
        if error is not None:
            return error
        broken = self._broken()
        if not broken:
            self._lost_since = None
            return None
        if not self.calls():
            return None
        now = self._clock()
        if self._lost_since is None:
            self._lost_since = now
        if now - self._lost_since < FAILURE_GRACE:
            return None
        return ClusterError(f"{broken[0]} stopped while being fed "
                            f"({self._links.gone(broken[0])})",
                            node=broken[0])

    # -- helpers -------------------------------------------------------------------------------

    def _awaited_elsewhere(self, feed: str) -> bool:
        return self._links.awaited_elsewhere(feed, self._done)

    @staticmethod
    def _cancel(epoch: Epoch) -> None:
        if epoch.job is not None and epoch.state.live:
            epoch.job.cancel()
        epoch.job = None

    def _end_markers(self, feed: str, result: EpochReport) -> None:
        unsure = {int(w) for task in result.tasks for w, s in task["workers"].items()
                  if s["state"] != "ready"}
        for w, node in enumerate(self._links.nodes):
            sent = None if w in unsure or not result.complete else result.records.get(w, 0)
            self._links.send(node, EndEpoch(feed=feed, epoch=result.epoch, sent=sent))
        self._done[feed] = max(result.epoch, self._done.get(feed, 0))

    def _markers(self, message: Message) -> None:
        for node in self._links.nodes:
            self._links.send(node, message)
