"""Node processes forked from a Spark worker whose daemon preloaded TensorFlow (warm nodes),
and the process handle the task supervises them by."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster import spawn
from tfrecord_io.cluster.spawn import ForkedProcess

import cluster_programs
from processes import node_processes


def _fork_sleeper(seconds: float) -> ForkedProcess:
    read_out, write_out = os.pipe()
    read_err, write_err = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child sleeps and exits
        time.sleep(seconds)
        os._exit(3)
    os.close(write_out)
    os.close(write_err)
    return ForkedProcess(pid, os.fdopen(read_out, "rb"), os.fdopen(read_err, "rb"))


def test_a_forked_process_gives_its_exit_status():
    process = _fork_sleeper(0.1)
    assert process.wait(30) == 3
    assert process.returncode == 3


def test_a_forked_process_killed_by_a_signal_gives_the_negative_signal():
    process = _fork_sleeper(60)
    assert process.poll() is None
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(30) == -signal.SIGKILL


def test_waiting_for_a_running_forked_process_times_out_as_popen_does():
    process = _fork_sleeper(60)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(0.2)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)


def test_nodes_fork_from_their_worker_when_its_daemon_preloaded_tensorflow(sc, tmp_path):
    # The tests' Spark applications use tfrecord_io.cluster.daemon (conftest.py).
    c = cluster.run(sc, cluster_programs.record, {"out": str(tmp_path), "allreduce": True},
                    num_workers=2)
    with c:
        c.wait(timeout=300)
    nodes = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("*.json"))]
    assert len(nodes) == 2
    for node in nodes:
        assert "-m tfrecord_io.cluster.daemon" in node["command_line"]
        assert node["pgid"] == node["pid"]
        assert node["allreduce"] == 3.0
        assert node["keras_package"] == node["layers_package"] == "keras"  # Keras 3 by default
    assert node_processes(c.name) == []


def test_a_worker_where_tensorflow_ran_starts_its_nodes_as_new_interpreters(sc):
    # Forked from such a worker, a node would lack TensorFlow's threads and hang in its first op.
    check = cluster_programs.warm_before_and_after_tensorflow_runs
    (answer,) = sc.parallelize([0], 1).mapPartitions(check).collect()
    assert json.loads(answer) == [True, False]


def test_a_forked_node_imports_from_the_pythonpath_of_its_environment(tmp_path, monkeypatch):
    # cluster.run(env={"PYTHONPATH": ...}) reaches a new interpreter's sys.path; a fork's too.
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "forked_node_user_module.py").write_text("VALUE = 7\n")
    workdir = tmp_path / "node"
    workdir.mkdir()

    def main(argv):
        import forked_node_user_module

        return forked_node_user_module.VALUE

    monkeypatch.setattr(spawn.node_process, "main", main)
    monkeypatch.setattr(spawn.daemon, "prepare_node", lambda: None)  # no TensorFlow preloaded
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(lib), os.environ.get("PYTHONPATH", "")]))
    process = spawn._fork(str(workdir), env, ())
    assert process.wait(60) == 7, process.stderr.read().decode()
