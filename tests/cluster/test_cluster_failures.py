"""A failing node makes Cluster.wait raise ClusterError naming it, every other node is stopped,
and nothing of the cluster is left behind; with min_workers, a node lost with its executor
restarts the gang without using up an attempt. (An exception before the first step and a node
killed from outside are tested on both kinds of session, in test_run_over_connect.py.)"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster.application import application_of

import cluster_programs
from processes import (
    alive,
    executor_of,
    free_slots_again,
    node_pids,
    node_processes,
    started_nodes,
)


def _fails(sc, program, args, **kw) -> tuple[cluster.ClusterError, cluster.Cluster]:
    c = cluster.run(sc, program, args, num_workers=2, **kw)
    with c, pytest.raises(cluster.ClusterError) as info:
        c.wait(timeout=300)
    return info.value, c


def test_exception_mid_training_names_the_node(sc, tmp_path):
    args = {"out": str(tmp_path), "fail_node": "worker:1", "fail_step": 20, "how": "raise"}
    error, c = _fails(sc, cluster_programs.train, args)
    assert error.node == "worker:1"
    assert "RuntimeError: planned failure at step 20 on worker:1" in str(error)
    assert node_processes(c.name) == []


def test_a_return_value_that_cannot_be_unpickled_names_the_node(sc):
    error, c = _fails(sc, cluster_programs.return_what_cannot_be_unpickled, {})
    assert error.node in ("worker:0", "worker:1")
    assert "cannot be unpickled on the driver" in str(error)
    assert node_processes(c.name) == []


def test_main_fun_or_args_that_cannot_be_pickled_are_named(sc):
    with pytest.raises(TypeError, match="args cannot be pickled"):
        cluster.run(sc, cluster_programs.train, {"lock": threading.Lock()}, num_workers=2)


def test_a_stopped_spark_context_is_refused_saying_so():
    class Stopped:  # what SparkContext.stop() leaves
        _jsc = None

        def parallelize(self, *args): ...

        def getConf(self): ...  # noqa: N802 - pyspark's name

    with pytest.raises(ValueError, match="was stopped"):
        application_of(Stopped())


def test_killed_node_process_names_the_node_and_the_signal(sc, tmp_path):
    error, c = _fails(
        sc, cluster_programs.kill_self_on, {"out": str(tmp_path), "node": "worker:0"}
    )
    assert error.node == "worker:0"
    assert "was killed by SIGKILL (9)" in str(error)
    assert "out-of-memory" not in str(error)
    assert node_processes(c.name) == []
    assert not any(alive(pid) for pid in node_pids(tmp_path).values())


def test_node_killed_mid_training_names_the_node_not_its_peer(sc, tmp_path):
    args = {"out": str(tmp_path), "fail_node": "worker:1", "fail_step": 20, "how": "kill"}
    error, c = _fails(sc, cluster_programs.train, args)
    assert error.node == "worker:1"
    assert "SIGKILL" in str(error)
    assert node_processes(c.name) == []


def test_frozen_node_is_reported_and_killed(sc, tmp_path):
    c = cluster.run(sc, cluster_programs.wait_for_file,
                    {"out": str(tmp_path), "flag": str(tmp_path / "never")}, num_workers=2,
                    heartbeat_timeout=10)
    with c:
        pids = started_nodes(tmp_path, 2)
        os.kill(pids["worker-0"], signal.SIGSTOP)
        with pytest.raises(cluster.ClusterError, match="sent no heartbeat for 10 s") as info:
            c.wait(timeout=120)
    assert info.value.node == "worker:0"
    assert node_processes(c.name) == []
    assert not any(alive(pid) for pid in pids.values())


def test_with_min_workers_a_lost_executor_restarts_the_gang_without_using_an_attempt(
        sc, tmp_path):
    application = application_of(sc)
    slots = application.free_slots()
    c = cluster.run(sc, cluster_programs.idle_until_restarted, {"out": str(tmp_path)},
                    num_workers=2, min_workers=1, max_attempts=1, progress=False)
    with c:
        pids = started_nodes(tmp_path, 2)
        os.kill(executor_of(pids["worker-1"]), signal.SIGKILL)
        result = c.wait(timeout=300)
    assert result.attempts == 2  # with max_attempts=1: the loss used up no attempt
    assert result.chief == [1, 2]  # the other executor's 2 slots hold the gang again
    assert result.resizes == []
    assert node_processes(c.name) == []
    free_slots_again(application, slots)  # the master starts a new executor in its place


def test_a_spark_job_cancelled_from_outside_stops_the_cluster_without_a_restart(sc, tmp_path):
    c = cluster.run(sc, cluster_programs.idle_until_restarted, {"out": str(tmp_path)},
                    num_workers=2, max_attempts=3, progress=False)
    with c:
        started_nodes(tmp_path, 2)
        sc.cancelAllJobs()  # what pyspark's Ctrl-C handler does
        with pytest.raises(cluster.ClusterError) as info:
            c.wait(timeout=120)  # a restart would return its [1, 2]
    message = str(info.value)
    assert message.startswith("the cluster's Spark job was cancelled, not by the cluster "
                              "(Ctrl-C, sc.cancelAllJobs() or its job group cancelled)")
    assert "cancelled as part of cancellation of all jobs" in message
    assert "\n" not in message  # one line of Spark's error, not its Java stack
    assert node_processes(c.name) == []


def test_sys_exit_with_a_code_other_than_0_fails_the_node_saying_so(sc):
    with pytest.raises(cluster.ClusterError, match=r"worker:0 failed: main_fun called "
                       r"sys.exit\(2\)\n--- traceback on worker:0 ---") as info:
        with cluster.run(sc, cluster_programs.exit_with, {"code": 2}, num_workers=1,
                         progress=False) as c:
            c.wait(timeout=300)
    assert "SystemExit: 2" in str(info.value)  # the traceback's last line


def test_a_node_process_ended_with_status_0_before_main_fun_returned_is_named_so(sc):
    with pytest.raises(cluster.ClusterError, match=r"worker:0 failed: main_fun ended the node "
                       r"process \(os._exit\?\) before returning"):
        with cluster.run(sc, cluster_programs.os_exit_zero, {}, num_workers=1,
                         progress=False) as c:
            c.wait(timeout=300)


def test_an_exception_whose_str_raises_still_brings_its_traceback(sc):
    with pytest.raises(cluster.ClusterError) as info:
        with cluster.run(sc, cluster_programs.raise_what_cannot_be_printed, {}, num_workers=1,
                         progress=False) as c:
            c.wait(timeout=300)
    message = str(info.value)
    assert message.startswith("worker:0 failed: ")
    assert "_UnprintableError" in message.splitlines()[0]
    assert "--- traceback on worker:0 ---" in message
    assert "in raise_what_cannot_be_printed" in message
