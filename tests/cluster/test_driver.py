"""The driver's supervision of a cluster (tfrecord_io.cluster.driver) against a real control
server on loopback, without Spark: the application is a stand-in whose barrier "job" runs each
node's Spark task as a thread speaking the real control channel, doing what the test tells it
(register or not, fail, finish, drop its connection, answer "stop" or not), so that every step
of a stop, a failure and a restart happens when the test says."""

from __future__ import annotations

import json
import os
import queue
import threading
from typing import Any

import pytest

from tfrecord_io.cluster import attempt as attempt_module
from tfrecord_io.cluster import driver
from tfrecord_io.cluster.application import SparkApplication
from tfrecord_io.cluster.channel import ControlServer, NodeConnection
from tfrecord_io.cluster.driver import Cluster
from tfrecord_io.cluster.messages import (
    Done,
    FailureKind,
    Heartbeat,
    Hello,
    Report,
    Stop,
    encode,
)
from tfrecord_io.cluster.options import run_options
from tfrecord_io.cluster.results import encode_value
from tfrecord_io.cluster.roles import Role, roles
from tfrecord_io.errors import ChannelError, ClusterError

from waiting import eventually

#: What every test waits for at most (nothing here takes long unless it is the defect).
WAIT = 20.0


def main(args, ctx):  # the stand-in nodes never run it
    return None


class Node:
    """One node's Spark task in a stand-in job: registers (unless *absent*: then it waits for
    its job's cancellation), then does what :class:`Job` tells it; answers "stop" by stopping,
    unless *stuck* (a task held in a barrier ``allGather``, say): then only the job's
    cancellation ends it, dropping its connection."""

    def __init__(self, job: Job, role: Role, plan: str) -> None:
        self.job = job
        self.name = role.name
        self.plan = plan
        self.commands: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.registered = threading.Event()
        self.outcome: Done | None = None
        self.thread = threading.Thread(target=self._run, name=f"task-{self.name}", daemon=True)

    def _run(self) -> None:
        if self.plan == "absent":
            self.job.cancelled.wait(WAIT * 3)
            return
        hello = Hello(node=self.name, attempt=self.job.number, host="127.0.0.1",
                      pid=os.getpid(), gpus=[])
        conn = NodeConnection(self.job.address, self.job.key, hello, timeout=10)
        self.registered.set()
        threading.Thread(target=self._listen, args=(conn,), daemon=True).start()
        try:
            self._serve(conn)
        finally:
            conn.close()

    def _listen(self, conn: NodeConnection) -> None:
        try:
            while True:
                if isinstance(conn.receive(), Stop):
                    self.commands.put(("stop", None))
        except ChannelError:
            self.commands.put(("gone", None))

    def _serve(self, conn: NodeConnection) -> None:
        while True:
            try:
                command, argument = self.commands.get(timeout=1.0)
            except queue.Empty:  # beat as a task does: a quiet node would be waited for
                try:
                    conn.send(Heartbeat())
                except ChannelError:
                    return
                continue
            payload = b""
            if command == "report":
                conn.send(argument)
                continue
            if command == "stop":
                if self.plan == "stuck":
                    continue
                outcome = Done(ok=True, stopped=True)
            elif command == "fail":
                outcome = Done(ok=False, kind=FailureKind.RAISED, error=argument)
            elif command == "finish":
                outcome = Done(ok=True)
                payload = encode_value(self.name, self.name)
            else:  # "drop" (its executor lost), "cancelled" (killed with the job), "gone"
                return
            self.outcome = outcome
            try:
                conn.send(outcome, payload)
            except ChannelError:
                pass
            return


class Job:
    """One attempt's barrier job: a thread per node, each following the application's plan."""

    def __init__(self, number: int, tag: str, nodes: list[Role], server: ControlServer,
                 key: str, plan: Any) -> None:
        self.number = number
        self.tag = tag
        self.server = server
        self.address = server.address
        self.key = key
        self.cancelled = threading.Event()
        self.nodes = {r.name: Node(self, r, plan(number, r.name)) for r in nodes}

    def run(self) -> list[str]:
        for node in self.nodes.values():
            node.thread.start()
        for node in self.nodes.values():
            node.thread.join(WAIT * 3)
        # As Spark's job ends after the driver heard its tasks' last words (its scheduler is
        # slower than the control channel), this one ends once the driver read every
        # connection's end, after every message sent on it.
        eventually(lambda: not any(n == self.number for _, n in self.server.connected()),
                   timeout=WAIT, what=f"attempt {self.number}'s connections read to their end")
        if self.cancelled.is_set():
            raise Exception(f"[SPARK_JOB_CANCELLED] Job {self.number} cancelled part of "
                            f"cancelled job group {self.tag}")
        return [json.dumps({"node": n.name, **encode(n.outcome)})
                for n in self.nodes.values() if n.outcome is not None]

    def registered(self) -> bool:
        return all(n.registered.is_set() for n in self.nodes.values() if n.plan != "absent")

    def tell(self, node: str, command: str, argument: Any = None) -> None:
        self.nodes[node].commands.put((command, argument))

    def fail(self, node: str, error: str = "ValueError: boom") -> None:
        self.tell(node, "fail", error)

    def finish(self) -> None:
        for name in self.nodes:
            self.tell(name, "finish")

    def cancel(self) -> None:
        self.cancelled.set()
        for node in self.nodes.values():
            node.commands.put(("cancelled", None))


