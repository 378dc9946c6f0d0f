"""The feeding schedule, driven through over two thousand seeded random interleavings with a fake
Spark (task slots, a FIFO job queue, cancels that land late) and fake nodes (bounded buffers
for the epoch being read and for epochs fed ahead, scripted readers): it never stalls, every
epoch reaches each worker exactly once and in equal shares, stop and failure end everything,
and after a killed attempt or a lost worker every call is fed again, exactly once, to the next
attempt's nodes, as many as before or not. No Spark, no threads: it runs in seconds."""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from tfrecord_io.cluster.feed.reports import Feeding
from tfrecord_io.cluster.feed.schedule import (
    STALL_WARNING,
    TRANSITIONS,
    Call,
    Epoch,
    EpochState,
    FeedSchedule,
)
from tfrecord_io.cluster.messages import EndEpoch, FailEpoch, Message, WithdrawEpoch
from tfrecord_io.errors import ClusterError

# -- a fake Spark ----------------------------------------------------------------------------


class FakeJob:
    """A job of *tasks* tasks; each feeding task sends *batches* batches to every worker."""

    def __init__(self, world: World, kind: str, call: Call | None, epoch: int, tasks: int):
        self.world = world
        self.nodes = world.nodes  # the attempt's nodes, which its tasks reach
        self.kind = kind
        self.call = call
        self.epoch = epoch
        self.pending = list(range(tasks))  # tasks not started
        self.running: dict[int, list[tuple[int, int]]] = {}  # task -> (worker, seq) left
        self.finished = 0
        self.tasks = tasks
        self.cancelled = False
        self.interrupted = False  # the cancel reached the executors
        self._done = False
        self._error: BaseException | None = None
        self._value: Any = None

    # the schedule's view
    def done(self) -> bool:
        return self._done

    def cancel(self) -> None:
        if self.world.lossy_cancel and self not in self.world.queue:
            return  # a cancel by job group before the job exists: lost
        if not self._done:
            self.cancelled = True
            self.pending.clear()  # never started: never runs
            if not self.running:
                self._end(error=ClusterError("cancelled"))

    @property
    def error(self) -> BaseException | None:
        return self._error

    @property
    def value(self) -> Any:
        return self._value

    def _end(self, value: Any = None, error: BaseException | None = None) -> None:
        self._done, self._value, self._error = True, value, error
        self.world.queue.remove(self)


@dataclass
class FakePlan:
    per_worker: int | None
    dropped: int
    batches: int  # per task and worker
    job: int  # the number its batches carry


class FakeRunner:
    def __init__(self, world: World) -> None:
        self.world = world
        self.submitted: list[FakeJob] = []

    def plan(self, call: Call) -> FakeJob:
        job = FakeJob(self.world, "plan", call, 0, self.world.slots)
        self.world.queue.append(job)
        return job

    def send_epoch(self, call: Call, epoch: int) -> FakeJob:
        job = FakeJob(self.world, "feed", call, epoch, self.world.slots)
        if self.world.lossy_cancel:
            self.world.unsubmitted.append(job)  # a thread submits it a little later
        else:
            self.world.queue.append(job)
        self.submitted.append(job)
        return job

    def stream(self, call: Call, epoch: int, result: Any) -> FakeJob:
        raise AssertionError("no streams here")

    def release(self, call: Call) -> None:
        self.world.released.append(call)


# -- fake nodes ------------------------------------------------------------------------------


@dataclass
class Node:
    name: str
    index: int
    script: list[str]  # the feeds it reads, one epoch each, in order
    capacity: int
    asked: dict[str, int] = field(default_factory=dict)
    stopped: set[str] = field(default_factory=set)
    gone: str | None = None
    current: list[tuple[Any, ...]] = field(default_factory=list)  # batches of the epoch read
    ahead: list[tuple[Any, ...]] = field(default_factory=list)  # batches of later epochs
    seen: set[tuple[Any, ...]] = field(default_factory=set)
    ends: dict[tuple[str, int], int | None] = field(default_factory=dict)
    failed: dict[tuple[str, int], str] = field(default_factory=dict)
    taken: dict[tuple[str, int], list[tuple[Any, ...]]] = field(default_factory=dict)
    reading: tuple[str, int] | None = None
    withdrawn: dict[tuple[str, int, int], bool] = field(default_factory=dict)
    #: with messages in flight (World(lagging=True)): the asks and answers the driver has
    #: heard, and the withdrawals on their way to the node
    told: dict[str, int] | None = None
    answered: dict[tuple[str, int, int], bool] = field(default_factory=dict)
    told_answers: dict[tuple[str, int, int], bool] = field(default_factory=dict)
    inbox: list[WithdrawEpoch] = field(default_factory=list)

    def withdraw(self, feed: str, epoch: int, job: int) -> bool:
        """As a feed buffer: unless the reader has begun *epoch*, drop its batches of *job*,
        held and to come."""
        done = self.asked.get(feed, 0) < epoch or feed in self.stopped
        self.withdrawn[(feed, epoch, job)] = done
        if done:
            self.current = [k for k in self.current if k[:3] != (feed, epoch, job)]
            self.ahead = [k for k in self.ahead if k[:3] != (feed, epoch, job)]
        return done

    def accepts(self, key: tuple[Any, ...]) -> bool:
        feed, epoch = key[0], key[1]
        if self.gone or feed in self.stopped or key in self.seen or self.withdrawn.get(key[:3]):
            return True  # dropped at once
        asked = self.asked.get(feed, 0)
        if epoch < asked or (feed, epoch) in self.ends:
            return True  # an old epoch: dropped
        held = self.current if epoch == asked else self.ahead
        return sum(1 for k in held if k[0] == feed) < self.capacity

    def put(self, key: tuple[Any, ...]) -> None:
        feed, epoch = key[0], key[1]
        if self.gone or feed in self.stopped or key in self.seen or self.withdrawn.get(key[:3]):
            return
        if epoch < self.asked.get(feed, 0) or (feed, epoch) in self.ends:
            return
        self.seen.add(key)
        (self.current if epoch == self.asked.get(feed, 0) else self.ahead).append(key)


