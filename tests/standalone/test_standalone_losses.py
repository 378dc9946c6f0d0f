"""A host of the standalone cluster goes down (its Worker and every process on it killed) while
the nodes run: the ClusterError names the node, and the executor and host Spark lost. The host's
Worker is started again afterwards."""

from __future__ import annotations

import json
import re
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.errors import ClusterError

import manager_programs
from waiting import written


def test_a_lost_host_names_the_executor_spark_lost_on_it(standalone, standalone_spark, tmp_path):
    c = cluster.run(standalone_spark.sparkContext, manager_programs.hold_memory_on,
                    {"out": str(tmp_path), "node": "none"}, num_workers=2)
    hosts = [h.address for h in standalone.network.hosts]
    index = None
    try:
        started = tmp_path / "worker-1.json"
        host = json.loads(written(started, timeout=120))["host"]
        index = hosts.index(host)
        standalone.lose_host(index)
        lost = time.monotonic()
        with pytest.raises(ClusterError) as failure:
            c.wait(timeout=120)
        surfaced = time.monotonic() - lost
    finally:
        c.shutdown(wait=False)
        if index is not None:
            standalone.restart_worker(index)
    text = str(failure.value)
    assert failure.value.node == "worker:1"
    assert re.search(rf"Spark lost executor \d+ on {re.escape(host)}: \S", text), text
    assert surfaced < 15.0, f"the failure took {surfaced:.1f} s to surface"
