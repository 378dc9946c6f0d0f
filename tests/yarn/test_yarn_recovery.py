"""max_attempts=2 on YARN: a node's container is killed mid-training; the whole gang restarts
on the executors YARN gives back, resumes from the checkpoint on HDFS, and ends with the model
an uninterrupted run makes."""

from __future__ import annotations

import json

import pytest

from tfrecord_io import cluster

import manager_programs

STEPS, LR, KILL_STEP = 20, 0.001, 12


@pytest.fixture(scope="module")
def recovered(yarn, yarn_spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("yarn-recovery")
    args = {"out": str(out), "steps": STEPS, "lr": LR, "kill_node": "worker:1",
            "kill_step": KILL_STEP}
    with cluster.run(yarn_spark.sparkContext, manager_programs.sgd_resume, args,
                     num_workers=2, log_dir=f"{yarn.hdfs_url}/cluster/recovery",
                     max_attempts=2) as c:
        result = c.wait(timeout=600)
    files = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return {"files": files, "attempts": result.attempts}


def test_the_gang_restarts_after_the_killed_container(recovered):
    assert recovered["attempts"] == 2
    killed = recovered["files"]["attempt-0-worker-1"]["container"]
    assert killed and killed.startswith("container_")
    again = {recovered["files"][f"attempt-1-worker-{i}"]["container"] for i in (0, 1)}
    assert killed not in again  # the second attempt runs in a container YARN gave back


def test_the_second_attempt_resumes_from_the_checkpoint_on_hdfs(recovered):
    for i in (0, 1):
        assert recovered["files"][f"attempt-1-worker-{i}"]["start"] == 10  # saved at 5, 10


def test_the_final_model_is_the_uninterrupted_one(recovered):
    for i in (0, 1):
        final = recovered["files"][f"final-worker-{i}"]
        assert final["step"] == STEPS and final["attempt"] == 1
        uninterrupted = manager_programs.sgd_uninterrupted_w(STEPS, LR)
        assert final["w"] == pytest.approx(uninterrupted, abs=1e-4)