class Application(SparkApplication):
    """A Spark application of *slots* free task slots (``local[4]`` by its master URL) whose
    jobs are :class:`Job`; *plan(attempt, node)* says how each node's task behaves:
    ``"runs"`` (the default), ``"absent"`` or ``"stuck"`` (see :class:`Node`)."""

    kind = "classic"

    def __init__(self, plan: Any = None, master: str = "local[4]") -> None:
        self.plan = plan or (lambda attempt, node: "runs")
        self._master = master
        self.slots = 4
        self.answers: list[int] = []  # what free_slots() answered, in order
        self.on_free_slots: Any = None  # called before answering (a test's hook)
        self.cluster: Cluster | None = None
        self.jobs: list[Job] = []
        self.cancels: list[str] = []

    @property
    def master(self) -> str:
        return self._master

    def conf(self, key, default=None):
        return default

    def free_slots(self):
        if self.on_free_slots is not None:
            self.on_free_slots()
        self.answers.append(self.slots)
        return self.slots

    def executor_losses(self):
        return None

    def replace_executor(self, executor):
        return True

    def default_control_host(self):
        return "127.0.0.1"

    def submit(self, tag, description, task, n):
        cluster = self.cluster
        assert cluster is not None
        attempt = cluster._attempt  # made before it is started
        job = Job(attempt.number, tag, attempt.roles, cluster._server, cluster._control_key,
                  self.plan)
        self.jobs.append(job)
        return job.run()

    def cancel(self, tag):
        self.cancels.append(tag)
        for job in self.jobs:
            if job.tag == tag:
                job.cancel()

    def job(self, number: int) -> Job:
        """Attempt *number*'s job, once submitted and its nodes (all but the absent) are
        registered."""
        eventually(lambda: len(self.jobs) > number and self.jobs[number].registered(),
                   timeout=WAIT, what=f"attempt {number}'s job submitted, its nodes registered")
        return self.jobs[number]


@pytest.fixture
def start():
    """``start(application, **run_options)``: a Cluster of 2 sync workers on *application*,
    started (its nodes registered); stopped after the test."""
    clusters: list[Cluster] = []

    def make(application: Application, num_workers: int = 2, on_report: Any = None,
             progress: bool = False, **options: Any) -> Cluster:
        settings = {"mode": "sync", "num_workers": num_workers, "log_dir": None,
                    "keras": "default", "tensorboard": False, "reservation_timeout": 60.0,
                    "max_attempts": 1, "env": {}, "input_mode": "tensorflow", **options}
        cluster = Cluster.__new__(Cluster)
        application.cluster = cluster
        Cluster.__init__(cluster, application, main, None, roles("sync", num_workers, 0, False),
                         run_options(**settings), progress=progress, on_report=on_report)
        clusters.append(cluster)
        cluster._start()
        return cluster

    yield make
    for cluster in clusters:  # never hangs the suite, whatever the test left running
        threading.Thread(target=cluster.shutdown, kwargs={"wait": False}, daemon=True).start()


def shut_down(cluster: Cluster) -> threading.Thread:
    """``cluster.shutdown(wait=False)`` from another thread, as a caller (or Ctrl-C) would,
    joined for :data:`WAIT` s: alive if it still blocks."""
    thread = threading.Thread(target=cluster.shutdown, kwargs={"wait": False}, daemon=True)
    thread.start()
    thread.join(WAIT)
    return thread


# -- a stop while the gang restarts ------------------------------------------------------------


