"""An attempt's registration and end (tfrecord_io.cluster.attempt) against a real control
server on loopback, without Spark: the application is a stand-in that answers for its task
slots and ends its job as told."""

from __future__ import annotations

import socket
import threading

import pytest

from tfrecord_io.cluster import attempt as attempt_module
from tfrecord_io.cluster.attempt import Attempt
from tfrecord_io.cluster.channel import ControlServer, control_key, new_secret
from tfrecord_io.cluster.description import AttemptDescription
from tfrecord_io.cluster.messages import Done, FailureKind, Hello, Stop
from tfrecord_io.cluster.options import run_options
from tfrecord_io.cluster.roles import roles
from tfrecord_io.errors import ClusterError

from waiting import eventually


class Application:
    """What the attempt asks of its Spark application here: its free task slots."""

    def free_slots(self) -> int:
        return 3


#: What a Py4J error says when Spark cancelled every job (pyspark's Ctrl-C handler).
ALL_JOBS_CANCELLED = (
    "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
    ": org.apache.spark.SparkException: [SPARK_JOB_CANCELLED] Job 1 cancelled as part of "
    "cancellation of all jobs SQLSTATE: XXKDA\n"
    "\tat org.apache.spark.errors.SparkCoreErrors$.sparkJobCancelled(SparkCoreErrors.scala:222)\n"
    "\tat org.apache.spark.scheduler.DAGScheduler.handleJobCancellation(DAGScheduler.scala:4404)"
)


class SparkJob(Application):
    """An application whose barrier job runs until :meth:`end` (raising *error*) or until the
    attempt cancels it (raising *cancelled*)."""

    def __init__(self, cancelled: str = "") -> None:
        self._ended = threading.Event()
        self._error: BaseException | None = None
        self._cancelled = cancelled
        self.cancels: list[str] = []

    def submit(self, tag, description, task, n):
        self._ended.wait(30)
        if self._error is not None:
            raise self._error
        return []

    def end(self, error: BaseException) -> None:
        self._error = error
        self._ended.set()

    def cancel(self, tag):
        self.cancels.append(tag)
        self.end(Exception(self._cancelled))


@pytest.fixture
def make_attempt():
    servers: list[ControlServer] = []

    def make(application: Application, workers: int = 1) -> tuple[Attempt, ControlServer]:
        key = control_key(new_secret())
        box: dict[str, Attempt] = {}
        server = ControlServer("127.0.0.1", key,
                               lambda h, m, p: box["a"].on_message(h, m, p),
                               lambda h, reason: box["a"].on_lost(h.node, reason),
                               admit=lambda h: box["a"].admit(h))
        servers.append(server)
        options = run_options(mode="sync", num_workers=workers, log_dir=None, keras="default",
                              tensorboard=False, reservation_timeout=10, max_attempts=1,
                              env={}, input_mode="tensorflow")
        description = AttemptDescription(options, cluster="c", driver=server.address,
                                          control_key=key, feed_key="f", number=0,
                                          num_workers=workers)
        box["a"] = Attempt(application=application, roles=roles("sync", workers, 0, False),
                           description=description, payload=b"", group="g", server=server)
        return box["a"], server

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def attempt(make_attempt):
    return make_attempt(Application())


def test_a_registration_that_times_out_counts_the_connections_refused_since_it_began(
        attempt):
    attempt, server = attempt
    host, port = server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as stranger:
        stranger.sendall(b"GET / HTTP/1.1\r\nHost: driver\r\n\r\n" * 4)  # another protocol
        eventually(lambda: server.refused == 1, timeout=10, every=0.01,
                   what=lambda: f"{server.refused} refused")
        with pytest.raises(ClusterError) as failed:
            attempt.wait_registered(0.5)
    assert str(failed.value).startswith("only 0 of 1 nodes registered within 0 s (missing: ")
    assert str(failed.value).endswith(
        "the application has 3 task slots now, other jobs may be holding them; the control "
        "server refused 1 connection(s) since the attempt began (logged at WARNING with their "
        "peers)")


def test_a_spark_job_cancelled_by_someone_else_ends_the_attempt_as_a_stop_saying_so(
        make_attempt):
    job = SparkJob()
    attempt, _ = make_attempt(job)
    attempt.start()
    job.end(Exception(ALL_JOBS_CANCELLED))
    error = attempt.finish()
    assert attempt.cancelled_from_outside()
    assert str(error) == (
        "the cluster's Spark job was cancelled, not by the cluster (Ctrl-C, sc.cancelAllJobs() "
        "or its job group cancelled): every node was stopped and the cluster was not restarted; "
        "run it again to start over (org.apache.spark.SparkException: [SPARK_JOB_CANCELLED] "
        "Job 1 cancelled as part of cancellation of all jobs SQLSTATE: XXKDA)")
    assert attempt.failure() is error


def test_a_node_lost_with_a_cancelled_spark_job_is_not_named_its_cause(make_attempt):
    job = SparkJob()
    attempt, _ = make_attempt(job)
    attempt.start()
    attempt.on_lost("worker:0", "connection reset")  # its task was killed with the job
    job.end(Exception(ALL_JOBS_CANCELLED))
    error = attempt.finish()
    assert attempt.cancelled_from_outside()
    assert str(error).startswith("the cluster's Spark job was cancelled, not by the cluster")
    assert not attempt.lost_a_node()


