"""Elastic training on YARN (num_workers=3, min_workers=2): the NodeManager of a worker's
container stops and stays down, as a host leaving a shared cluster does; the gang goes on at 2
from the checkpoint on HDFS, with YARN's word for the lost container. When a NodeManager joins
again and YARN gives the application its container back, the gang grows to 3 at the next
resize_point and ends with the model an uninterrupted run makes.

The application's containers fill the test YARN (3 GiB each, 8 GiB NodeManagers, the
application master on one of them), so the NodeManager that stays up has no room for the lost
containers: the gang cannot get back to 3 until a NodeManager joins."""

from __future__ import annotations

import json
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster import slots
from tfrecord_io.cluster.application import application_of

import manager_programs
from waiting import written

STEPS, LR = 60, 0.001
# a container YARN gives again localizes the shipped environment before its node starts
START_TIMEOUT = 300.0


def _without_the_master(yarn, containers: set[str]) -> dict:
    """The running NodeManager that holds some of *containers* and not the application
    master's container (a Spark application's first, ``..._000001``)."""
    for nm in yarn.nodemanager_info():
        held = set(nm["containers"])
        if nm["running"] and held & containers and not any(
                c.endswith("_000001") for c in held):
            return nm
    raise AssertionError(f"no NodeManager holds {containers} without the application master: "
                         f"{yarn.nodemanager_info()}")


@pytest.fixture(scope="module")
def elastic(yarn, yarn_spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("yarn-elastic")
    app = application_of(yarn_spark)
    args = {"out": str(out), "steps": STEPS, "lr": LR, "step_seconds": 0.5}
    added = []
    try:
        # reservation_timeout: a container YARN gives again localizes the shipped environment
        # before its executor registers
        with cluster.run(yarn_spark.sparkContext, manager_programs.sgd_resume, args,
                         num_workers=3, min_workers=2, reservation_timeout=300,
                         log_dir=f"{yarn.hdfs_url}/cluster/elastic", progress=False) as c:
            first = [json.loads(written(out / f"attempt-0-worker-{i}.json", timeout=START_TIMEOUT))
                     for i in range(3)]
            ours = {f["container"] for f in first}
            stopped = _without_the_master(yarn, ours)
            lost = time.monotonic()
            yarn.stop_nodemanager(stopped["index"])
            smaller = json.loads(written(out / "attempt-1-worker-0.json", timeout=START_TIMEOUT))
            shrunk = time.monotonic() - lost
            added.append(yarn.add_nodemanager())
            result = c.wait(timeout=600)
    finally:
        if not added:
            yarn.add_nodemanager()
        slots.wait_for(app, 3, timeout=600)  # the other YARN tests' three executors
    files = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return {"files": files, "result": result, "shrunk": shrunk, "name": c.name,
            "stopped": stopped, "ours": ours, "smaller": smaller}


def test_a_nodemanager_that_stays_down_leaves_the_gang_going_on_at_2(elastic):
    files, result = elastic["files"], elastic["result"]
    assert files["attempt-0-worker-0"]["workers"] == 3
    assert {files[f"attempt-1-worker-{i}"]["workers"] for i in range(2)} == {2}
    assert "attempt-1-worker-2" not in files
    # no container of the stopped NodeManager's runs the smaller gang
    gone = set(elastic["stopped"]["containers"]) & elastic["ours"]
    assert not gone & {files[f"attempt-1-worker-{i}"]["container"] for i in range(2)}
    assert files["attempt-1-worker-0"]["start"] % 5 == 0  # a checkpoint of attempt 0
    first = result.resizes[0]
    assert (first.attempt, first.before, first.after) == (1, 3, 2)
    assert elastic["shrunk"] < 120


def test_the_resize_names_the_lost_container_in_yarns_words(elastic):
    cause = elastic["result"].resizes[0].cause
    gone = set(elastic["stopped"]["containers"]) & elastic["ours"]
    assert any(container in cause for container in gone), cause
    assert "Container released on a *lost* node" in cause, cause  # YARN's words


def test_a_nodemanager_joining_grows_the_gang_back_to_3(elastic):
    files, result = elastic["files"], elastic["result"]
    assert [(r.attempt, r.before, r.after) for r in result.resizes] == [(1, 3, 2), (2, 2, 3)]
    assert "can place 3 workers again" in result.resizes[1].cause
    assert {files[f"attempt-2-worker-{i}"]["workers"] for i in range(3)} == {3}
    left = {files[f"left-1-worker-{i}"]["step"] for i in range(2)}
    assert left == {files["attempt-2-worker-0"]["start"]}  # saved where they left: none twice
    assert result.attempts == 3


def test_the_final_model_is_the_uninterrupted_one(elastic):
    uninterrupted = manager_programs.sgd_uninterrupted_w(STEPS, LR)
    for i in range(3):
        final = elastic["files"][f"final-worker-{i}"]
        assert final["step"] == STEPS and final["attempt"] == 2
        assert final["w"] == pytest.approx(uninterrupted, abs=1e-4)


def test_nothing_of_the_cluster_is_left_behind(elastic):
    from processes import node_processes

    assert node_processes(elastic["name"]) == []