def test_a_stop_while_a_restart_waits_for_task_slots_ends_it_at_once(start):
    app = Application()
    c = start(app, max_attempts=3, reservation_timeout=600)
    app.slots = 1  # worker:1's executor is gone; the restart waits for another
    app.job(0).fail("worker:1")
    eventually(lambda: 1 in app.answers, timeout=WAIT, what="the restart waiting for slots")
    assert not shut_down(c).is_alive(), "shutdown() waited for the slots"
    with pytest.raises(ClusterError) as stopped:
        c.wait(0)
    assert str(stopped.value) == ("the cluster was shut down before main_fun finished; the "
                                  "gang was restarting after: worker:1 failed: ValueError: boom")
    assert len(app.jobs) == 1  # no attempt was made after the stop


def test_a_stop_as_a_restart_finds_its_task_slots_makes_no_new_attempt(start):
    app = Application()
    c = start(app, max_attempts=3)

    asked = threading.Event()

    def slots_once_stopped() -> None:  # the slots' answer comes after the stop began
        asked.set()
        if not c._shutdown.wait(WAIT):
            raise AssertionError("no stop came")

    app.on_free_slots = slots_once_stopped
    app.job(0).fail("worker:1")
    assert asked.wait(WAIT), "the restart asked for no task slots"
    assert not shut_down(c).is_alive()
    with pytest.raises(ClusterError, match="^the cluster was shut down before main_fun finished"):
        c.wait(0)
    assert len(app.jobs) == 1


def test_a_stop_while_the_restarted_gang_registers_ends_it_at_once(start):
    app = Application(plan=lambda attempt, node: "absent" if attempt == 1 else "runs")
    c = start(app, max_attempts=3, reservation_timeout=600)
    app.job(0).fail("worker:1")
    eventually(lambda: len(app.jobs) == 2, timeout=WAIT, what="the restart submitted")
    assert not shut_down(c).is_alive(), "shutdown() waited for the nodes to register"
    with pytest.raises(ClusterError) as stopped:
        c.wait(0)
    assert str(stopped.value) == "the cluster was shut down before main_fun finished"
    assert app.cancels == [app.jobs[1].tag]  # its nodes could not be told to stop


def test_an_attempt_made_after_a_stop_is_stopped_as_it_is_made(start):
    app = Application()
    c = start(app)
    first = c._attempt
    c._shutdown.set()  # as _stop() does, before it finds the attempt
    attempt = c._new_attempt(1, c._gang)
    attempt.wait_registered(5.0)  # returns at once: it was told to stop
    assert attempt.stopped_early
    first.request_stop()  # the rest of the stop
    with pytest.raises(ClusterError, match="^the cluster was shut down before main_fun finished"):
        c.wait(WAIT)


# -- failures during an attempt's teardown and a restart's registration ------------------------


def test_a_peer_dropped_when_its_stuck_task_is_cancelled_is_not_the_cause(start, monkeypatch):
    # worker:1 fails before its peer's barrier allGather; worker:0's task, stuck there, cannot
    # answer "stop": the job's cancellation drops its connection, which is no lost node.
    monkeypatch.setattr(attempt_module, "STOP_TIMEOUT", 0.2)
    app = Application(plan=lambda attempt, node: "stuck" if node == "worker:0" else "runs")
    c = start(app, min_workers=1)
    app.job(0).fail("worker:1", "OSError: [Errno 28] No space left on device")
    with pytest.raises(ClusterError) as failed:
        c.wait(WAIT)
    assert str(failed.value) == "worker:1 failed: OSError: [Errno 28] No space left on device"
    assert failed.value.node == "worker:1"
    assert len(app.jobs) == 1  # counted (max_attempts=1), not restarted as a lost node
    assert app.cancels == [app.jobs[0].tag]


def test_a_failure_while_the_restarted_gang_registers_is_counted_and_restarts(start):
    # attempt 2: worker:1 is still starting when worker:0 fails
    app = Application(plan=lambda attempt, node: "absent" if (attempt, node) == (1, "worker:1")
                      else "runs")
    c = start(app, max_attempts=3)
    app.job(0).fail("worker:1")
    app.job(1).fail("worker:0", "ValueError: bad shard")
    app.job(2).finish()
    result = c.wait(WAIT)
    assert result.attempts == 3
    assert result.values == {"worker:0": "worker:0", "worker:1": "worker:1"}
    assert c._counted == 2


def test_a_node_lost_while_the_restarted_gang_registers_is_no_attempt_used(start):
    app = Application(plan=lambda attempt, node: "absent" if (attempt, node) == (1, "worker:1")
                      else "runs")
    c = start(app, min_workers=1)  # max_attempts=1: only losses may restart
    app.job(0).tell("worker:1", "drop")
    app.job(1).tell("worker:0", "drop")
    app.job(2).finish()
    assert c.wait(WAIT).attempts == 3
    assert c._counted == 0


