"""Elastic runs (min_workers) on local-cluster, where the tests take executors away and give
them back through Spark's own calls: a gang that lost a node goes on smaller and, when the
application has task slots again, grows back at the next epoch boundary (every node leaves
main_fun there, and the gang restarts larger from the checkpoint saved at that epoch's end,
running no epoch twice); a fed epoch interrupted by the loss is fed again, whole, to the
smaller gang; fewer slots than min_workers end the run after the reservation timeout, naming
what was lost. (On the real cluster managers: tests/standalone/test_standalone_elastic.py.)"""

from __future__ import annotations

import json
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster.application import application_of

import cluster_programs
import feed_programs
from processes import free_slots_again, node_processes
from waiting import written


def _executors(sc, total: int) -> None:
    """Set Spark's target number of executors: it starts them, and replaces none beyond it."""
    immutable = sc._jvm.scala.collection.immutable
    no_hosts = getattr(getattr(immutable, "Map$"), "MODULE$").empty()
    assert sc._jsc.sc().requestTotalExecutors(total, 0, no_hosts)


@pytest.fixture
def executors(sc):
    """Take executors away with ``take()`` (Spark starts none in their place); afterwards the
    target is set back and every slot is there again."""
    application = application_of(sc)
    slots = application.free_slots()
    count = sc._jsc.sc().getExecutorIds().size()

    def take() -> None:
        spark = sc._jsc.sc()
        assert spark.killExecutor(spark.getExecutorIds().head())

    try:
        yield take
    finally:
        _executors(sc, count)
        free_slots_again(application, slots)


def _began(out, attempt: int) -> list[int]:
    return json.loads((out / f"attempt-{attempt}-worker-0.json").read_text())["began"]


def test_a_gang_shrunk_by_a_lost_executor_grows_back_at_an_epoch_boundary(
        sc, executors, tmp_path):
    args = {"out": str(tmp_path), "epochs": 24, "epoch_seconds": 1.0, "grow_to": 3}
    with cluster.run(sc, cluster_programs.elastic_fit, args, num_workers=3, min_workers=2,
                     keras="legacy", progress=False) as c:
        for i in range(3):  # every worker began training
            written(tmp_path / f"attempt-0-worker-{i}.json", timeout=180)
        executors()
        for i in range(2):
            written(tmp_path / f"attempt-1-worker-{i}.json", timeout=180)
        _executors(sc, 2)  # the slots come back
        result = c.wait(timeout=300)

    assert [(r.attempt, r.before, r.after) for r in result.resizes] == [(1, 3, 2), (2, 2, 3)]
    assert "can place 3 workers again" in result.resizes[1].cause
    assert result.attempts == 3
    assert result.chief["workers"] == 3
    attempts = [json.loads((tmp_path / f"attempt-{a}-worker-{i}.json").read_text())["workers"]
                for a, i in ((0, 2), (1, 1), (2, 2))]
    assert attempts == [3, 2, 3]
    # the loss redoes the interrupted epoch; the growth none: it left at an epoch's start
    assert _began(tmp_path, 1)[0] in (_began(tmp_path, 0)[-1], _began(tmp_path, 0)[-1] + 1)
    assert _began(tmp_path, 2)[0] == _began(tmp_path, 1)[-1] + 1
    assert _began(tmp_path, 2)[-1] == 23
    assert node_processes(c.name) == []


RECORDS = feed_programs.FED_RECORDS


def test_a_fed_call_goes_on_through_a_loss_mid_epoch_and_a_growth_feeding_each_gang_whole(
        sc, executors, fed_records, tmp_path):
    args = {"out": str(tmp_path), "epochs": 3, "grow_to": 3}
    # 4 slots: 3 workers and the feeding task; one executor left: 1 worker and the feeding
    with cluster.run(sc, feed_programs.read_slowly_with_boundaries, args, num_workers=3,
                     min_workers=1, input_mode="spark", progress=False) as c:
        feeding = c.train(fed_records, num_epochs=3, block=False)
        written(tmp_path / "worker-0-reading-0.json", timeout=180)
        executors()  # in the middle of the first epoch
        written(tmp_path / "worker-0-reading-1.json", timeout=180)
        _executors(sc, 2)  # back: the gang grows after the first epoch of attempt 1
        report = feeding.result(timeout=300)
        result = c.wait(timeout=300)
    assert [(r.attempt, r.before, r.after) for r in result.resizes] == [(1, 3, 1), (2, 1, 3)]
    assert result.values == {f"worker:{i}": [2, 3] for i in range(3)}
    assert not (tmp_path / "worker-0-read-1.json").exists()  # attempt 1 left after an epoch
    read = [json.loads((tmp_path / f"worker-{i}-read-2.json").read_text())["epochs"]
            for i in range(3)]
    # the call returned once its epochs were delivered (to attempt 1's buffers, ahead of its
    # reader); the grown gang was fed all again and read every record once in each epoch, but
    # the equal-share remainder
    assert [sum(e.records.values()) + e.dropped for e in report.epochs] == [RECORDS] * 3
    for epoch in range(3):
        ids = [i for worker in read for i in worker[epoch]]
        assert len(ids) == len(set(ids)) == RECORDS - RECORDS % 3
        assert set(ids) <= set(range(RECORDS))
    assert node_processes(c.name) == []


def test_fewer_slots_than_min_workers_after_a_loss_end_the_run_naming_it(
        sc, executors, tmp_path):
    c = cluster.run(sc, cluster_programs.idle_until_restarted, {"out": str(tmp_path)},
                    num_workers=4, min_workers=3, reservation_timeout=10, progress=False)
    with c:
        written(tmp_path / "worker-3.pid", timeout=180)
        executors()
        lost = time.monotonic()
        with pytest.raises(cluster.ClusterError) as failure:
            c.wait(timeout=300)
        waited = time.monotonic() - lost
    text = str(failure.value)
    # the reservation timeout, after the loss was noticed and the gang stopped (seconds)
    assert 10.0 <= waited < 60.0
    assert "at least 3 worker(s) (min_workers)" in text
    assert "the gang was restarting after: worker:" in text
    assert "Spark lost executor" in text
    assert node_processes(c.name) == []
