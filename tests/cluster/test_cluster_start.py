"""Starting a cluster: too few task slots fail at once or within reservation_timeout, with the
numbers; Keras model.fit runs with keras="legacy"."""

from __future__ import annotations

import json
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster import slots
from tfrecord_io.cluster.application import application_of

import cluster_programs
from processes import node_processes


def test_more_nodes_than_the_application_has_slots_fails_at_once(sc):
    have = slots.capacity(application_of(sc))
    with pytest.raises(cluster.ClusterError) as info:
        cluster.run(sc, cluster_programs.record, {"out": "/nonexistent"}, num_workers=have + 1)
    assert f"needs {have + 1} task slots" in str(info.value)
    assert f"has {have}" in str(info.value)


def test_slots_held_by_another_job_fail_within_reservation_timeout(sc, tmp_path):
    have = slots.capacity(application_of(sc))
    flag = tmp_path / "go"
    busy = cluster.run(sc, cluster_programs.wait_for_file,
                       {"out": str(tmp_path), "flag": str(flag)}, num_workers=have - 1)
    with busy:
        started = time.monotonic()
        with pytest.raises(cluster.ClusterError, match=r"only 0 of 2 nodes registered within 5 s"):
            cluster.run(sc, cluster_programs.record, {"out": str(tmp_path)}, num_workers=2,
                        reservation_timeout=5)
        waited = time.monotonic() - started
        flag.write_text("go")
        busy.wait(timeout=300)  # the first cluster was not disturbed
    assert waited < 120  # a guard against Spark's own 10-minute wait, not a speed claim
    assert node_processes(busy.name) == []


def test_keras_model_fit_runs_distributed_with_legacy_keras(sc, tmp_path):
    with cluster.run(sc, cluster_programs.keras_fit, {"out": str(tmp_path)}, num_workers=2,
                     keras="legacy") as c:
        c.wait(timeout=300)
    for index in (0, 1):
        result = json.loads((tmp_path / f"worker-{index}.json").read_text())
        assert result["model_module"].startswith("tf_keras")
        assert len(result["loss"]) == 3
        assert result["loss"][-1] < result["loss"][0]
