"""max_attempts: a killed worker restarts the whole gang, which resumes from the latest
checkpoint under ctx.checkpoint_dir (on HDFS here)."""

from __future__ import annotations

import json

import pytest

from tfrecord_io import cluster

import cluster_programs
from processes import node_processes


@pytest.fixture(scope="module")
def recovered(sc, hdfs, tmp_path_factory):
    out = tmp_path_factory.mktemp("recovery")
    log_dir = f"{hdfs.url}/cluster/recovery"
    args = {"out": str(out), "steps": 20, "fail_node": "worker:1", "fail_step": 12}
    with cluster.run(sc, cluster_programs.resume, args, num_workers=2, log_dir=log_dir,
                     max_attempts=2) as c:
        c.wait(timeout=600)
    files = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return {"files": files, "log_dir": log_dir, "left": node_processes(c.name)}


def test_the_first_attempt_starts_from_scratch(recovered):
    assert recovered["files"]["attempt-0-worker-0"]["start"] == 0
    assert recovered["files"]["attempt-0-worker-1"]["start"] == 0


def test_the_second_attempt_knows_it_and_resumes_from_the_latest_checkpoint(recovered):
    for index in (0, 1):
        second = recovered["files"][f"attempt-1-worker-{index}"]
        assert second["attempt"] == 1
        assert second["start"] == 10  # saved at 5 and 10; killed at 12


def test_training_completes_on_the_second_attempt(recovered):
    for index in (0, 1):
        assert recovered["files"][f"final-worker-{index}"] == {"attempt": 1, "step": 20}


def test_checkpoints_live_under_log_dir(recovered):
    expected = recovered["log_dir"] + "/checkpoints"
    assert recovered["files"]["attempt-1-worker-0"]["checkpoint_dir"] == expected


def test_nothing_is_left_after_recovery(recovered):
    assert recovered["left"] == []


def test_without_attempts_left_the_failure_is_raised(sc, tmp_path):
    args = {"out": str(tmp_path), "steps": 20, "fail_node": "worker:1", "fail_step": 3}
    with cluster.run(sc, cluster_programs.resume, args, num_workers=2,
                     log_dir=str(tmp_path / "logs")) as c:
        with pytest.raises(cluster.ClusterError, match="^worker:1 failed: .*SIGKILL"):
            c.wait(timeout=300)
    assert not list(tmp_path.glob("attempt-1-*.json"))
