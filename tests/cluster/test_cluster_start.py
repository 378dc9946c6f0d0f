"""Starting a cluster: too few task slots fail at once or within reservation_timeout, with the
numbers; with min_workers a run starts with the workers the application can place; Keras
model.fit runs with keras="legacy"."""

from __future__ import annotations

import json
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster import slots
from tfrecord_io.cluster.application import application_of

import cluster_programs
import feed_programs
from processes import node_processes


def test_more_nodes_than_the_application_has_slots_fails_at_once(sc):
    have = slots.capacity(application_of(sc))
    with pytest.raises(cluster.ClusterError) as info:
        cluster.run(sc, cluster_programs.record, {"out": "/nonexistent"}, num_workers=have + 1)
    assert f"needs {have + 1} task slots" in str(info.value)
    assert f"has {have}" in str(info.value)


def test_with_min_workers_a_run_starts_with_the_workers_the_application_can_place(
        sc, tmp_path):
    have = slots.capacity(application_of(sc))
    started = time.monotonic()
    with cluster.run(sc, cluster_programs.record, {"out": str(tmp_path), "allreduce": True},
                     num_workers=have + 2, min_workers=2, reservation_timeout=600) as c:
        result = c.wait(timeout=300)
    assert time.monotonic() - started < 300  # a guard: no wait for slots that cannot come
    assert sorted(result.values) == [f"worker:{i}" for i in range(have)]
    for i in range(have):
        seen = json.loads((tmp_path / f"worker-{i}.json").read_text())
        assert seen["num_workers"] == have
        assert len(seen["cluster_spec"]["worker"]) == have
        assert seen["allreduce"] == sum(range(1, have + 1))


def test_min_workers_beyond_the_applications_slots_fail_at_once_with_the_numbers(sc):
    have = slots.capacity(application_of(sc))
    with pytest.raises(cluster.ClusterError, match=f"needs {have + 1} task slots"):
        cluster.run(sc, cluster_programs.record, {"out": "/nonexistent"},
                    num_workers=have + 2, min_workers=have + 1)


def test_an_elastic_fed_run_keeps_a_slot_for_feeding_and_deals_to_the_workers_it_has(
        sc, tmp_path):
    have = slots.capacity(application_of(sc))
    records = sc.parallelize([b"r%d" % i for i in range(300)], 3)
    args = {"out": str(tmp_path), "epochs": 1, "feeds": ["train"]}
    with cluster.run(sc, feed_programs.read_epochs, args, num_workers=have, min_workers=1,
                     input_mode="spark") as c:
        report = c.train(records)
        c.wait(timeout=300)
    workers = have - 1  # one slot left for the feeding tasks
    assert report.epochs[0].records == {w: 300 // workers for w in range(workers)}
    read = [json.loads((tmp_path / f"worker-{w}-read.json").read_text())["epochs"]["train"][0]
            for w in range(workers)]
    assert sorted(i for ids in read for i in ids) == list(range(300 - 300 % workers))


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
