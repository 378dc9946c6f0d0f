"""``tfrecord-io mnist --spark`` when Spark itself fails: one ``error:`` line naming the Java
(or pyspark) exception, exit status 2 (usage or environment, not damaged data), and Python's
traceback only with ``-v``. Each test runs the command as a process of its own, which starts
(or fails to start) its own Spark application."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.spark


def idx_bytes(array: np.ndarray) -> bytes:
    return struct.pack(f">I{array.ndim}I", 0x0800 | array.ndim, *array.shape) + array.tobytes()


@pytest.fixture
def idx_dir(tmp_path) -> Path:
    """MNIST's test set files, of 5 random images."""
    rng = np.random.default_rng(7)
    d = tmp_path / "idx"
    d.mkdir()
    (d / "t10k-images-idx3-ubyte").write_bytes(
        idx_bytes(rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)))
    (d / "t10k-labels-idx1-ubyte").write_bytes(
        idx_bytes(rng.integers(0, 10, 5, dtype=np.uint8)))
    return d


def mnist_on_spark(idx_dir: Path, out: Path, master: str, *options: str,
                   submit_args: str = "pyspark-shell") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYSPARK_SUBMIT_ARGS=submit_args,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "tfrecord_io.cli", "mnist", str(idx_dir), str(out),
         "--spark", master, *options],
        capture_output=True, text=True, env=env, timeout=300,
    )


def unwritable_event_log(tmp_path: Path) -> str:
    """Spark settings whose SparkContext fails to start in the JVM: its event log directory
    does not exist."""
    return (f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir="
            f"file://{tmp_path / 'no-such-directory'} pyspark-shell")


def test_a_java_exception_is_one_error_line_and_exit_status_2(idx_dir, tmp_path):
    result = mnist_on_spark(idx_dir, tmp_path / "out", "local[1]",
                            submit_args=unwritable_event_log(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "tfrecord-io: error: java.io.FileNotFoundException: File "
        f"file:{tmp_path / 'no-such-directory'} does not exist"
    )
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_a_java_exception_shows_the_python_traceback_with_verbose(idx_dir, tmp_path):
    result = mnist_on_spark(idx_dir, tmp_path / "out", "local[1]", "-v",
                            submit_args=unwritable_event_log(tmp_path))
    assert result.returncode == 2
    assert "tfrecord-io: error: java.io.FileNotFoundException: File " in result.stderr
    assert "Traceback (most recent call last)" in result.stderr
    assert "py4j.protocol.Py4JJavaError" in result.stderr


def test_a_spark_that_does_not_start_is_one_error_line_and_exit_status_2(idx_dir, tmp_path):
    result = mnist_on_spark(idx_dir, tmp_path / "out", "no-such-master://here")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "tfrecord-io: error: PySparkRuntimeError: [JAVA_GATEWAY_EXITED] Java gateway process "
        "exited before sending its port number."
    )
    assert "Master must either be yarn or start with spark, k8s, or local" in result.stderr
    assert "Traceback" not in result.stderr