class FakeLinks:
    def __init__(self, nodes: list[Node]) -> None:
        self.by_name = {n.name: n for n in nodes}
        self.nodes = [n.name for n in nodes]

    def readers(self, feed: str) -> list[str]:
        return [n for n in self.nodes
                if not self.by_name[n].gone and feed not in self.by_name[n].stopped]

    def _heard(self, n: Node) -> dict[str, int]:
        return n.asked if n.told is None else n.told

    def asked(self, node: str, feed: str) -> int:
        return self._heard(self.by_name[node]).get(feed, 0)

    def gone(self, node: str) -> str | None:
        return self.by_name[node].gone

    def awaited_elsewhere(self, feed: str, done: dict[str, int]) -> bool:
        return any(asked > done.get(other, 0)
                   for n in self.by_name.values() if not n.gone
                   for other, asked in self._heard(n).items()
                   if other != feed and other not in n.stopped)

    def awaited(self, node: str) -> dict[str, int]:
        n = self.by_name[node]
        return {feed: asked for feed, asked in self._heard(n).items() if feed not in n.stopped}

    def send(self, node: str, message: Message) -> None:
        n = self.by_name[node]
        if n.gone:
            return
        if isinstance(message, EndEpoch):
            n.ends[(message.feed, message.epoch)] = message.sent
        elif isinstance(message, FailEpoch):
            n.failed[(message.feed, message.epoch)] = message.reason
        elif isinstance(message, WithdrawEpoch):
            if n.told is not None:
                n.inbox.append(message)  # on its way: the node decides when it arrives
            else:
                n.answered[(message.feed, message.epoch, message.job)] = n.withdraw(
                    message.feed, message.epoch, message.job)

    def withdrawn(self, node: str, feed: str, epoch: int, job: int) -> bool | None:
        n = self.by_name[node]
        heard = n.answered if n.told is None else n.told_answers
        return heard.get((feed, epoch, job))


# -- the world -------------------------------------------------------------------------------