def test_a_registration_timeout_of_a_restart_counts_as_a_failed_attempt(start, cluster_log):
    app = Application(plan=lambda attempt, node: "absent" if (attempt, node) == (1, "worker:1")
                      else "runs")
    c = start(app, max_attempts=3, reservation_timeout=2.0)
    app.job(0).fail("worker:1")
    app.job(2).finish()
    assert c.wait(WAIT).attempts == 3
    assert any(r.getMessage().startswith("attempt 2 failed (2 of max_attempts=3); restarting "
                                         "every node: only 1 of 2 nodes registered within 2 s "
                                         "(missing: worker:1)")
               for r in cluster_log.records)


# -- the supervisor's own errors ---------------------------------------------------------------


class CancelFails(Application):
    """A Spark Connect session whose link reset as the job was interrupted: the interruption
    reached the server, the call raised."""

    def cancel(self, tag):
        super().cancel(tag)
        raise RuntimeError("[CONNECT] grpc: UNAVAILABLE: connection to the Connect server reset")


def test_a_cancel_that_raises_is_logged_and_the_failure_still_reported(
        start, monkeypatch, cluster_log):
    monkeypatch.setattr(attempt_module, "STOP_TIMEOUT", 0.2)
    app = CancelFails(plan=lambda attempt, node: "stuck" if node == "worker:0" else "runs")
    c = start(app)
    app.job(0).fail("worker:1", "ValueError: bad input in main_fun")
    with pytest.raises(ClusterError) as failed:
        c.wait(WAIT)
    assert str(failed.value) == "worker:1 failed: ValueError: bad input in main_fun"
    assert any(r.getMessage().startswith("cannot cancel the Spark job ")
               for r in cluster_log.records)


def test_an_unexpected_error_of_the_supervisor_keeps_the_attempts_failure(start):
    app = Application()
    c = start(app, max_attempts=2)

    def gone() -> None:
        raise RuntimeError("py4j: the JVM is gone")

    app.on_free_slots = gone  # the restart asks for task slots
    app.job(0).fail("worker:1")
    with pytest.raises(ClusterError) as failed:
        c.wait(WAIT)
    assert str(failed.value).startswith("worker:1 failed: ValueError: boom\n--- and then the "
                                        "cluster's driver failed supervising it (RuntimeError: "
                                        "py4j: the JVM is gone; ")
    assert failed.value.node == "worker:1"
    assert isinstance(failed.value.__cause__, RuntimeError)


def test_a_cluster_ended_without_a_result_says_so(start):
    app = Application()
    c = start(app)
    app.job(0).finish()
    c.wait(WAIT)
    c._result = None  # as if its supervisor had ended without either
    with pytest.raises(ClusterError, match="^the cluster ended without a result or an error"):
        c.wait(0)


# -- the driver's threads ----------------------------------------------------------------------


def _growth_watchers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.endswith("-grow") and t.is_alive()]


def test_the_growth_watcher_ends_when_run_fails_after_starting_it(start, monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "_TENSORBOARD_TIMEOUT", 0.2)  # TensorBoard never answers
    monkeypatch.setattr(driver, "_GROW_CHECK", 0.05)
    app = Application(master="spark://master:7077")  # slots that may come back
    app.slots = 1  # a smaller first attempt: its growth is watched
    before = _growth_watchers()
    with pytest.raises(ClusterError, match="^TensorBoard did not start within 0 s"):
        start(app, min_workers=1, reservation_timeout=0.5, tensorboard=True,
              log_dir=str(tmp_path))
    eventually(lambda: _growth_watchers() == before, timeout=WAIT,
               what=lambda: f"the growth watchers {_growth_watchers()} ended")


def test_a_shutdown_from_on_report_stops_the_cluster_and_closes_the_progress_line(
        start, capsys):
    box: dict[str, Any] = {}
    done = threading.Event()

    def on_report(record):
        try:
            box["cluster"].shutdown(wait=False)  # early stopping, from the driver
        except Exception as e:  # noqa: BLE001 - what the dispatcher would only log
            box["raised"] = e
        done.set()

    app = Application()
    c = start(app, on_report=on_report, progress=True)
    box["cluster"] = c
    app.job(0).tell("worker:0", "report",
                    Report(step=1, time=0.0, attempt=0, values={"loss": 0.1}))
    assert done.wait(WAIT)
    assert "raised" not in box
    eventually(lambda: c._progress._bar is None, timeout=WAIT, what="the progress line closed")
    with pytest.raises(ClusterError, match="^the cluster was shut down before main_fun finished"):
        c.wait(0)
