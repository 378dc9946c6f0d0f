"""A fed cluster with attempts to spare: after a failure, every ``c.train`` call is fed again,
from its first epoch, to the new attempt's nodes, exactly once per worker and epoch."""

from __future__ import annotations

import json

import pytest

from tfrecord_io import cluster

import feed_programs
from processes import node_processes

RECORDS = feed_programs.FED_RECORDS


def read_by_worker(tmp_path, attempt):
    return [json.loads((tmp_path / f"worker-{w}-read-{attempt}.json").read_text())["epochs"]
            for w in range(2)]


def assert_each_epoch_fed_once_in_equal_shares(epochs_by_worker, num_epochs):
    for epoch in range(num_epochs):
        shares = [worker[epoch] for worker in epochs_by_worker]
        assert [len(s) for s in shares] == [RECORDS // 2] * 2
        assert sorted(shares[0] + shares[1]) == list(range(RECORDS))


def test_a_call_in_progress_when_its_attempt_fails_goes_on_in_the_next(sc, fed_records, tmp_path):
    args = {"out": str(tmp_path), "node": "worker:1", "after": 500, "epochs": 2}
    with cluster.run(sc, feed_programs.fail_once_while_fed, args, num_workers=2,
                     input_mode="spark", max_attempts=2, progress=False) as c:
        report = c.train(fed_records, num_epochs=2)
        result = c.wait()
    assert result.attempts == 2
    assert result.values == {"worker:0": 2, "worker:1": 2}
    assert [sum(e.records.values()) for e in report.epochs] == [RECORDS, RECORDS]
    assert_each_epoch_fed_once_in_equal_shares(read_by_worker(tmp_path, 1), 2)
    assert node_processes(c.name) == []


def test_a_call_already_fed_is_fed_again_to_the_next_attempt(sc, fed_records, tmp_path):
    args = {"out": str(tmp_path), "node": "worker:0", "after": None, "epochs": 2}
    with cluster.run(sc, feed_programs.fail_once_while_fed, args, num_workers=2,
                     input_mode="spark", max_attempts=2, progress=False) as c:
        first = c.train(fed_records, num_epochs=2)  # fed to attempt 0, which fails after reading it
        result = c.wait()
    assert [sum(e.records.values()) for e in first.epochs] == [RECORDS, RECORDS]
    assert result.attempts == 2
    assert_each_epoch_fed_once_in_equal_shares(read_by_worker(tmp_path, 1), 2)
    assert node_processes(c.name) == []


def test_without_attempts_left_the_call_raises_the_failure(sc, fed_records, tmp_path):
    args = {"out": str(tmp_path), "node": "worker:1", "after": 500, "epochs": 2}
    c = cluster.run(sc, feed_programs.fail_once_while_fed, args, num_workers=2,
                    input_mode="spark", max_attempts=1, progress=False)
    with c, pytest.raises(cluster.ClusterError, match="planned failure on worker:1"):
        c.train(fed_records, num_epochs=2)
    assert node_processes(c.name) == []