class World:
    """Fake Spark and nodes, and the schedule under test, moved on one random action at a
    time."""

    def __init__(self, rng: random.Random, slots: int, capacity: int, scripts: list[list[str]],
                 records: dict[str, int], equal: bool = True, restartable: bool = False,
                 lagging: bool = False) -> None:
        self.rng = rng
        self.lagging = lagging  # asks, withdrawals and their answers take steps to arrive
        self.slots = slots
        self.queue: list[FakeJob] = []  # submitted and not ended, FIFO
        self.lossy_cancel = False  # model a runner whose cancel can come before the submit
        self.unsubmitted: list[FakeJob] = []
        self.released: list[Call] = []
        self.scripts = scripts
        self.capacity = capacity
        self.nodes = [self._node(i, s) for i, s in enumerate(scripts)]
        self.links = FakeLinks(self.nodes)
        self.runner = FakeRunner(self)
        self.now = 0.0
        self.failure: ClusterError | None = None
        self.records = records  # batches per task and worker, per feed
        self.equal = equal
        self.restartable = restartable
        self.attempts = 1
        self.schedule = FeedSchedule(self.links, self.runner, equal, lambda: self.failure,
                                     clock=lambda: self.now, restartable=restartable)
        self.calls: list[Call] = []
        self.plans = 0

    def restart(self, workers: int | None = None) -> None:
        """The driver's next attempt: new nodes reading their scripts from the start, their
        links, the schedule restarted with them; *workers* of them (another size than the
        failed attempt's: every worker reads the same script) or as many as before."""
        self.attempts += 1
        if workers is not None:
            self.scripts = [list(self.scripts[0]) for _ in range(workers)]
        self.nodes = [self._node(i, s) for i, s in enumerate(self.scripts)]
        self.links = FakeLinks(self.nodes)
        self.failure = None
        self.schedule.restart(self.links, self.runner, lambda: self.failure,
                              restartable=self.restartable)

    def _node(self, index: int, script: list[str]) -> Node:
        return Node(f"worker:{index}", index, list(script), self.capacity,
                    told={} if self.lagging else None)

    def train(self, feed: str, epochs: int, *, cache: bool = True) -> Call:
        call = Call(feed, feed, epochs, Feeding(), cache=cache)
        self.calls.append(call)
        self.schedule.add(call)
        return call

    def busy_slots(self) -> int:
        return sum(len(j.running) for j in self.queue)

    # the actions that may happen next
    def actions(self) -> list[Any]:
        acts: list[Any] = [("submit", job) for job in self.unsubmitted]
        if self.busy_slots() < self.slots:
            for job in self.queue:  # FIFO: the first job with a task not started
                if job.pending:
                    acts.append(("start", job))
                    break
        for job in self.queue:
            for task, left in job.running.items():
                if job.cancelled:
                    acts.append(("interrupt", job, task))
                elif not left:
                    acts.append(("finish", job, task))
                else:
                    worker, _ = left[0]
                    node = job.nodes[worker]
                    key = self._key(job, task, left[0])
                    if node.accepts(key):
                        acts.append(("deliver", job, task))
        for node in self.nodes:
            act = self._node_action(node)
            if act is not None:
                acts.append(act)
            if node.inbox and not node.gone:
                acts.append(("arrive", node))
            if node.told is not None and not node.gone and (
                    node.told != node.asked or node.told_answers != node.answered):
                acts.append(("tell", node))
        return acts

    def _key(self, job: FakeJob, task: int, item: tuple[int, int]) -> tuple[Any, ...]:
        assert job.call is not None
        return (job.call.feed, job.epoch, job.call.plan.job, task, item[0], item[1])

    def _node_action(self, node: Node) -> Any:
        if node.gone:
            return None
        if node.reading is None:
            if not node.script:
                return ("finish_node", node)
            return ("ask", node)
        feed, epoch = node.reading
        if (feed, epoch) in node.failed:
            return None  # its reader raised: the test looks at the calls
        mine = [k for k in node.current if k[:2] == (feed, epoch)]
        if mine:
            return ("take", node)
        if (feed, epoch) in node.ends:
            return ("end", node)
        return None

    def do(self, act: Any) -> None:
        kind = act[0]
        self.now += 0.05
        if kind == "submit":
            self.unsubmitted.remove(act[1])
            self.queue.append(act[1])
        elif kind == "start":
            job = act[1]
            task = job.pending.pop(0)
            if job.kind == "plan":
                job.running[task] = []
            else:
                plan = job.call.plan
                job.running[task] = [(w, s) for s in range(plan.batches)
                                     for w in range(len(job.nodes))]
        elif kind == "interrupt":
            job, task = act[1], act[2]
            del job.running[task]
            job.interrupted = True
            if not job.running:
                job._end(error=ClusterError("cancelled"))
        elif kind == "finish":
            job, task = act[1], act[2]
            del job.running[task]
            job.finished += 1
            if job.finished == job.tasks:
                self._complete(job)
        elif kind == "deliver":
            job, task = act[1], act[2]
            item = job.running[task].pop(0)
            job.nodes[item[0]].put(self._key(job, task, item))
        elif kind == "ask":
            node = act[1]
            feed = node.script.pop(0)
            node.asked[feed] = node.asked.get(feed, 0) + 1
            node.reading = (feed, node.asked[feed])
            node.current = [k for k in node.current if k[0] != feed]
            moved = [k for k in node.ahead if k[:2] == node.reading]
            node.ahead = [k for k in node.ahead if k[:2] != node.reading]
            node.current += moved
        elif kind == "take":
            node = act[1]
            key = next(k for k in node.current if k[:2] == node.reading)
            node.current.remove(key)
            node.taken.setdefault(node.reading, []).append(key)
        elif kind == "end":
            node = act[1]
            sent = node.ends[node.reading]
            got = len(node.taken.get(node.reading, []))
            assert sent is None or got == sent, (node.name, node.reading, got, sent)
            node.reading = None
        elif kind == "arrive":  # a withdrawal reaches the node
            node = act[1]
            message = node.inbox.pop(0)
            node.answered[(message.feed, message.epoch, message.job)] = node.withdraw(
                message.feed, message.epoch, message.job)
        elif kind == "tell":  # the node's asks and answers reach the driver
            node = act[1]
            node.told = dict(node.asked)
            node.told_answers = dict(node.answered)
        elif kind == "finish_node":
            act[1].gone = "finished"
        else:
            raise AssertionError(kind)

    def _complete(self, job: FakeJob) -> None:
        if job.kind == "plan":
            self.plans += 1
            per_task = self.records[job.call.feed]
            job._end(FakePlan(per_task * self.slots if self.equal else None, 0, per_task,
                              self.plans))
            return
        plan = job.call.plan
        reports = [{"workers": {str(w): {"records": plan.batches, "dropped": 0,
                                         "state": "ready"} for w in range(len(job.nodes))}}
                   for _ in range(job.tasks)]
        job._end(reports)

    def check_slots_free_for_waited_feeds(self) -> None:
        """After a step: no job fed ahead holds or waits for slots while a node waits for
        another feed's epoch that is not fed."""
        done = {f: max((e for (g, e), _ in self._ended().items() if g == f), default=0)
                for f in {c.feed for c in self.calls}}
        for call in self.schedule.calls():
            for epoch in call.inflight:
                if epoch.state is EpochState.AHEAD:
                    assert not self.links.awaited_elsewhere(call.feed, done), (
                        f"epoch {epoch.number} of {call.feed} holds slots another feed needs")

    def _ended(self) -> dict[tuple[str, int], Any]:
        ended: dict[tuple[str, int], Any] = {}
        for node in self.nodes:
            ended.update(node.ends)
        return ended

    def run(self, limit: int = 20000, before: Any = None) -> None:
        """Random actions until nothing can happen any more (also not after the schedule's
        grace periods); steps the schedule between them."""
        idle = 0
        for _ in range(limit):
            if before is not None:
                before(self)
            self.schedule.step()
            self.check_slots_free_for_waited_feeds()
            acts = self.actions()
            if not acts:
                idle += 1
                if idle > 20:  # 20 s of nothing: stalled, or over
                    return
                self.now += 1.0
                continue
            idle = 0
            self.do(self.rng.choice(acts))
        raise AssertionError(f"no end after {limit} actions")


