"""The Spark task's supervision of its node process (tfrecord_io.cluster.task), without Spark:
a ``_Node`` started on a description written as its task writes it, with a stand-in for the
control connection."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from pyspark import cloudpickle

from tfrecord_io.cluster import node as node_process
from tfrecord_io.cluster import oom, spawn, tensorboard
from tfrecord_io.cluster.description import AttemptDescription, NodeDescription
from tfrecord_io.cluster.messages import Started
from tfrecord_io.cluster.options import NODE_VARIABLES, run_options
from tfrecord_io.cluster.roles import cluster_spec, roles, tf_config
from tfrecord_io.cluster.task import (
    _MAX_LINE,
    _claim,
    _forward,
    _Node,
    _reserve_port,
    _sweep,
)
from tfrecord_io.errors import ChannelError, TensorBoardError

import cluster_programs
from memory_cgroups import memory_limited
from processes import alive
from waiting import eventually


def _sleeping_node(tmp_path, tensorboard=False):
    """A chief's description and payload in *tmp_path* (main_fun sleeps 600 s), with its port."""
    options = run_options(mode="sync", num_workers=1, log_dir=str(tmp_path / "logs"),
                          keras="default", tensorboard=tensorboard, reservation_timeout=60.0,
                          max_attempts=1, env=None, input_mode="tensorflow")
    attempt = AttemptDescription(options, cluster="c-1", driver="127.0.0.1:1",
                                 control_key="c" * 64, feed_key="f" * 64, number=0,
                                 num_workers=1)
    (chief,) = roles("sync", 1, 0, False)
    port = _reserve_port("127.0.0.1")
    spec = cluster_spec([chief], [f"127.0.0.1:{port.getsockname()[1]}"])
    node = NodeDescription(attempt=attempt, role=chief, cluster_spec=spec,
                           tf_config=tf_config(spec, chief), host="127.0.0.1",
                           parent_pid=os.getpid(), port_fd=port.fileno())
    node.write(str(tmp_path))
    (tmp_path / node_process.MAIN_FILE).write_bytes(cloudpickle.dumps(
        (cluster_programs.sleep_then_write, {"seconds": 600, "out": str(tmp_path)})))
    return attempt, chief, node, port


def _record_starts(monkeypatch) -> list:
    """The node processes that spawn.start_node starts from now on, in a list kept up to
    date."""
    started = []
    start = spawn.start_node

    def start_node(*args):
        started.append(start(*args))
        return started[-1]

    monkeypatch.setattr(spawn, "start_node", start_node)
    return started


def test_a_node_is_ended_when_its_start_cannot_be_told_to_the_driver(tmp_path, monkeypatch):
    attempt, chief, node, port = _sleeping_node(tmp_path)
    started = _record_starts(monkeypatch)

    class GoneDriver:
        def send(self, message, payload=b""):
            if isinstance(message, Started):
                raise ChannelError("the driver is gone")

    with pytest.raises(ChannelError, match="the driver is gone"):
        _Node(attempt, chief, GoneDriver(), str(tmp_path)).run(node, [], port, None)
    (process,) = started
    try:
        # the task goes on living (a reused Spark worker): nothing else would ever end the node
        assert process.poll() is not None
        assert not alive(process.pid)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()


def _open_fds() -> set[int]:
    """This process's open file descriptors (not the one that listed them)."""
    listed = [int(fd) for fd in os.listdir("/proc/self/fd")]
    return {fd for fd in listed if _is_open(fd)}


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_node_is_ended_and_its_pipes_closed_when_a_step_after_its_start_raises(
        tmp_path, monkeypatch):
    attempt, chief, node, port = _sleeping_node(tmp_path)
    started = _record_starts(monkeypatch)

    class Driver:
        def send(self, message, payload=b""):
            pass

    def no_watch(pid):
        raise OSError("cannot read the memory cgroup")

    monkeypatch.setattr(oom, "OomWatch", no_watch)
    before = _open_fds() - {port.fileno()}
    with pytest.raises(OSError, match="cannot read the memory cgroup"):
        _Node(attempt, chief, Driver(), str(tmp_path)).run(node, [], port, None)
    (process,) = started
    try:
        assert process.poll() is not None
        assert not alive(process.pid)
        assert _open_fds() <= before  # no pipe end left open, nor the port
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()


