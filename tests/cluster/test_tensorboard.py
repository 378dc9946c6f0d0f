"""TensorBoard of a cluster (``tfrecord_io.cluster.tensorboard``): a real TensorBoard serving real
summaries from a local and an HDFS log directory, and nothing left once it is stopped."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import urllib.parse
import urllib.request

import psutil
import pytest

from tfrecord_io.cluster import tensorboard
from tfrecord_io.cluster.description import AttemptDescription, NodeDescription
from tfrecord_io.cluster.options import run_options
from tfrecord_io.cluster.roles import cluster_spec, roles, tf_config
from tfrecord_io.cluster.task import _Node
from tfrecord_io.errors import TensorBoardError

from waiting import eventually, wait_until

STEPS = [(0, 2.5), (1, 1.25), (2, 0.5)]


def write_scalars(log_dir: str) -> None:
    """A run ``train`` with the scalar ``loss`` at STEPS, as tf.summary writes it."""
    import tensorflow as tf

    from tfrecord_io import tf as tfr

    tfr.register_filesystems()
    writer = tf.summary.create_file_writer(f"{log_dir}/train")
    with writer.as_default():
        for step, value in STEPS:
            tf.summary.scalar("loss", value, step=step)
    writer.close()


def get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return json.loads(response.read())


def loss_series(board: tensorboard.TensorBoardProcess, deadline: float = 60.0) -> list:
    """The ``loss`` scalars of run ``train`` as TensorBoard serves them, once it has read them."""
    query = urllib.parse.urlencode({"run": "train", "tag": "loss"})
    eventually(lambda: "loss" in get_json(board.url + "data/plugin/scalars/tags").get("train", {}),
               timeout=deadline, every=0.5, what=lambda: "TensorBoard's loss scalars (tags: "
               f"{get_json(board.url + 'data/plugin/scalars/tags')})")
    return get_json(f"{board.url}data/plugin/scalars/scalars?{query}")


def group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return members


def listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((host, port)) == 0


def test_serves_the_scalars_of_a_local_log_dir(tmp_path):
    write_scalars(str(tmp_path))
    with tensorboard.start(str(tmp_path), "127.0.0.1") as board:
        assert urllib.parse.urlparse(board.url).hostname == "127.0.0.1"
        series = loss_series(board)
    assert [(step, value) for _, step, value in series] == STEPS


def test_serves_a_log_dir_on_hdfs(hdfs):
    log_dir = f"{hdfs.url}/tensorboard/logs"
    write_scalars(log_dir)
    with tensorboard.start(log_dir, "127.0.0.1") as board:
        series = loss_series(board)
    assert [(step, value) for _, step, value in series] == STEPS


def test_stop_leaves_no_process_and_no_listening_port(tmp_path):
    board = tensorboard.start(str(tmp_path), "127.0.0.1")
    port = urllib.parse.urlparse(board.url).port
    assert group_members(board.pid), "TensorBoard's process group should exist while it runs"
    assert listening("127.0.0.1", port)

    board.stop()
    board.stop()  # idempotent

    assert not board.running
    assert group_members(board.pid) == []
    assert not listening("127.0.0.1", port)


def test_two_boards_on_one_host_get_different_ports(tmp_path):
    with tensorboard.start(str(tmp_path), "127.0.0.1") as first, \
            tensorboard.start(str(tmp_path), "127.0.0.1") as second:
        assert first.url != second.url
        for board in (first, second):
            with urllib.request.urlopen(board.url, timeout=10) as response:
                assert response.status == 200


def test_exits_by_itself_when_the_process_that_started_it_is_killed(tmp_path):
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time
            from tfrecord_io.cluster import tensorboard
            board = tensorboard.start({str(tmp_path)!r}, "127.0.0.1")
            print(board.pid, board.url, flush=True)
            time.sleep(600)
        """)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pid, url = parent.stdout.readline().split()
        port = urllib.parse.urlparse(url).port
        assert listening("127.0.0.1", port)
        parent.send_signal(signal.SIGKILL)
        parent.wait()

        # generous: a loaded machine is slow to schedule it
        wait_until(lambda: not group_members(int(pid)), timeout=60, every=0.2)
        assert group_members(int(pid)) == []
        assert not listening("127.0.0.1", port)
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()


def test_a_board_that_cannot_bind_raises_with_tensorboards_reason_and_leaves_nothing(tmp_path):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    reason = r"on 192\.0\.2\.1 exited(.|\n)*Cannot assign requested address"
    with pytest.raises(TensorBoardError, match=reason):
        tensorboard.start(str(tmp_path), "192.0.2.1", timeout=60)  # TEST-NET-1: not ours
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    assert after <= before


def test_the_chiefs_board_reads_an_object_store_with_the_settings_the_nodes_get(
        s3_env, s3_bucket, monkeypatch, tmp_path):
    # The driver's object-store settings (and cluster.run's env) reach the node processes in
    # the run's env, not the executor's environment; the chief's TensorBoard needs them too.
    log_dir = f"s3://{s3_bucket}/tensorboard/{tmp_path.name}"
    write_scalars(log_dir)
    settings = s3_env.environment()
    for name in settings:
        monkeypatch.delenv(name)  # the executor was started without them
    options = run_options(mode="sync", num_workers=1, log_dir=log_dir, keras="default",
                          tensorboard=True, reservation_timeout=60.0, max_attempts=1,
                          env=settings, input_mode="tensorflow")
    attempt = AttemptDescription(options, cluster="c-1", driver="127.0.0.1:1",
                                 control_key="c" * 64, feed_key="f" * 64, number=0,
                                 num_workers=1)
    (chief,) = roles("sync", 1, 0, False)
    spec = cluster_spec([chief], ["127.0.0.1:1"])
    node = NodeDescription(attempt=attempt, role=chief, cluster_spec=spec,
                           tf_config=tf_config(spec, chief), host="127.0.0.1",
                           parent_pid=os.getpid())
    sent = []

    class Connection:
        def send(self, message, payload=b""):
            sent.append(message)

    board = _Node(attempt, chief, Connection(), str(tmp_path))._start_tensorboard(node)
    try:
        assert [m.url for m in sent] == [board.url]
        series = loss_series(board)
    finally:
        board.stop()
    assert [(step, value) for _, step, value in series] == STEPS