def _scripts(rng: random.Random, workers: int, feeds: dict[str, int]) -> list[list[str]]:
    """Every worker reads the same feeds in the same order (sync training), all epochs."""
    order: list[str] = []
    left = dict(feeds)
    while any(left.values()):
        feed = rng.choice([f for f, n in left.items() if n])
        order.append(feed)
        left[feed] -= 1
    return [list(order) for _ in range(workers)]


def _scenario(seed: int, restartable: bool = False) -> tuple[World, dict[str, list[int]]]:
    rng = random.Random(seed)
    names = ["train", "validation", "test"][: rng.randint(1, 3)]
    calls = {f: [rng.randint(1, 3) for _ in range(rng.randint(1, 2))] for f in names}
    feeds = {f: sum(c) for f, c in calls.items()}
    workers = rng.randint(1, 3)
    world = World(rng, slots=rng.randint(1, 3), capacity=rng.randint(1, 2),
                  scripts=_scripts(rng, workers, feeds),
                  records={f: rng.randint(1, 3) for f in names}, restartable=restartable)
    return world, calls


def _issue_all(world: World, calls: dict[str, list[int]]) -> None:
    for feed, epochs in calls.items():
        for n in epochs:
            world.train(feed, n)


def _every_node_read_every_epoch_once_in_equal_shares(world: World,
                                                      calls: dict[str, list[int]],
                                                      seed: int) -> None:
    """Every node (of the last attempt) finished its script, and read each epoch of each feed
    whole: every batch once, as many as every other node."""
    for node in world.nodes:
        assert node.gone == "finished" and not node.script, f"seed {seed}: {node}"
    for feed, epochs in calls.items():
        for epoch in range(1, sum(epochs) + 1):
            shares = [len(n.taken.get((feed, epoch), [])) for n in world.nodes]
            expected = world.records[feed] * world.slots
            assert shares == [expected] * len(world.nodes), (seed, feed, epoch, shares)
            for node in world.nodes:
                keys = [k[3:] for k in node.taken.get((feed, epoch), [])]
                assert len(keys) == len(set(keys)), f"seed {seed}: a batch read twice"


# -- the specification -----------------------------------------------------------------------

SEEDS = range(1000)


@pytest.mark.parametrize("chunk", range(5))
def test_random_schedules_never_stall_and_feed_every_epoch_exactly_once_in_equal_shares(chunk):
    for seed in SEEDS[chunk::5]:
        world, calls = _scenario(seed)
        _issue_all(world, calls)
        world.run()
        for call in world.calls:
            assert call.feeding.done(), f"seed {seed}: {call.feed} not done"
            report = call.feeding.result(timeout=0)
            assert [e.epoch for e in report.epochs] == sorted(e.epoch for e in report.epochs)
        _every_node_read_every_epoch_once_in_equal_shares(world, calls, seed)


def test_two_feeds_fed_in_turns_on_two_slots_never_deadlock():
    # The case seen hanging on a real cluster: train and validation, 3 epochs each, fed
    # without blocking, workers alternating one epoch of each, two free task slots, buffers
    # smaller than an epoch.
    for seed in range(400):
        rng = random.Random(seed)
        order = ["train", "validation"] * 3
        world = World(rng, slots=2, capacity=1, scripts=[order, order],
                      records={"train": 3, "validation": 1})
        world.train("train", 3)
        world.train("validation", 3)
        world.run()
        assert all(c.feeding.done() and c.feeding.exception() is None for c in world.calls)
        assert all(n.gone == "finished" for n in world.nodes), seed


def test_jobs_are_cancelled_whatever_their_state_and_a_cancelled_job_starts_no_task():
    # Train's epochs fed ahead on one slot give way to validation, read in between: some of
    # their jobs are cancelled while queued (before any task ran), some while running.
    states = set()
    for seed in range(200):
        world = World(random.Random(seed), slots=1, capacity=1,
                      scripts=[["train", "validation", "train", "validation", "train"]] * 2,
                      records={"train": 2, "validation": 1})
        world.train("train", 3)
        world.train("validation", 2)
        world.run()
        assert all(c.feeding.exception() is None for c in world.calls)
        for job in world.runner.submitted:
            if job.cancelled:
                states.add("running" if job.interrupted else "queued")
                assert not job.pending and not job.running
    assert states == {"queued", "running"}


