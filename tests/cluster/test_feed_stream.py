"""A Structured Streaming DataFrame feeds one open epoch, micro-batch after micro-batch, until
its query ends (a trigger that ends by itself) or is stopped."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from tfrecord_io import cluster

import feed_programs
from processes import node_processes
from waiting import eventually

FILE_SIZES = [40, 60, 100]  # rows per file: one micro-batch each, all even (nothing dropped)


def _write_json_lines(directory, sizes):
    start = 0
    for k, n in enumerate(sizes):
        tmp = directory.parent / f"tmp-{k}.json"
        tmp.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(start, start + n)))
        tmp.rename(directory / f"part-{k}.json")
        start += n
    return start


@pytest.fixture(scope="module")
def streamed(spark, sc, tmp_path_factory):
    """Epoch 1: a file stream (one file per micro-batch, trigger availableNow, blocking).
    Epoch 2: a rate source fed with block=False, stopped after two non-empty micro-batches."""
    out = tmp_path_factory.mktemp("stream")
    source = out / "in"
    source.mkdir()
    total = _write_json_lines(source, FILE_SIZES)
    files = spark.readStream.schema("id long").option("maxFilesPerTrigger", 1).json(str(source))
    rate = (spark.readStream.format("rate").option("rowsPerSecond", 40).load()
            .select(F.col("value").alias("id")))
    c = cluster.run(sc, feed_programs.read_stream, {"out": str(out), "epochs": 2},
                    num_workers=2, input_mode="spark")
    with c:
        first = c.train(files, feed="stream", trigger={"availableNow": True})
        feeding = c.train(rate, feed="stream", block=False, trigger={"processingTime": "1 second"})

        def fed_twice() -> bool:
            query = feeding.query
            progress = query.recentProgress if query is not None else []
            return sum(1 for p in progress if p["numInputRows"] > 0) >= 2

        eventually(fed_twice, timeout=300, every=0.5, what="two micro-batches of rows fed")
        feeding.stop()
        second = feeding.result(timeout=300)
        c.wait(timeout=300)
    read = [json.loads((out / f"worker-{w}-stream.json").read_text())["epochs"] for w in range(2)]
    return {"total": total, "reports": [first, second], "read": read, "name": c.name}


def test_every_micro_batch_of_a_file_stream_is_fed_in_one_epoch(streamed):
    report = streamed["reports"][0].epochs[0]
    assert report.jobs == len(FILE_SIZES)
    first, second = (streamed["read"][w][0] for w in range(2))
    assert not set(first) & set(second)
    assert sorted(first + second) == list(range(streamed["total"]))
    assert len(first) == len(second)
    assert report.records == {0: len(first), 1: len(second)}


def test_a_stopped_stream_ends_its_epoch_with_what_was_fed(streamed):
    feed = streamed["reports"][1]
    assert feed.stopped
    report = feed.epochs[0]
    assert report.epoch == 2 and report.jobs >= 2
    first, second = (streamed["read"][w][1] for w in range(2))
    assert not set(first) & set(second)
    assert len(first) == len(second) == report.records[0] == report.records[1] > 0


def test_nothing_is_left_running(streamed):
    assert node_processes(streamed["name"]) == []
