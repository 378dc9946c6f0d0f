"""Elastic training on the standalone cluster across network namespaces (3 hosts, one slot
each, min_workers=2): a host lost mid-training leaves the gang going on at 2 from the
checkpoint; when its Worker returns, the gang grows back to 3 at the next resize_point, from
the checkpoint saved there, and ends with the model an uninterrupted run makes. A host whose
link is cut (its processes alive, unreachable) leaves the gang going on at 2 after the
heartbeat timeout: the driver hands its executor back to Spark, which would otherwise count
the host's slot until its own network timeout and place the restarted gang on it."""

from __future__ import annotations

import json
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster.application import application_of

import manager_programs
from processes import free_slots_again, node_processes_after
from waiting import written

STEPS, LR = 60, 0.001
LOST = 2  # the host whose Worker stops, and comes back


@pytest.fixture(scope="module")
def elastic(standalone, standalone_spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("elastic")
    sc = standalone_spark.sparkContext
    args = {"out": str(out), "steps": STEPS, "lr": LR, "step_seconds": 0.5}
    returned = []
    try:
        with cluster.run(sc, manager_programs.sgd_resume, args, num_workers=3, min_workers=2,
                         log_dir=str(out / "logs"), progress=False) as c:
            written(out / "attempt-0-worker-0.json", timeout=180)
            lost = time.monotonic()
            standalone.lose_host(LOST)
            written(out / "attempt-1-worker-0.json", timeout=180)
            shrunk = time.monotonic() - lost
            standalone.restart_worker(LOST)
            returned.append(time.monotonic())
            result = c.wait(timeout=600)
    finally:
        if not returned:
            standalone.restart_worker(LOST)
        free_slots_again(application_of(sc), 3)
    files = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return {"files": files, "result": result, "shrunk": shrunk, "name": c.name}


def test_a_lost_host_leaves_the_gang_going_on_at_2_from_the_checkpoint(elastic):
    files = elastic["files"]
    assert files["attempt-0-worker-0"]["workers"] == 3
    assert files["attempt-1-worker-0"]["workers"] == 2
    assert "attempt-1-worker-2" not in files
    assert files["attempt-1-worker-0"]["start"] % 5 == 0  # a checkpoint of attempt 0
    first = elastic["result"].resizes[0]
    assert (first.attempt, first.before, first.after) == (1, 3, 2)
    assert elastic["shrunk"] < 60  # the lost host to the smaller gang's start


def test_the_returning_host_grows_the_gang_to_3_at_the_next_boundary(elastic):
    files, result = elastic["files"], elastic["result"]
    assert [(r.attempt, r.before, r.after) for r in result.resizes] == [(1, 3, 2), (2, 2, 3)]
    assert "can place 3 workers again" in result.resizes[1].cause
    assert {files[f"attempt-2-worker-{i}"]["workers"] for i in range(3)} == {3}
    # saved at the boundary where the nodes left, every one at the same step: none done twice
    left = {files[f"left-1-worker-{i}"]["step"] for i in range(2)}
    assert left == {files["attempt-2-worker-0"]["start"]}
    assert result.attempts == 3


def test_the_final_model_is_the_uninterrupted_one(elastic):
    for i in range(3):
        final = elastic["files"][f"final-worker-{i}"]
        assert final["step"] == STEPS and final["attempt"] == 2
        uninterrupted = manager_programs.sgd_uninterrupted_w(STEPS, LR)
        assert final["w"] == pytest.approx(uninterrupted, abs=1e-4)


def test_nothing_of_the_cluster_is_left_behind(elastic):
    from processes import node_processes

    assert node_processes(elastic["name"]) == []


HEARTBEAT_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def cut_off(standalone_spark, network, tmp_path_factory):
    out = tmp_path_factory.mktemp("elastic-cut")
    sc = standalone_spark.sparkContext
    args = {"out": str(out), "steps": STEPS, "lr": LR, "step_seconds": 0.5}
    host = None
    try:
        with cluster.run(sc, manager_programs.sgd_resume, args, num_workers=3, min_workers=2,
                         heartbeat_timeout=HEARTBEAT_TIMEOUT, log_dir=str(out / "logs"),
                         progress=False) as c:
            address = json.loads(written(out / "attempt-0-worker-2.json", timeout=180))["host"]
            (host,) = [h for h in network.hosts if h.address == address]
            host.set_link(up=False)
            cut = time.monotonic()
            written(out / "attempt-1-worker-0.json", timeout=180)
            shrunk = time.monotonic() - cut
            host.set_link(up=True)
            result = c.wait(timeout=600)
    finally:
        if host is not None:
            host.set_link(up=True)
    left = node_processes_after(c.name, 60.0)
    # the host's executor, replaced, for the tests after
    free_slots_again(application_of(sc), 3, timeout=180)
    files = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return {"files": files, "result": result, "shrunk": shrunk, "left": left,
            "address": address}


def test_a_cut_link_leaves_the_gang_going_on_at_2_after_the_heartbeat_timeout(cut_off):
    files, result = cut_off["files"], cut_off["result"]
    assert {files[f"attempt-1-worker-{i}"]["workers"] for i in range(2)} == {2}
    assert cut_off["address"] not in {files[f"attempt-1-worker-{i}"]["host"] for i in range(2)}
    first = result.resizes[0]
    assert (first.attempt, first.before, first.after) == (1, 3, 2)
    assert "no heartbeat" in first.cause and cut_off["address"] in first.cause, first.cause
    assert cut_off["shrunk"] < HEARTBEAT_TIMEOUT + 60


def test_a_cut_off_host_back_on_the_network_ends_with_the_uninterrupted_model(cut_off):
    uninterrupted = manager_programs.sgd_uninterrupted_w(STEPS, LR)
    finals = [f for name, f in cut_off["files"].items() if name.startswith("final-")]
    assert finals and all(f["step"] == STEPS for f in finals)
    for final in finals:
        assert final["w"] == pytest.approx(uninterrupted, abs=1e-4)
    assert cut_off["left"] == []