def test_an_epoch_fed_ahead_gives_way_and_is_fed_again_once_asked():
    # Workers read validation before train's second epoch: train's epoch 2, fed ahead on the
    # only slot with buffers of one batch, must give the slot up.
    for seed in range(100):
        world = World(random.Random(seed), slots=1, capacity=1,
                      scripts=[["train", "validation", "train"]] * 2,
                      records={"train": 3, "validation": 1})
        train = world.train("train", 2)
        world.train("validation", 1)
        world.run()
        report = train.feeding.result(timeout=0)
        assert [sorted(e.records.values()) for e in report.epochs] == [[3, 3], [3, 3]]


def test_an_epoch_without_kept_batches_is_never_fed_ahead_so_never_fed_twice():
    # Without kept batches each job reads the DataFrame anew (a reshuffling one differently
    # every time): an epoch fed ahead that gave way and was fed again would mix two readings in
    # a node that had taken batches of the first. The same scenario as above, uncached: one job
    # per epoch, none cancelled.
    for seed in range(100):
        world = World(random.Random(seed), slots=1, capacity=1,
                      scripts=[["train", "validation", "train", "validation", "train"]] * 2,
                      records={"train": 3, "validation": 1})
        train = world.train("train", 3, cache=False)
        world.train("validation", 2)
        world.run()
        jobs = [job for job in world.runner.submitted if job.call is train]
        assert [job.epoch for job in jobs] == [1, 2, 3], seed
        assert not any(job.cancelled for job in jobs), seed
        report = train.feeding.result(timeout=0)
        assert [sorted(e.records.values()) for e in report.epochs] == [[3, 3]] * 3, seed


def _run_failing(seed: int) -> tuple[World, ClusterError]:
    """A random scenario whose worker:0 fails after a random number of steps."""
    world, calls = _scenario(1000 + seed)
    _issue_all(world, calls)
    rng = random.Random(seed)
    when = rng.randint(0, 60)
    error = ClusterError("worker:0 failed: boom", node="worker:0")
    count = [0]

    def maybe_fail(w: World) -> None:
        count[0] += 1
        if count[0] == when:
            w.nodes[0].gone = "failed"
            w.failure = error

    world.run(before=maybe_fail)
    return world, error


@pytest.mark.parametrize("seed", range(40))
def test_a_failed_node_ends_every_call_with_the_clusters_error(seed):
    world, error = _run_failing(seed)
    for call in world.calls:
        assert call.feeding.done()
        if call.feeding.exception() is not None:
            assert call.feeding.exception() is error
    assert not world.queue or all(j.cancelled for j in world.queue)


def test_a_lost_link_without_word_from_the_cluster_fails_the_calls_after_the_grace():
    # worker:1's link broke; worker:0 reads one epoch, then waits for a feed nobody feeds.
    world = World(random.Random(1), slots=1, capacity=1,
                  scripts=[["train", "validation"], ["train"]], records={"train": 2})
    call = world.train("train", 2)
    world.nodes[1].gone = "lost"
    world.run()
    error = call.feeding.exception()
    assert isinstance(error, ClusterError) and "worker:1" in str(error)


def _run_restarting(seed: int, lose_one: bool,
                    resize: bool = False) -> tuple[World, dict[str, list[int]]]:
    """A random scenario whose attempt fails after a random number of steps -- all its nodes at
    once (killed), or one worker's link first and the attempt's failure a little later (lost)
    -- and whose next attempt starts a few steps after that (with *resize*, with one worker
    fewer or more)."""
    world, calls = _scenario(2000 + seed, restartable=True)
    _issue_all(world, calls)
    rng = random.Random(seed)
    size = len(world.nodes)
    workers = (size + rng.choice([-1, 1]) if size > 1 else 2) if resize else None
    when = rng.randint(0, 80)
    noticed = when + (rng.randint(1, 6) if lose_one else 0)  # within the grace
    back = noticed + rng.randint(1, 15)
    count = [0]

    def events(w: World) -> None:
        count[0] += 1
        if w.attempts > 1 or all(n.gone == "finished" for n in w.nodes):
            return
        if count[0] == when and lose_one:
            up = [n for n in w.nodes if not n.gone]
            rng.choice(up).gone = "lost"
        if count[0] == noticed:
            w.failure = ClusterError("the attempt failed: boom")
            for node in w.nodes:
                node.gone = node.gone or "failed"
        if count[0] == back:
            w.restart(workers)

    world.run(before=events)
    return world, calls


@pytest.mark.parametrize("resize", [False, True], ids=["same-size", "resized"])
@pytest.mark.parametrize("lose_one", [False, True], ids=["killed", "lost-worker"])
@pytest.mark.parametrize("chunk", range(4))
def test_after_a_restart_every_call_is_fed_again_exactly_once_to_the_new_nodes(chunk, lose_one,
                                                                               resize):
    restarted = 0
    for seed in range(chunk, 400, 4):
        world, calls = _run_restarting(seed, lose_one, resize)
        restarted += world.attempts > 1
        for call in world.calls:
            assert call.feeding.done(), f"seed {seed}: {call.feed} not done"
            assert call.feeding.exception() is None, (seed, call.feeding.exception())
        _every_node_read_every_epoch_once_in_equal_shares(world, calls, seed)  # the last
        assert not any(j.pending or j.running for j in world.runner.submitted if j.cancelled)
    assert restarted > 50  # most runs restart before their nodes finished


