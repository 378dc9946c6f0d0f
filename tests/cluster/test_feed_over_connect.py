"""Cluster.train from a Spark Connect client: a Connect DataFrame is fed to the workers without
a JVM in this process (the jar's feed source runs the counting and feeding jobs on the Connect
server's executors): every record of an epoch reaches one worker, sync workers get equal
shares, two feeds are fed in turns, an early stop ends feeding promptly, a failing node is
named, and nothing is left behind (no node process, no temporary view, no kept batches)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid

import pytest

from tfrecord_io import cluster
from tfrecord_io.errors import ClusterError, SparkConnectError

import feed_programs
from processes import node_processes
from waiting import eventually

pytestmark = pytest.mark.connect

N_TRAIN = 1001  # odd: in sync mode one record is dropped per epoch
N_VAL = 301


def _views(spark) -> list[str]:
    return [t.name for t in spark.catalog.listTables() if t.name.startswith("tfrecord_io_feed")]


def _frame(spark, n, partitions):
    return spark.range(0, n, 1, numPartitions=partitions).selectExpr("id")


def test_two_feeds_in_turns_reach_every_worker_once_with_equal_shares(connect_spark, tmp_path):
    train = _frame(connect_spark, N_TRAIN, 5).cache()
    cached = train.storageLevel
    validation = _frame(connect_spark, N_VAL, 3)
    args = {"out": str(tmp_path), "epochs": 2, "feeds": ["train", "validation"],
            "features": {"train": "example", "validation": "example"}}
    c = cluster.run(connect_spark, feed_programs.read_epochs, args, num_workers=2,
                    input_mode="spark", progress=False)
    with c:
        t = c.train(train, num_epochs=2, block=False)
        v = c.train(validation, num_epochs=2, feed="validation", block=False, cache=False)
        reports = {"train": t.result(timeout=600), "validation": v.result(timeout=600)}
        c.wait(timeout=600)
    read = [json.loads((tmp_path / f"worker-{w}-read.json").read_text()) for w in range(2)]
    for feed, n in (("train", N_TRAIN), ("validation", N_VAL)):
        for epoch in range(2):
            ids = [read[w]["epochs"][feed][epoch] for w in range(2)]
            assert [len(i) for i in ids] == [n // 2, n // 2]
            assert sorted(ids[0] + ids[1]) == list(range(n - n % 2))  # the last one dropped
            assert {w: n // 2 for w in range(2)} == reports[feed].epochs[epoch].records
            assert reports[feed].epochs[epoch].dropped == n % 2
    assert all(r["after_end"] == {"train": 0, "validation": 0} for r in read)
    assert node_processes(c.name) == []
    assert _views(connect_spark) == []  # and what they named stays cached
    assert train.storageLevel == cached
    assert cached.useMemory


def test_workers_returning_early_end_the_feeding_without_a_hang(connect_spark, tmp_path):
    # ~50 MB per worker, more than its buffer (32 batches of ~1 MiB): feeding tasks would wait
    # on a worker that stopped reading, and the rest of the epoch must be dropped.
    n = 100_000
    data = _frame(connect_spark, n, 4).selectExpr("id", "repeat('x', 1000) AS pad")
    args = {"out": str(tmp_path), "take": 50, "how": "return"}
    c = cluster.run(connect_spark, feed_programs.read_then_stop, args, num_workers=2,
                    input_mode="spark", progress=False)
    with c:
        report = c.train(data, num_epochs=3, timeout=300)
        c.wait(timeout=300)
    # Epoch 1 was cut short (its rest dropped), epochs 2 and 3 were never fed: nobody read.
    assert len(report.epochs) == 1
    assert sum(report.epochs[0].records.values()) + report.epochs[0].dropped == n
    assert report.epochs[0].dropped > 0
    for w in range(2):
        assert json.loads((tmp_path / f"worker-{w}-stop.json").read_text())["read"] == 50
    assert node_processes(c.name) == []
    assert _views(connect_spark) == []


def test_a_node_failing_while_fed_fails_train_naming_it(connect_spark, tmp_path):
    data = _frame(connect_spark, 50_000, 4).cache()
    args = {"out": str(tmp_path), "node": "worker:1", "after": 100, "epochs": 3}
    c = cluster.run(connect_spark, feed_programs.fail_while_fed, args, num_workers=2,
                    input_mode="spark", progress=False)
    with pytest.raises(ClusterError, match="worker:1") as info:
        with c:
            c.train(data, num_epochs=3, timeout=300)
    assert "planned failure on worker:1" in str(info.value)
    assert node_processes(c.name) == []
    assert _views(connect_spark) == []


def test_a_streaming_dataframe_is_refused_at_once_saying_why(connect_spark, tmp_path):
    stream = connect_spark.readStream.format("rate").load()
    c = cluster.run(connect_spark, feed_programs.read_late, {"out": str(tmp_path), "pause": 0},
                    num_workers=1, input_mode="spark", progress=False)
    with c:
        with pytest.raises(SparkConnectError, match="classic session"):
            c.train(stream)
        c.shutdown()
    assert node_processes(c.name) == []


def test_an_rdd_or_classic_dataframe_is_refused_by_a_connect_cluster(connect_spark, tmp_path):
    c = cluster.run(connect_spark, feed_programs.read_late, {"out": str(tmp_path), "pause": 0},
                    num_workers=1, input_mode="spark", progress=False)
    with c:
        with pytest.raises(TypeError, match="DataFrame of a Connect session"):
            c.train([b"r1", b"r2"])
        c.shutdown()


_DYING_CLIENT = """
import os, sys
from pyspark import cloudpickle
sys.path.insert(0, sys.argv[4])
import feed_programs
cloudpickle.register_pickle_by_value(feed_programs)
from pyspark.sql.connect.session import SparkSession
from tfrecord_io import cluster
url, session_id, out = sys.argv[1:4]
spark = SparkSession.builder.remote(f"{url}/;session_id={session_id}").create()
c = cluster.run(spark, feed_programs.read_one_epoch_then_wait, {"out": out}, num_workers=2,
                input_mode="spark", progress=False, reservation_timeout=300)
