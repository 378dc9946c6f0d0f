"""The next epoch of a feed is fed as soon as the last one is, before its readers ask, and gives
its task slots up when the readers wait for another feed first: on a real local-cluster."""

from __future__ import annotations

import json
import logging
import time

from tfrecord_io import cluster

import feed_programs
from waiting import eventually

N = 400


def _read(out, workers=2):
    return [json.loads((out / f"worker-{w}-read.json").read_text()) for w in range(workers)]


def test_the_next_epoch_is_fed_before_its_readers_ask_for_it(sc, tmp_path):
    data = sc.parallelize([b"r%d" % i for i in range(N)], 4).cache()
    args = {"out": str(tmp_path), "pause": 5.0}  # the next job starts well within it
    with cluster.run(sc, feed_programs.read_with_pause, args, num_workers=2,
                     input_mode="spark") as c:
        report = c.train(data, num_epochs=2)
        c.wait(timeout=300)
    read = _read(tmp_path)
    second = report.epochs[1]
    assert min(task["started"] for task in second.tasks) < min(r["asked"] for r in read)
    for epoch in (0, 1):
        assert sorted(read[0]["epochs"][epoch] + read[1]["epochs"][epoch]) == list(range(N))


def test_an_epoch_fed_ahead_gives_way_to_the_feed_its_readers_read_first(sc, tmp_path):
    # 100 KB records, 40 MB per worker and epoch: more than a node buffers (32 batches of
    # 1 MiB), so the train epoch fed ahead blocks until its readers come to it. They read the
    # validation epoch first, whose job needs the task slots the train job holds.
    n = 800
    train = sc.parallelize(range(n), 4).map(lambda i: b"r%d" % i + b" " * 100_000).cache()
    validation = sc.parallelize([b"r%d" % i for i in range(10)], 2).cache()
    args = {"out": str(tmp_path), "epochs": 2, "feeds": ["train", "validation"]}
    with cluster.run(sc, feed_programs.read_epochs, args, num_workers=2,
                     input_mode="spark") as c:
        t = c.train(train, num_epochs=2, block=False)
        v = c.train(validation, num_epochs=2, feed="validation", block=False)
        reports = {"train": t.result(timeout=600), "validation": v.result(timeout=600)}
        c.wait(timeout=600)
    read = _read(tmp_path)
    for epoch in (0, 1):
        assert sorted(read[0]["epochs"]["train"][epoch] + read[1]["epochs"]["train"][epoch]) == (
            list(range(n)))
        assert sorted(read[0]["epochs"]["validation"][epoch]
                      + read[1]["epochs"]["validation"][epoch]) == list(range(10))
    assert [e.records for e in reports["train"].epochs] == [{0: n // 2, 1: n // 2}] * 2


def test_a_stopped_calls_epoch_fed_ahead_is_withdrawn_and_the_next_call_read_in_its_place(
        sc, tmp_path, caplog):
    # Epoch 3 of the first call is fed ahead while the readers wait (100 KB records, 40 MB per
    # worker and epoch: more than a node buffers ahead, so its job is still running); the call
    # is stopped, and the readers' third epoch is the next call's first, whole: no record of
    # the stopped call.
    n = 800
    first = sc.parallelize(range(n), 4).map(lambda i: b"r%d" % i + b" " * 100_000).cache()
    second = sc.parallelize([b"r%d" % i for i in range(n, n + 100)], 2).cache()
    caplog.set_level(logging.DEBUG, logger="tfrecord_io.cluster")
    with cluster.run(sc, feed_programs.read_two_then_wait_for_go, {"out": str(tmp_path)},
                     num_workers=2, input_mode="spark") as c:
        feeding = c.train(first, num_epochs=4, block=False)
        eventually(lambda: all((tmp_path / f"worker-{w}-two.json").exists() for w in range(2)),
                   timeout=120, what="both workers read two epochs")
        eventually(lambda: "submitted epoch 3 of 'train' (ahead" in caplog.text, timeout=60,
                   what="epoch 3 fed ahead")
        time.sleep(2)  # its batches reach the nodes' buffers
        feeding.stop()
        stopped = feeding.result(timeout=60)
        (tmp_path / "go").touch()
        report = c.train(second, num_epochs=1)
        c.wait(timeout=300)
    assert "epochs [3] of 'train', fed ahead, were withdrawn from every node" in caplog.text
    assert [e.epoch for e in stopped.epochs] == [1, 2] and stopped.stopped
    assert [e.epoch for e in report.epochs] == [3]
    read = _read(tmp_path)
    for epoch in (0, 1):
        assert sorted(read[0]["epochs"][epoch] + read[1]["epochs"][epoch]) == list(range(n))
    assert sorted(read[0]["epochs"][2] + read[1]["epochs"][2]) == list(range(n, n + 100))
