"""A failing node makes Cluster.wait raise ClusterError naming it, every other node is stopped,
and nothing of the cluster is left behind; with min_workers, a node lost with its executor
restarts the gang without using up an attempt. (An exception before the first step and a node
killed from outside are tested on both kinds of session, in test_run_over_connect.py.)"""

from __future__ import annotations

import os
import signal

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


def test_killed_node_process_names_the_node_and_the_signal(sc, tmp_path):
    error, c = _fails(
        sc, cluster_programs.kill_self_on, {"out": str(tmp_path), "node": "worker:0"}
    )
    assert error.node == "worker:0"
    assert "was killed by SIGKILL (9)" in str(error)
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