def test_a_call_made_while_the_attempt_is_restarting_is_fed_to_the_next_one():
    world = World(random.Random(3), slots=2, capacity=1, scripts=[["train", "test"]] * 2,
                  records={"train": 2, "test": 1}, restartable=True)
    train = world.train("train", 1)
    world.failure = ClusterError("the attempt failed")
    for node in world.nodes:
        node.gone = "failed"
    world.schedule.step()
    assert world.schedule.suspended is world.failure
    test = world.train("test", 1)  # between the failure and the next attempt
    world.restart()
    world.run()
    assert [len(n.taken[("test", 1)]) for n in world.nodes] == [2, 2]
    assert train.feeding.result(timeout=0).epochs[0].records == {0: 4, 1: 4}
    assert test.feeding.exception() is None


def test_a_stream_fails_at_a_restart_and_a_stopped_call_is_not_fed_again():
    world = World(random.Random(0), slots=1, capacity=1, scripts=[["train"]] * 2,
                  records={"train": 1}, restartable=True)
    stream = Call("events", "events", 1, Feeding(), streaming=True)
    world.schedule.add(stream)
    stopped = world.train("train", 1)
    stopped.feeding.stop()
    world.failure = ClusterError("the attempt failed")
    world.schedule.step()
    world.schedule.step()
    assert "a stream cannot be fed again" in str(stream.feeding.exception())
    assert stopped.feeding.result(timeout=0).stopped


def test_a_call_fed_while_a_worker_was_lost_completes_only_after_the_next_attempt_fed_it():
    # worker:1's link broke: its share of the epoch is gone, and the attempt's failure is on
    # its way. The call does not report success meanwhile; the next attempt feeds it whole.
    world = World(random.Random(5), slots=1, capacity=2, scripts=[["train"]] * 2,
                  records={"train": 1}, restartable=True)
    call = world.train("train", 1)
    world.nodes[1].gone = "lost"
    for _ in range(100):  # 5 s of actions, within the grace
        world.schedule.step()
        acts = world.actions()
        if acts:
            world.do(world.rng.choice(acts))
    assert world.nodes[0].gone == "finished" and not call.feeding.done()
    world.failure = ClusterError("worker:1 was lost")
    world.schedule.step()
    world.restart()
    world.run()
    assert call.feeding.result(timeout=0).epochs[0].records == {0: 1, 1: 1}


def test_with_no_attempt_left_the_suspended_calls_fail_with_the_error():
    world = World(random.Random(0), slots=1, capacity=1, scripts=[["train"]] * 2,
                  records={"train": 1}, restartable=True)
    call = world.train("train", 2)
    world.failure = ClusterError("the attempt failed")
    world.schedule.step()
    assert not call.feeding.done()
    final = ClusterError("no attempts left")
    world.schedule.fail(final)
    assert call.feeding.exception() is final


def _run_stopping(seed: int) -> World:
    """Train and validation in turns; train's call stopped after a random number of steps."""
    rng = random.Random(seed)
    order = ["train", "validation"] * 2
    world = World(rng, slots=2, capacity=1, scripts=[order, order],
                  records={"train": 2, "validation": 1})
    train = world.train("train", 2)
    world.train("validation", 2)
    when = rng.randint(0, 40)
    count = [0]

    def maybe_stop(w: World) -> None:
        count[0] += 1
        if count[0] == when:
            train.feeding.stop()
            for node in w.nodes:  # its readers stop reading it too (ctx.stop_feed)
                node.stopped.add("train")
                node.script = [f for f in node.script if f != "train"]
                if node.reading and node.reading[0] == "train":
                    node.reading = None

    world.run(before=maybe_stop)
    return world


def _run_stopping_then_training(seed: int, fail: bool = False) -> tuple[World, Call, Call]:
    """One feed read on and on; a call with kept batches stopped after a random number of
    steps, and the next call of the feed; asks, withdrawals and answers take steps to arrive
    (so the driver may withdraw an epoch that a reader has begun); *fail*: the attempt fails
    a few steps after the stop."""
    rng = random.Random(seed)
    workers = rng.randint(1, 3)
    world = World(rng, slots=rng.randint(1, 2), capacity=rng.randint(1, 2),
                  scripts=[["train"] * 8] * workers, records={"train": rng.randint(1, 2)},
                  lagging=True)
    stopped = world.train("train", 4)
    following: list[Call] = []
    when = rng.randint(0, 60)
    count = [0]

    def maybe_stop(w: World) -> None:
        count[0] += 1
        if count[0] == when:
            stopped.feeding.stop()
            following.append(w.train("train", 3))
        if fail and count[0] == when + 2:
            w.failure = ClusterError("worker:0 failed: boom", node="worker:0")

    world.run(before=maybe_stop)
    if not following:  # the first call was fed whole and read before the stop came
        count[0], when = 0, 1
        world.run(before=maybe_stop)
    return world, stopped, following[0]


