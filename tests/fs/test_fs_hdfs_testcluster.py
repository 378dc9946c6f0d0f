"""The test HDFS itself (tfrecord_io.testing.minihdfs: a MiniDFSCluster in a child JVM, on
127.0.0.1): its addresses and configuration directory, its failures, its developer command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tfrecord_io.testing.minihdfs import MiniHdfs, MiniHdfsError


@pytest.fixture(scope="session")
def minihdfs(hdfs):
    """The session's shared mini HDFS (conftest.py's ``hdfs``)."""
    return hdfs


# -- the cluster itself ------------------------------------------------------------------------


def test_cluster_is_on_loopback_with_conf_dir(minihdfs):
    assert minihdfs.url.startswith("hdfs://127.0.0.1:")
    assert minihdfs.webhdfs_url.startswith("webhdfs://127.0.0.1:")
    assert minihdfs.http_url.startswith("http://127.0.0.1:")
    assert len(minihdfs.datanodes) == 2
    for dn in minihdfs.datanodes:
        for key in ("xfer", "http", "ipc"):
            assert dn[key].startswith("127.0.0.1:")
    core = Path(minihdfs.conf_dir, "core-site.xml").read_text()
    assert f"<value>{minihdfs.url}</value>" in core
    assert Path(minihdfs.conf_dir, "hdfs-site.xml").is_file()
    minihdfs.ping()


def test_minihdfs_bad_classpath_fails_fast_with_log_tail(tmp_path):
    cluster = MiniHdfs(
        tmp_path / "bad", classpath=str(tmp_path / "nothing.jar"), startup_timeout=60
    )
    t0 = time.monotonic()
    with pytest.raises(MiniHdfsError) as err:
        cluster.start()
    assert time.monotonic() - t0 < 30
    # Either javac cannot compile MiniHdfs.java against it, or the JVM cannot find the class:
    # both name MiniHdfs in the error.
    assert "MiniHdfs" in str(err.value)
    assert not cluster.running


def test_minihdfs_command_errors_are_reported(minihdfs):
    with pytest.raises(MiniHdfsError, match="not stopped"):
        minihdfs.restart_datanode(1)
    with pytest.raises(MiniHdfsError, match="no DataNode 7"):
        minihdfs.stop_datanode(7)


# -- the developer command ---------------------------------------------------------------------


def test_dev_command_prints_urls_and_stops_on_sigterm(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get(
        "PYTHONPATH", ""
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfrecord_io.testing.minihdfs",
            "--build",  # resolve a classpath with Maven if the setup wrote none
            "--base-dir",
            str(tmp_path / "dev"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("export HADOOP_CONF_DIR="):
                ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert ready.wait(120), "".join(lines)
        text = "".join(lines)
        assert "hdfs://127.0.0.1:" in text and "webhdfs://127.0.0.1:" in text
        conf_dir = text.split("export HADOOP_CONF_DIR=")[1].split()[0]
        assert Path(conf_dir, "core-site.xml").is_file()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
