"""The next epoch of a feed is fed as soon as the last one is, before its readers ask, and gives
its task slots up when the readers wait for another feed first: on a real local-cluster."""

from __future__ import annotations

import json

from tfrecord_io import cluster

import feed_programs

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