def test_a_spark_job_that_fails_otherwise_is_a_failure_to_restart_after(make_attempt):
    job = SparkJob()
    attempt, _ = make_attempt(job)
    attempt.start()
    job.end(Exception("Job aborted due to stage failure: Task 0 in stage 1.0 failed"))
    error = attempt.finish()
    assert not attempt.cancelled_from_outside()
    assert str(error).startswith(
        "the cluster's Spark job ended before every node finished: Job aborted due to stage "
        "failure")


def test_the_attempt_cancelling_its_own_spark_job_is_no_cancellation_from_outside(
        make_attempt):
    job = SparkJob(cancelled=": org.apache.spark.SparkException: [SPARK_JOB_CANCELLED] Job 1 "
                             "cancelled part of cancelled job group g")
    attempt, _ = make_attempt(job)
    attempt.start()
    attempt.request_stop()
    assert attempt.finish() is None
    assert job.cancels == ["g"]
    assert not attempt.cancelled_from_outside()


def _register(attempt: Attempt, *nodes: str) -> dict[str, Hello]:
    """*nodes* registered with *attempt*, as the control server hands on their hellos."""
    hellos = {}
    for node in nodes:
        hellos[node] = Hello(node=node, attempt=attempt.number, host="127.0.0.1", pid=1, gpus=[])
        attempt.on_message(hellos[node], hellos[node])
    return hellos


def test_a_connection_dropped_while_the_attempt_stops_is_not_its_cause(make_attempt,
                                                                        monkeypatch):
    # worker:1's task failed; worker:0's, stuck in a barrier allGather, cannot answer "stop":
    # its connection drops as the attempt ends (here: as it is told to stop).
    monkeypatch.setattr(attempt_module, "_CAUSE_WINDOW", 0.05)
    job = SparkJob()
    attempt, server = make_attempt(job, workers=2)
    attempt.start()
    hellos = _register(attempt, "worker:0", "worker:1")
    attempt.on_message(hellos["worker:1"], Done(ok=False, kind=FailureKind.RAISED,
                                                error="OSError: No space left on device"))

    def send(node, number, message):
        assert (node, message) == ("worker:0", Stop())
        attempt.on_lost(node, "connection reset")
        job.end(Exception("Job aborted: task killed"))
        return True

    monkeypatch.setattr(server, "send", send)
    error = attempt.finish()
    assert str(error) == "worker:1 failed: OSError: No space left on device"
    assert attempt.failure() is error
    assert not attempt.lost_a_node()


def test_a_registration_stopped_on_request_returns_at_once(make_attempt):
    attempt, _ = make_attempt(SparkJob(), workers=2)
    _register(attempt, "worker:0")
    attempt.request_stop()
    attempt.wait_registered(600)  # neither waits for worker:1 nor raises
    assert attempt.stopped_early


def test_a_registration_that_failed_is_the_attempts_failure_as_a_running_ones(make_attempt,
                                                                             monkeypatch):
    monkeypatch.setattr(attempt_module, "_CAUSE_WINDOW", 0.05)
    job = SparkJob()
    attempt, server = make_attempt(job, workers=2)
    attempt.start()
    hellos = _register(attempt, "worker:0")

    def send(node, number, message):  # worker:0 stops when told
        attempt.on_message(hellos[node], Done(ok=True, stopped=True))
        return True

    monkeypatch.setattr(server, "send", send)
    with pytest.raises(ClusterError) as late:
        attempt.wait_registered(0.2)
    attempt.fail_to_register(late.value)
    assert attempt.finish() is late.value
    assert job.cancels == ["g"]  # worker:1's task never started: the job is cancelled
    assert not attempt.lost_a_node()


def test_a_cancel_that_raises_is_logged_and_the_attempt_ends(make_attempt, cluster_log):
    class Unreachable(SparkJob):  # a Connect session whose link reset during interruptTag
        def cancel(self, tag):
            super().cancel(tag)
            raise RuntimeError("[CONNECT] grpc: UNAVAILABLE")

    job = Unreachable()
    attempt, _ = make_attempt(job)
    attempt.start()
    attempt.request_stop()
    assert attempt.finish() is None
    assert job.cancels == ["g"]
    assert [r.getMessage() for r in cluster_log.records if r.levelname == "WARNING"] == [
        "cannot cancel the Spark job g: waiting for it to end by itself"]


def test_waiting_for_tensorboard_ends_when_the_chief_finished_before_it_served(make_attempt):
    # The chief's TensorBoard goes with its node: a main_fun quicker than TensorBoard's start
    # (TensorFlow's import) leaves none to wait for, while the other nodes (ps-mode servers, an
    # evaluator, slower workers) keep the Spark job running.
    attempt, _ = make_attempt(SparkJob(), workers=2)
    hellos = _register(attempt, "worker:0", "worker:1")
    attempt.on_message(hellos["worker:0"], Done(ok=True))
    attempt.wait_tensorboard(2)  # returns: no "TensorBoard did not start within 2 s"
    assert attempt.tensorboard_url is None