def test_the_variables_a_task_sets_over_env_are_those_env_may_not_give(tmp_path, monkeypatch):
    # run(env=...) refuses NODE_VARIABLES because the task would override them: the list must
    # name every variable the task sets for its node (but those it leaves to env, or merges).
    for name in NODE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    options = run_options(mode="sync", num_workers=1, log_dir=None, keras="legacy",
                          tensorboard=False, reservation_timeout=60.0, max_attempts=1,
                          env={"TF_CPP_MIN_LOG_LEVEL": "0", "PYTHONPATH": "/mine",
                               "CUDA_VISIBLE_DEVICES": ""}, input_mode="tensorflow")
    attempt = AttemptDescription(options, cluster="c-1", driver="127.0.0.1:1",
                                 control_key="c" * 64, feed_key="f" * 64, number=0,
                                 num_workers=1)
    (chief,) = roles("sync", 1, 0, False)
    spec = cluster_spec([chief], ["127.0.0.1:1"])
    node = NodeDescription(attempt=attempt, role=chief, cluster_spec=spec,
                           tf_config=tf_config(spec, chief), host="127.0.0.1",
                           parent_pid=os.getpid())
    state = _Node(attempt, chief, None, str(tmp_path))
    env, *fds = state.environment(node, [])
    fds += state._report_pipe(env)
    for fd in fds:
        os.close(fd)
    given = {**os.environ, **options.env}
    assert {name for name, value in env.items() if given.get(name) != value} == {
        *NODE_VARIABLES, "PYTHONPATH"}
    assert env["PYTHONPATH"].endswith(os.pathsep + "/mine")  # merged, tfrecord-io's first
    assert (env["TF_CPP_MIN_LOG_LEVEL"], env["CUDA_VISIBLE_DEVICES"]) == ("0", "")


def test_a_line_longer_than_the_limit_reaches_the_driver_cut_while_it_is_still_written():
    # A progress bar redrawn with "\r" is one line for as long as it runs: the task must not
    # hold it whole (memory) nor wait for its end to forward it.
    read, write = os.pipe()
    sent = []

    class Driver:
        def send(self, message):
            sent.append(message)

    forwarding = threading.Thread(target=_forward, args=(os.fdopen(read, "rb"), "stderr",
                                                         Driver()), daemon=True)
    forwarding.start()
    with os.fdopen(write, "wb") as out:
        for _ in range(64):
            out.write(b"\r" + b"x" * 4096)  # 256 KiB, no newline yet
        out.flush()
        eventually(lambda: sent, timeout=30, every=0.05, what="the cut line")
        out.write(b"\nafter\n")
    forwarding.join(30)
    assert [(m.stream, m.line) for m in sent] == [
        ("stderr", ("\r" + "x" * 4096) * 3 + "\r" + "x" * (_MAX_LINE - 3 * 4097 - 1) + " ...[cut]"),
        ("stderr", "after"),
    ]