@pytest.mark.parametrize("seed", range(60))
def test_after_a_stop_the_next_call_is_fed_from_the_readers_next_epoch_never_mixed(seed):
    world, stopped, following = _run_stopping_then_training(seed)
    assert stopped.feeding.exception() is None  # stopped, or fed whole before the stop
    fed = [e.epoch for e in following.feeding.result(timeout=0).epochs]
    assert fed == list(range(fed[0], fed[0] + 3))
    for node in world.nodes:
        ended = sorted(e for (_, e) in node.ends)
        assert ended == list(range(1, len(ended) + 1)), (node.name, ended)  # no number skipped
        for (_, epoch), keys in node.taken.items():  # an epoch holds one call's batches
            assert len({k[2] for k in keys}) == 1, (node.name, epoch, keys)
            assert not any(node.withdrawn.get(k[:3]) for k in keys)
        for epoch in fed:  # the next call's epochs are read whole, counted
            assert node.ends[("train", epoch)] is not None
    job = stopped.plan.job if stopped.plan is not None else None  # None: stopped unplanned
    withdrawn_everywhere = [e for e in range(1, fed[0])
                            if all(n.answered.get(("train", e, job)) for n in world.nodes)]
    assert not withdrawn_everywhere  # its number went to the next call


@pytest.mark.parametrize("seed", range(20))
def test_a_failure_while_an_epoch_is_withdrawn_ends_both_calls(seed):
    world, stopped, following = _run_stopping_then_training(seed, fail=True)
    assert stopped.feeding.done() and following.feeding.done()
    assert not world.queue or all(j.cancelled for j in world.queue)


@pytest.mark.parametrize("seed", range(40))
def test_a_stopped_call_ends_promptly_and_the_others_go_on(seed):
    world = _run_stopping(seed)
    assert all(c.feeding.done() and c.feeding.exception() is None for c in world.calls)
    assert all(n.gone == "finished" for n in world.nodes)
    assert not any(j.pending or j.running for j in world.runner.submitted if j.cancelled)


def test_these_schedules_catch_a_cancel_that_can_come_before_its_job_is_submitted():
    # The harness's own check: with a runner whose cancel is lost when it comes before the
    # job reached Spark (a cancel by job group from another thread), two feeds in turns stall.
    stalled = 0
    for seed in range(300):
        order = ["train", "validation"] * 3
        world = World(random.Random(seed), slots=2, capacity=1, scripts=[order, order],
                      records={"train": 3, "validation": 1})
        world.lossy_cancel = True
        world.train("train", 3)
        world.train("validation", 3)
        world.run()
        stalled += not all(c.feeding.done() for c in world.calls)
    assert stalled > 0


# -- the transitions ---------------------------------------------------------------------------


def test_an_epoch_refuses_a_transition_the_schedule_does_not_declare():
    epoch = Epoch(1)
    with pytest.raises(AssertionError, match="WAITING -> FED is not a transition"):
        epoch.move(EpochState.FED)
    epoch.move(EpochState.FAILED)
    with pytest.raises(AssertionError, match="FAILED -> FEEDING"):
        epoch.move(EpochState.FEEDING)  # an ended epoch never changes again


def test_the_seeded_runs_make_every_declared_transition_and_no_other(monkeypatch):
    # Every change goes through Epoch.move, which refuses what TRANSITIONS does not declare:
    # these runs (ordinary, failing, stopped, given way, unread) reach every declared one.
    made = set()
    move = Epoch.move

    def recorded(epoch: Epoch, state: EpochState) -> None:
        made.add((epoch.state, state))
        move(epoch, state)

    monkeypatch.setattr(Epoch, "move", recorded)
    for seed in range(200):
        world, calls = _scenario(seed)
        _issue_all(world, calls)
        world.run()
    for seed in range(40):
        _run_failing(seed)
        _run_stopping(seed)
        _run_restarting(seed, lose_one=seed % 2 == 1)
        _run_stopping_then_training(seed, fail=seed % 4 == 3)
    for seed in range(20):
        world = World(random.Random(seed), slots=1, capacity=1,
                      scripts=[["train", "validation", "train"]] * 2,
                      records={"train": 3, "validation": 1})
        world.train("train", 2)
        world.train("validation", 1)
        world.run()
    unread = World(random.Random(0), slots=1, capacity=1, scripts=[["train"]] * 2,
                   records={"train": 1, "test": 1})
    unread.train("train", 1)
    test = unread.train("test", 1)  # no node ever reads it
    unread.run()
    assert test.feeding.result(timeout=0).epochs == []
    assert made == TRANSITIONS


def test_a_call_whose_readers_wait_for_a_feed_that_no_call_feeds_says_so_in_the_log(caplog):
    # The driver feeds 'train' with a blocking call, the workers read 'validation' first (or
    # a misspelt name): neither can go on. The driver's log says why, once.
    world = World(random.Random(0), slots=3, capacity=2, scripts=[["validation"]] * 2,
                  records={"train": 1})
    world.train("train", 2)
    for node in world.nodes:
        node.asked["validation"] = 1
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.cluster"):
        for _ in range(10):
            world.schedule.step()
            world.now += STALL_WARNING / 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "epoch 1 of feed 'train'" in warnings[0]
    assert "worker:0, worker:1" in warnings[0]
    assert "feed 'validation' (epoch 1), which no train() call feeds" in warnings[0]
    assert "block=False" in warnings[0]


