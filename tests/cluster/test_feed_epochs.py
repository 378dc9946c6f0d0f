"""Cluster.train feeds Spark data to ctx.feed on a real local-cluster: every record of an epoch
reaches one worker, sync-mode workers get equal shares, several feeds are fed in turns, the
feeding tasks run on other executors than the workers they feed, feeds end with c.wait()."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from pyspark import StorageLevel

from tfrecord_io import cluster

import feed_programs
from processes import executor_of, node_processes

# Uneven partitions (one empty) of 1001 records b"r0".."r1000", in partition order.
TRAIN_SIZES = [0, 1, 300, 7, 450, 2, 241]
N_TRAIN = sum(TRAIN_SIZES)
# A DataFrame of 301 rows (id), in 3 uneven partitions.
VAL_SIZES = [200, 1, 100]
N_VAL = sum(VAL_SIZES)
# Rows (id, x[4]) for model.fit: 2 x 60 records, 8 per Keras batch: 8 steps per epoch.
N_FIT = 120


def uneven_rdd(sc, sizes):
    starts = [sum(sizes[:i]) for i in range(len(sizes))]

    def partition(index, _):
        return [b"r%d" % i for i in range(starts[index], starts[index] + sizes[index])]

    return sc.parallelize(range(len(sizes)), len(sizes)).mapPartitionsWithIndex(partition)


def uneven_frame(spark, sizes):
    ids = uneven_rdd(spark.sparkContext, sizes).map(lambda r: (int(r[1:]),))
    return spark.createDataFrame(ids, "id long")


@dataclass
class Fed:
    reports: dict
    read: dict  # node -> what it read
    node_executors: dict  # worker index -> executor pid
    name: str
    storage: dict  # cached DataFrame fed -> (storage level before, after the cluster)
    late_train: str  # the error of a train() call after a wait() that timed out


@pytest.fixture(scope="module")
def fed(spark, sc, tmp_path_factory):
    """One sync cluster of 2 workers fed, in turns (block=False), 2 epochs of an RDD of bytes
    ("train") and of a DataFrame ("validation"), then 2 epochs of parsed rows for model.fit."""
    out = tmp_path_factory.mktemp("feed")
    train = uneven_rdd(sc, TRAIN_SIZES).cache()
    validation = uneven_frame(spark, VAL_SIZES).cache()
    fit = spark.createDataFrame(
        [(i, [float(i)] * 4) for i in range(N_FIT)], "id long, x array<float>"
    ).repartition(3).cache()
    args = {"out": str(out), "epochs": 2, "feeds": ["train", "validation"], "fit": True,
            "features": {"validation": "example"}}
    before = {"validation": validation.storageLevel, "fit": fit.storageLevel}
    c = cluster.run(sc, feed_programs.read_epochs, args, num_workers=2, input_mode="spark")
    with c:
        t = c.train(train, num_epochs=2, block=False)
        v = c.train(validation, num_epochs=2, feed="validation", block=False)
        reports = {"train": t.result(timeout=600), "validation": v.result(timeout=600)}
        started = {i: json.loads((out / f"worker-{i}-started.json").read_text())
                   for i in range(2)}
        executors = {i: executor_of(s["ppid"]) for i, s in started.items()}
        for report in reports.values():
            for epoch in report.epochs:
                for task in epoch.tasks:
                    task["executor"] = executor_of(task["pid"])
        reports["fit"] = c.train(fit, num_epochs=2, feed="fit")
        try:
            c.wait(timeout=0)  # a poll: the feeds end all the same
        except TimeoutError:
            pass
        with pytest.raises(cluster.ClusterError) as late:
            c.train(train, feed="train")
        c.wait(timeout=600)
    read = {i: json.loads((out / f"worker-{i}-read.json").read_text()) for i in range(2)}
    storage = {name: (before[name], frame.storageLevel)
               for name, frame in (("validation", validation), ("fit", fit))}
    return Fed(reports, read, executors, c.name, storage, str(late.value))


def _epoch(fed, feed, epoch):
    return [fed.read[w]["epochs"][feed][epoch] for w in range(2)]


@pytest.mark.parametrize("epoch", [0, 1])
def test_every_record_of_an_epoch_reaches_exactly_one_worker(fed, epoch):
    first, second = _epoch(fed, "train", epoch)
    assert not set(first) & set(second)
    assert len(set(first)) == len(first) and len(set(second)) == len(second)
    # All but the remainder (1001 % 2): the last record, in partition order.
    assert sorted(first + second) == list(range(N_TRAIN - 1))


@pytest.mark.parametrize("feed,total", [("train", N_TRAIN), ("validation", N_VAL)])
def test_sync_workers_get_equal_shares_and_the_remainder_is_dropped(fed, feed, total):
    for epoch, report in enumerate(fed.reports[feed].epochs):
        counts = [len(ids) for ids in _epoch(fed, feed, epoch)]
        assert counts == [total // 2, total // 2]
        assert report.records == {0: total // 2, 1: total // 2}
        assert report.dropped == total % 2
        assert report.epoch == epoch + 1


@pytest.mark.parametrize("epoch", [0, 1])
def test_a_dataframe_feeds_its_rows_as_examples_in_turn_with_another_feed(fed, epoch):
    first, second = _epoch(fed, "validation", epoch)
    assert not set(first) & set(second)
    assert sorted(first + second) == list(range(N_VAL - 1))


def test_model_fit_trains_one_fed_epoch_per_keras_epoch(fed):
    for w in range(2):
        fit = fed.read[w]["fit"]
        assert fit["losses"] == 2
        assert fit["steps"] == [N_FIT // 2 // 8 + 1, N_FIT // 2 // 8 + 1]  # 60 = 7 x 8 + 4
    assert [e.records for e in fed.reports["fit"].epochs] == [{0: 60, 1: 60}] * 2


def test_feeds_end_with_wait_and_further_iterations_are_empty(fed):
    for w in range(2):
        assert fed.read[w]["after_end"] == {"train": 0, "validation": 0, "fit": 0}


def test_train_after_wait_began_fails_instead_of_feeding_no_one(fed):
    assert ("wait() has begun" in fed.late_train
            or "the cluster is not running" in fed.late_train)


def test_a_dataframe_the_caller_cached_stays_cached_after_it_was_fed(fed):
    for before, after in fed.storage.values():
        assert after == before != StorageLevel.NONE


def test_feeding_tasks_run_on_other_executors_than_the_workers_they_feed(fed):
    crossing = [
        (task["executor"], fed.node_executors[int(w)])
        for report in (fed.reports["train"], fed.reports["validation"])
        for epoch in report.epochs
        for task in epoch.tasks
        for w, sent in task["workers"].items()
        if sent["records"] and task["executor"] != fed.node_executors[int(w)]
    ]
    assert crossing, "every batch was fed by a task on its worker's own executor"


def test_feeding_tasks_send_from_the_executor_jvms_without_a_python_worker(fed):
    pids = {task["pid"] for report in fed.reports.values() for epoch in report.epochs
            for task in epoch.tasks}
    assert pids and all(executor_of(pid) == pid for pid in pids)


def test_nothing_is_left_running(fed):
    assert node_processes(fed.name) == []


def test_ps_mode_feeds_every_record_to_the_coordinator_each_epoch(sc, tmp_path):
    """mode="ps": the chief (the coordinator, the one node running main_fun) is fed; nothing
    is dropped, whatever the partitions."""
    args = {"out": str(tmp_path), "epochs": 2, "feeds": ["train"]}
    c = cluster.run(sc, feed_programs.read_epochs, args, mode="ps", num_workers=1, num_ps=1,
                    input_mode="spark")
    with c:
        report = c.train(uneven_rdd(sc, TRAIN_SIZES).cache(), num_epochs=2)
        c.wait(timeout=600)
    read = json.loads((tmp_path / "chief-0-read.json").read_text())
    for epoch, ids in enumerate(read["epochs"]["train"]):
        assert sorted(ids) == list(range(N_TRAIN))
        assert report.epochs[epoch].records == {0: N_TRAIN}
        assert report.epochs[epoch].dropped == 0
    assert read["after_end"] == {"train": 0}