def test_the_working_directory_of_a_killed_task_goes_with_the_next_task_on_its_host(tmp_path):
    # A task killed (its executor lost, its Python worker ended) never reaches its cleanup: its
    # directory holds the node's description (keys, env) and main_fun's arguments.
    killed, running, unknown = (tmp_path / f"tfrecord-io-cluster-1-worker-{i}-x" for i in range(3))
    for directory in (killed, running, unknown):
        directory.mkdir()
        (directory / node_process.MAIN_FILE).write_bytes(b"arguments")
    task = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from tfrecord_io.cluster.task import _claim
        _claim({str(killed)!r})
        print("claimed", flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert task.stdout.readline() == "claimed\n"
        _sweep(str(tmp_path))
        assert killed.exists()  # its task still runs
    finally:
        task.kill()
        task.wait()
        task.stdout.close()
    _claim(str(running))  # this process: alive

    _sweep(str(tmp_path))

    assert not killed.exists()
    assert running.exists() and unknown.exists()  # alive, or not known to be dead


def test_a_stop_is_not_kept_waiting_for_tensorboard_to_start(tmp_path, monkeypatch):
    # TensorBoard imports TensorFlow: seconds on an idle machine, minutes on a busy one.
    attempt, chief, node, port = _sleeping_node(tmp_path, tensorboard=True)
    cancelled = threading.Event()

    class Board:
        url = "http://127.0.0.1:1/"

        def stop(self):
            pass

    def slow_start(log_dir, host, *, env=None, cancel=None):
        if cancel is None:
            time.sleep(30)
        elif cancel.wait(30):
            cancelled.set()
            raise TensorBoardError("stopped before it served")
        return Board()

    class Driver:
        def send(self, message, payload=b""):
            pass

    monkeypatch.setattr(tensorboard, "start", slow_start)
    state = _Node(attempt, chief, Driver(), str(tmp_path))
    threading.Timer(0.5, state.stop_requested.set).start()
    began = time.monotonic()
    done = state.run(node, [], port, None)
    assert done.ok and done.stopped
    assert time.monotonic() - began < 20
    assert cancelled.is_set()


def test_a_node_the_oom_killer_ended_is_reported_out_of_memory(tmp_path, monkeypatch):
    attempt, chief, node, port = _sleeping_node(tmp_path)
    (tmp_path / node_process.MAIN_FILE).write_bytes(
        cloudpickle.dumps((cluster_programs.touch_memory, {"mib": 512})))

    class Driver:
        def send(self, message, payload=b""):
            pass

    with memory_limited(256 << 20) as cgroup:
        start = spawn.start_node

        def start_in_cgroup(*args):
            process = start(*args)
            cgroup.add(process.pid)  # what it touches from now on counts against the limit
            return process

        monkeypatch.setattr(spawn, "start_node", start_in_cgroup)
        done = _Node(attempt, chief, Driver(), str(tmp_path)).run(node, [], port, None)
    assert not done.ok
    assert "was killed by SIGKILL (9): the kernel's out-of-memory killer" in done.error
    assert "spark.executor.memoryOverhead" in done.error


def test_a_node_that_aborts_is_reported_with_the_end_of_its_standard_error(tmp_path):
    # TensorFlow's C++ says why it aborts ("Check failed: ...") on standard error only: the
    # driver's log may not show it (INFO), the failure must.
    attempt, chief, node, port = _sleeping_node(tmp_path)

    def abort(args, ctx):
        sys.stderr.write("F0000 tensorflow/core/op.cc:1] Check failed: planned abort\n")
        sys.stderr.flush()
        os.abort()

    (tmp_path / node_process.MAIN_FILE).write_bytes(cloudpickle.dumps((abort, {})))

    class Driver:
        def send(self, message, payload=b""):
            pass

    done = _Node(attempt, chief, Driver(), str(tmp_path)).run(node, [], port, None)
    assert not done.ok
    assert "was killed by SIGABRT (6); its standard error ended with:\n" in done.error
    assert done.error.endswith("F0000 tensorflow/core/op.cc:1] Check failed: planned abort")


def test_a_task_that_cannot_reach_the_driver_makes_the_others_say_so_to_the_driver(
        tmp_path, monkeypatch):
    # worker:1's executor cannot reach the driver; worker:0's can, and registered. Without a
    # word from worker:1's task, worker:0's would wait for it in allGather until the driver gave
    # up (reservation_timeout), blaming busy task slots.
    import pyspark

    from tfrecord_io.cluster import task as task_module

    attempt, _, _, port = _sleeping_node(tmp_path)
    port.close()
    gang = roles("sync", 2, 0, False)
    barrier = threading.Barrier(2, timeout=10)
    gathered = [None, None]
    sent = []

    class Context:
        def __init__(self, index):
            self._index = index

        def partitionId(self):  # noqa: N802 - pyspark's name
            return self._index

        def getTaskInfos(self):  # noqa: N802 - pyspark's name
            info = type("Info", (), {"address": "127.0.0.1:7077"})
            return [info, info]

        def resources(self):
            return {}

        def taskAttemptId(self):  # noqa: N802 - pyspark's name
            return self._index

        def allGather(self, message):  # noqa: N802 - pyspark's name
            gathered[self._index] = message
            barrier.wait()
            return list(gathered)

    contexts = threading.local()

    class Connection:
        def __init__(self, address, key, hello, timeout):
            if hello.node == "worker:1":
                raise ConnectionRefusedError(111, "Connection refused")
            self._closed = threading.Event()

        def send(self, message, payload=b""):
            sent.append(message)

        def receive(self):
            self._closed.wait(30)
            raise ChannelError("closed")

        def close(self):
            self._closed.set()

    def start_node(*args):
        raise AssertionError("no node starts")

    monkeypatch.setattr(pyspark.BarrierTaskContext, "get", staticmethod(lambda: contexts.ctx))
    monkeypatch.setattr(task_module, "NodeConnection", Connection)
    monkeypatch.setattr(spawn, "start_node", start_node)
    task = task_module.make_task(attempt, gang, b"")
    lines = [None, None]

    def run(index):
        contexts.ctx = Context(index)
        lines[index] = list(task(iter(())))

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    (done,) = [m for m in sent if type(m).__name__ == "Done"]
    assert not done.ok
    assert done.error.startswith(
        "worker:1 could not connect back to the driver's control channel at 127.0.0.1:1 from "
        "its executor (ConnectionRefusedError: [Errno 111] Connection refused), so the cluster "
        "cannot start")
