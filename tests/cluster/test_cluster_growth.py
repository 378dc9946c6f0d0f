"""With min_workers, a gang that lost a node goes on smaller, and when the application has
task slots again it grows back at the next epoch boundary: every node leaves main_fun there,
and the gang restarts larger from the checkpoint saved at that epoch's end, running no epoch
twice."""

from __future__ import annotations

import json
import time

from tfrecord_io import cluster
from tfrecord_io.cluster.application import application_of

import cluster_programs
from processes import node_processes


def _wait_for(path, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} did not appear"
        time.sleep(0.2)


def _began(out, attempt: int) -> list[int]:
    return json.loads((out / f"attempt-{attempt}-worker-0.json").read_text())["began"]


def test_a_gang_shrunk_by_a_lost_executor_grows_back_at_an_epoch_boundary(sc, tmp_path):
    application = application_of(sc)
    slots = application.free_slots()
    spark = sc._jsc.sc()
    args = {"out": str(tmp_path), "epochs": 24, "epoch_seconds": 1.0}
    with cluster.run(sc, cluster_programs.elastic_fit, args, num_workers=3, min_workers=2,
                     keras="legacy", progress=False) as c:
        _wait_for(tmp_path / "attempt-0-worker-0.json")
        # Spark's own way to give an executor back: it starts no other in its place
        executor = spark.getExecutorIds().head()
        assert spark.killExecutor(executor)
        _wait_for(tmp_path / "attempt-1-worker-0.json")
        # the slots come back: Spark's target of executors, 0 to begin with when not
        # allocated dynamically, is 0 after the kill, so 2 is one more than the one running
        assert spark.requestExecutors(2)
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
    deadline = time.monotonic() + 120
    while application.free_slots() != slots and time.monotonic() < deadline:
        time.sleep(1)
    assert application.free_slots() == slots
