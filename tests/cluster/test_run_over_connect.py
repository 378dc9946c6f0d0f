"""``cluster.run`` on a SparkSession: training whose values and metrics come back after a
recovered failure, on a classic session and on a Spark Connect client (``any_spark``); then,
over Connect (the classic paths are tests/cluster/test_cluster_*.py's, on the SparkContext):
TensorBoard, a failing or killed node named within seconds, too few slots refused before
submitting, nodes that cannot connect back, and nothing left behind. Over Connect the gang is a
barrier stage of the DataFrame API on the Connect server's local cluster, and the nodes connect back
to this process."""

from __future__ import annotations

import os
import re
import signal
import socket
import time
import urllib.request

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster import driver as cluster_driver
from tfrecord_io.cluster.application import application_of
from tfrecord_io.cluster.channel import ControlServer

import cluster_programs
from processes import (
    alive,
    executor_of,
    free_slots_again,
    listening_ports,
    node_pids,
    node_processes,
    node_processes_after,
    started_nodes,
)


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_two_workers_return_their_values_and_metrics_after_a_recovered_failure(any_spark):
    seen = []
    c = cluster.run(any_spark, cluster_programs.report_and_return,
                    {"steps": 3, "fail_on": "worker:1"}, num_workers=2, max_attempts=2,
                    on_report=seen.append, progress=False)
    control = _port(c.control_address)
    with c:
        result = c.wait(timeout=300)
    assert result.attempts == 2
    assert result.values == {"worker:0": {"node": "worker:0", "attempt": 1},
                             "worker:1": {"node": "worker:1", "attempt": 1}}
    assert result.chief == {"node": "worker:0", "attempt": 1}
    for attempt in (0, 1):
        steps = [r.step for r in result.metrics if r.attempt == attempt and r.node == "worker:1"]
        assert steps == [1, 2, 3]
    assert seen == list(result.metrics)
    assert node_processes(c.name) == []
    assert control not in listening_ports()


def test_tensorboard_answers_from_the_chiefs_executor(connect_spark, tmp_path):
    flag = tmp_path / "go"
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    c = cluster.run(connect_spark, cluster_programs.wait_for_file,
                    {"out": str(tmp_path), "flag": str(flag)}, num_workers=2, tensorboard=True,
                    log_dir=str(log_dir), progress=False)
    with c:
        url = c.tensorboard_url
        assert url and url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
        flag.write_text("go")
        c.wait(timeout=300)
    assert _port(url.rstrip("/")) not in listening_ports()
    assert node_processes(c.name) == []


def test_an_exception_names_the_node_and_its_traceback_within_seconds(connect_spark, tmp_path):
    c = cluster.run(connect_spark, cluster_programs.raise_on,
                    {"out": str(tmp_path), "node": "worker:1"}, num_workers=2, progress=False)
    started = time.monotonic()
    with c, pytest.raises(cluster.ClusterError) as info:
        c.wait(timeout=300)
    assert time.monotonic() - started < 60  # no Spark retry, no timeout in between
    assert info.value.node == "worker:1"
    assert str(info.value).startswith("worker:1 failed: ValueError: planned failure on worker:1")
    assert "Traceback (most recent call last)" in str(info.value)
    assert "raise_on" in str(info.value)  # the frame of main_fun on the node
    assert node_processes(c.name) == []
    assert not any(alive(pid) for pid in node_pids(tmp_path).values())


def test_a_node_killed_from_outside_is_named_and_its_peer_stopped(connect_spark, tmp_path):
    c = cluster.run(connect_spark, cluster_programs.wait_for_file,
                    {"out": str(tmp_path), "flag": str(tmp_path / "never")}, num_workers=2,
                    progress=False)
    with c:
        pids = started_nodes(tmp_path, 2)
        os.kill(pids["worker-1"], signal.SIGKILL)
        with pytest.raises(cluster.ClusterError, match=r"^worker:1 failed: .*SIGKILL") as info:
            c.wait(timeout=120)
    assert info.value.node == "worker:1"
    assert node_processes(c.name) == []
    assert not alive(pids["worker-0"])


def test_a_lost_executor_is_named_with_the_reason_the_connect_servers_driver_gives(
        connect_spark, tmp_path):
    application = application_of(connect_spark)
    slots = application.free_slots()
    assert slots == 4  # local-cluster[2,2,...]: asked of the server's driver, no job run
    c = cluster.run(connect_spark, cluster_programs.wait_for_file,
                    {"out": str(tmp_path), "flag": str(tmp_path / "never")}, num_workers=2,
                    progress=False)
    with c:
        pids = started_nodes(tmp_path, 2)
        os.kill(executor_of(pids["worker-1"]), signal.SIGKILL)
        with pytest.raises(cluster.ClusterError) as info:
            c.wait(timeout=120)
    assert re.search(r"worker:1 .*Spark lost executor \d+ on \S+: \S", str(info.value)), \
        str(info.value)
    # the orphaned node follows its Python worker out
    assert node_processes_after(c.name, 30.0) == []
    free_slots_again(application, slots)  # the master starts a new executor: 4 slots


def test_too_few_slots_fail_at_once_before_submitting(connect_spark, tmp_path):
    # The test applications run on local-cluster[EXECUTORS,CORES,MEMORY] masters.
    master = connect_spark.conf.get("spark.master")
    executors, cores, _ = master[len("local-cluster["):-1].split(",")
    have = int(executors) * int(cores)
    started = time.monotonic()
    with pytest.raises(cluster.ClusterError) as info:
        cluster.run(connect_spark, cluster_programs.record, {"out": str(tmp_path)},
                    num_workers=have + 1, progress=False)
    assert time.monotonic() - started < 10
    assert f"needs {have + 1} task slots (one per node)" in str(info.value)
    assert f"has {have} ({master}" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_nodes_that_cannot_connect_back_fail_fast_naming_the_address(
        connect_spark, tmp_path, monkeypatch):
    with socket.socket() as closed:  # a port nothing listens on once closed
        closed.bind(("127.0.0.1", 0))
        unreachable = f"127.0.0.1:{closed.getsockname()[1]}"

    class Unreachable(ControlServer):
        """Listens as usual, but tells the nodes an address that refuses them."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.address = unreachable

    monkeypatch.setattr(cluster_driver, "ControlServer", Unreachable)
    started = time.monotonic()
    with pytest.raises(cluster.ClusterError) as info:
        cluster.run(connect_spark, cluster_programs.record, {"out": str(tmp_path)}, num_workers=2,
                    reservation_timeout=300, progress=False)
    assert time.monotonic() - started < 120  # not the 300 s of reservation_timeout
    message = str(info.value)
    assert f"could not connect back to the driver's control channel at {unreachable}" in message
    assert "control_host" in message and "TFRECORD_IO_CONTROL_HOST" in message
    assert list(tmp_path.iterdir()) == []


def test_a_control_host_this_machine_cannot_listen_on_fails_at_once_saying_what_to_do(
        connect_spark, tmp_path):
    with pytest.raises(cluster.ClusterError) as info:
        cluster.run(connect_spark, cluster_programs.record, {"out": str(tmp_path)}, num_workers=2,
                    control_host="192.0.2.1", progress=False)  # TEST-NET-1: never local
    assert str(info.value).startswith("cannot listen for the nodes on 192.0.2.1")
    assert "TFRECORD_IO_CONTROL_HOST" in str(info.value)