def test_a_feeding_job_that_failed_before_a_stop_fails_the_stopped_call_with_its_error():
    # The job's failure and Feeding.stop() reach the schedule in the same step: the stop must
    # not end the epoch as stopped (or fed) and hide the failure.
    world = World(random.Random(0), slots=1, capacity=2, scripts=[["train"] * 2] * 2,
                  records={"train": 1})
    call = world.train("train", 2)
    while not (call.inflight and call.inflight[0].state is EpochState.FEEDING):
        world.schedule.step()
        world.do(world.rng.choice(world.actions()))
    call.inflight[0].job._end(error=RuntimeError("Job aborted: a feeding task failed 4 times"))
    call.feeding.stop()
    world.schedule.step()
    with pytest.raises(ClusterError, match="feeding epoch 1 of feed 'train' failed: Job aborted"):
        call.feeding.result(timeout=0)
    assert all(("train", 1) in n.failed and ("train", 1) not in n.ends for n in world.nodes)


def _stop_when(world: World, call: Call, ready: Any) -> None:
    """Random actions until *ready()*, then ``Feeding.stop()`` and one step."""
    while not ready():
        world.schedule.step()
        world.do(world.rng.choice(world.actions()))
    call.feeding.stop()
    world.schedule.step()


def test_a_stopped_call_gives_its_epoch_not_asked_for_and_never_fed_to_the_next_call():
    # Without kept batches, epoch 2 waits (no job) until the readers ask for it: stopped
    # then, no reader may read an empty epoch 2; the next call's first epoch is 2.
    world = World(random.Random(0), slots=1, capacity=2, scripts=[["train"] * 3] * 2,
                  records={"train": 1})
    stopped = world.train("train", 3, cache=False)
    _stop_when(world, stopped, lambda: bool(
        stopped.report.epochs and stopped.inflight
        and all(n.asked.get("train", 0) == 1 and n.reading is None for n in world.nodes)))
    assert [e.epoch for e in stopped.feeding.result(timeout=0).epochs] == [1]
    assert all(("train", 2) not in n.ends for n in world.nodes)
    following = world.train("train", 2)
    world.run()
    assert [e.epoch for e in following.feeding.result(timeout=0).epochs] == [2, 3]
    assert all(n.ends[("train", 2)] == 1 and n.ends[("train", 3)] == 1 for n in world.nodes)
    assert all(len(n.taken[("train", e)]) == 1 for n in world.nodes for e in (1, 2, 3))


def test_a_call_stopped_before_any_reader_asked_gives_its_first_epoch_to_the_next_call():
    world = World(random.Random(0), slots=1, capacity=2, scripts=[["train"]] * 2,
                  records={"train": 1})
    stopped = world.train("train", 1)
    world.schedule.step()
    assert stopped.inflight[0].state is EpochState.WAITING
    stopped.feeding.stop()
    world.schedule.step()
    assert stopped.feeding.result(timeout=0).epochs == []
    following = world.train("train", 1)
    world.run()
    assert [e.epoch for e in following.feeding.result(timeout=0).epochs] == [1]
    assert all(n.ends == {("train", 1): 1} for n in world.nodes)


def test_a_reader_whose_ask_crossed_the_stop_reads_the_next_calls_epoch_whole():
    # The ask for epoch 2 reaches the driver only after the stop took number 2 back: the
    # reader, already waiting in epoch 2, reads the next call's first epoch, counted.
    world = World(random.Random(0), slots=1, capacity=2, scripts=[["train"] * 2] * 2,
                  records={"train": 1})
    stopped = world.train("train", 2, cache=False)
    _stop_when(world, stopped, lambda: bool(
        stopped.report.epochs and stopped.inflight
        and all(n.reading is None and n.asked.get("train", 0) == 1 for n in world.nodes)))
    world.do(("ask", world.nodes[0]))  # its reader is in epoch 2 now
    following = world.train("train", 1)
    world.run()
    assert [e.epoch for e in following.feeding.result(timeout=0).epochs] == [2]
    assert all(len(n.taken[("train", 2)]) == 1 for n in world.nodes)


def test_a_stopped_call_withdraws_its_epoch_fed_ahead_that_no_reader_asked_for():
    # Epoch 2 is read, epoch 3 fed ahead (kept batches) when the call is stopped: the next
    # call's first epoch must be the readers' next one, 3, not an empty or short 3 then 4.
    world = World(random.Random(0), slots=1, capacity=2, scripts=[["train"] * 4] * 2,
                  records={"train": 1})
    stopped = world.train("train", 3)
    while not (all(n.asked.get("train", 0) == 2 for n in world.nodes)
               and len(stopped.inflight) == 2):
        world.schedule.step()
        world.do(world.rng.choice(world.actions()))
    assert stopped.inflight[1].state is EpochState.AHEAD
    stopped.feeding.stop()
    world.schedule.step()
    following = world.train("train", 2)
    world.run()
    assert [e.epoch for e in following.feeding.result(timeout=0).epochs] == [3, 4]
    assert all(n.ends[("train", 3)] == 1 for n in world.nodes)  # whole, counted