with open(os.path.join(out, "cluster"), "w") as f:
    f.write(c.name)
# 100 KB a record: 50 MB per worker per epoch, more than a worker buffers of an epoch it has not
# begun to read (32 batches of about 1 MiB), so epoch 2 is still being fed when it is killed
c.train(spark.range(0, 1000, 1, 4).selectExpr("id", "repeat('x', 100000) AS pad"), num_epochs=3)
"""


def _kept(spark, session_id: str) -> int:
    """Views whose batches the Connect server keeps for *session_id* (the feed source's
    ``kept`` action)."""
    from tfrecord_io.spark.jvm import FEED_SOURCE

    frame = spark.read.format(FEED_SOURCE).options(action="kept", session=session_id).load()
    return int(frame.collect()[0].kept)


def test_the_kept_batches_of_a_client_that_died_are_freed_when_its_session_closes(
        connect_server, connect_spark, tmp_path):
    # A client process trains with kept batches (cache=True) and is killed while epoch 2 is
    # fed (its workers read epoch 1 only, and buffer less than epoch 2): its batches stay on
    # the server while its session lives, and go with it. (A dead client's session closes when
    # the server expires it; here it is closed at once, as expiry does, by a release naming
    # the session.)
    session_id = str(uuid.uuid4())
    client = subprocess.Popen(
        [sys.executable, "-c", _DYING_CLIENT, connect_server.url, session_id, str(tmp_path),
         os.path.dirname(feed_programs.__file__)], stdin=subprocess.DEVNULL)
    try:
        read = [tmp_path / f"worker-{w}-epoch1.json" for w in range(2)]
        eventually(lambda: all(p.exists() for p in read) or client.poll() is not None,
                   timeout=600, every=0.5, what="both workers read epoch 1")
        assert client.poll() is None, "the client ended before its workers read epoch 1"
    finally:
        client.kill()
        client.wait()
    assert client.returncode == -signal.SIGKILL, "the client ended before it was killed"
    assert sum(json.loads(p.read_text())["ids"] for p in read) == 1000
    assert _kept(connect_spark, session_id) == 1
    name = (tmp_path / "cluster").read_text()
    eventually(lambda: node_processes(name) == [], timeout=60, every=0.5,
               what="the nodes stop without their driver")
    assert _kept(connect_spark, session_id) == 1  # the session lives on: so do its batches

    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    dead = RemoteSparkSession.builder.remote(
        f"{connect_server.url}/;session_id={session_id}").create()
    dead.client.release_session()
    dead.client.close()
    eventually(lambda: _kept(connect_spark, session_id) == 0, timeout=30, every=0.5,
               what="the closed session's kept batches are freed")
