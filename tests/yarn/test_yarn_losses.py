"""A node whose YARN container dies: the ClusterError says why, in YARN's words as Spark's
scheduler recorded them (the container killed for memory, with the settings to raise; a killed
container's id and exit status), within seconds."""

from __future__ import annotations

import json
import signal
import time

import psutil
import pytest

from tfrecord_io import cluster
from tfrecord_io.errors import ClusterError

import manager_programs
from waiting import written

# The test YARN's executor containers are 512 MiB of heap + 2560 MiB of overhead.
CONTAINER_MIB = 3072


def executor_of(container: str) -> psutil.Process:
    """The executor JVM of a YARN container (its log directory, in its command line, names
    the container)."""
    for p in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(p.info["cmdline"] or [])
        if "CoarseGrainedExecutorBackend" in cmdline and container in cmdline:
            return p
    raise AssertionError(f"no executor JVM of {container}")


def fail_within(c: cluster.Cluster, seconds: float) -> ClusterError:
    with pytest.raises(ClusterError) as failure:
        c.wait(timeout=seconds)
    return failure.value


def test_a_container_killed_for_memory_quotes_yarn_and_names_the_settings(yarn_spark, tmp_path):
    c = cluster.run(yarn_spark.sparkContext, manager_programs.hold_memory_on,
                    {"out": str(tmp_path), "node": "worker:1", "mib": CONTAINER_MIB + 512},
                    num_workers=2)
    with c:
        container = json.loads(written(tmp_path / "worker-1.json", timeout=120))["container"]
        error = fail_within(c, 180)
    text = str(error)
    assert error.node == "worker:1"
    assert "Container killed by YARN for exceeding physical memory limits" in text
    assert "of 3 GB physical memory used" in text
    assert "exit status -104" in text
    assert "spark.executor.memoryOverhead" in text and "spark.executor.pyspark.memory" in text
    assert container in text


def test_a_killed_container_is_named_with_its_id_and_exit_status(yarn_spark, tmp_path):
    c = cluster.run(yarn_spark.sparkContext, manager_programs.hold_memory_on,
                    {"out": str(tmp_path), "node": "none"}, num_workers=2)
    with c:
        container = json.loads(written(tmp_path / "worker-1.json", timeout=120))["container"]
        executor = executor_of(container)
        killed = time.monotonic()
        executor.send_signal(signal.SIGKILL)
        error = fail_within(c, 120)
        surfaced = time.monotonic() - killed
    text = str(error)
    assert error.node == "worker:1"
    assert "Spark lost executor " in text and container in text
    assert "Exit status: 137" in text
    assert surfaced < 15.0, f"the failure took {surfaced:.1f} s to surface"
