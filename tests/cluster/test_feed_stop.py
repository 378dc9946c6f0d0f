"""Feeding ends promptly when the workers stop reading, raises ClusterError naming the node when
a worker fails while being fed, and stops with TimeoutError when train()'s timeout passes."""

from __future__ import annotations

import json
import time

import pytest

from tfrecord_io import cluster

import feed_programs
from processes import node_processes

# 120,000 records of ~1 KB in 4 partitions: ~60 MB per worker, far more than its buffer
# (32 batches of ~1 MB), so feeding tasks would wait on a worker that stopped reading.
N_BIG = 120_000


@pytest.fixture(scope="module")
def big(sc):
    rdd = sc.range(0, N_BIG, numSlices=4).map(lambda i: b"r%d " % i + b"x" * 1000)
    yield rdd.cache()
    rdd.unpersist()


def test_workers_returning_early_end_the_feeding_without_a_hang(sc, big, tmp_path):
    args = {"out": str(tmp_path), "take": 50, "how": "return"}
    c = cluster.run(sc, feed_programs.read_then_stop, args, num_workers=2, input_mode="spark")
    with c:
        report = c.train(big, num_epochs=3)
        c.wait(timeout=300)
    # Epoch 1 was cut short (its rest dropped), epochs 2 and 3 were never fed: nobody read.
    assert len(report.epochs) == 1
    for epoch in report.epochs:
        assert sum(epoch.records.values()) + epoch.dropped == N_BIG
        assert epoch.dropped > 0
    for w in range(2):
        assert json.loads((tmp_path / f"worker-{w}-stop.json").read_text())["read"] == 50
    assert node_processes(c.name) == []


def test_stop_feed_ends_the_feeding_while_main_fun_goes_on(sc, big, tmp_path):
    flag = tmp_path / "train-returned"
    args = {"out": str(tmp_path), "take": 50, "how": "stop_feed", "flag": str(flag)}
    c = cluster.run(sc, feed_programs.read_then_stop, args, num_workers=2, input_mode="spark")
    with c:
        report = c.train(big, num_epochs=2)
        # train() returned while main_fun still runs: it waits for this file.
        flag.touch()
        c.wait(timeout=300)
    assert len(report.epochs) == 1 and report.epochs[0].dropped > 0
    for w in range(2):
        info = json.loads((tmp_path / f"worker-{w}-stop.json").read_text())
        assert info == {"read": 50, "after_stop": 0, "flag_seen": True}


def test_worker_failing_while_fed_makes_train_raise_naming_it(sc, big, tmp_path):
    args = {"out": str(tmp_path), "node": "worker:1", "after": 2000, "epochs": 2}
    c = cluster.run(sc, feed_programs.fail_while_fed, args, num_workers=2, input_mode="spark")
    with c:
        with pytest.raises(cluster.ClusterError) as info:
            c.train(big, num_epochs=2)
        raised_at = time.time()  # before the cluster's own shutdown
    failed_at = json.loads((tmp_path / "failed-at.json").read_text())["time"]
    assert info.value.node == "worker:1"
    assert "RuntimeError: planned failure on worker:1 after 2000 fed records" in str(info.value)
    assert "Traceback (most recent call last)" in str(info.value)
    assert raised_at - failed_at < 10.0  # the bound for noticing the failure
    assert node_processes(c.name) == []


def test_worker_killed_while_fed_makes_train_raise_naming_it(sc, big, tmp_path):
    args = {"out": str(tmp_path), "node": "worker:0", "after": 2000, "how": "kill"}
    c = cluster.run(sc, feed_programs.fail_while_fed, args, num_workers=2, input_mode="spark")
    with c:
        with pytest.raises(cluster.ClusterError, match="SIGKILL") as info:
            c.train(big, num_epochs=1)
        raised_at = time.time()  # before the cluster's own shutdown
    failed_at = json.loads((tmp_path / "failed-at.json").read_text())["time"]
    assert info.value.node == "worker:0"
    assert raised_at - failed_at < 10.0
    assert node_processes(c.name) == []


def test_train_stops_the_feeding_and_raises_timeout_error_when_its_timeout_passes(sc, tmp_path):
    data = sc.parallelize([b"r%d" % i for i in range(100)], 2).cache()
    args = {"out": str(tmp_path), "pause": 8.0}
    with cluster.run(sc, feed_programs.read_late, args, num_workers=2, input_mode="spark") as c:
        began = time.monotonic()
        with pytest.raises(TimeoutError, match="'train' was not done after 1.0 s"):
            c.train(data, timeout=1.0)
        assert time.monotonic() - began < 5
        c.wait(timeout=120)
    for w in range(2):  # the stopped epoch ends short: the late readers get nothing
        assert json.loads((tmp_path / f"worker-{w}-read.json").read_text())["ids"] == []


def test_wait_ends_a_feed_that_was_never_trained(sc, tmp_path):
    args = {"out": str(tmp_path), "pause": 0}
    c = cluster.run(sc, feed_programs.read_late, args, num_workers=1, input_mode="spark")
    with c:
        c.wait(timeout=300)  # the reader waits for a first epoch: it sees the feed's end
    assert json.loads((tmp_path / "worker-0-read.json").read_text()) == {"ids": []}
    assert node_processes(c.name) == []
