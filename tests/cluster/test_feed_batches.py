"""The batches a feeding job sends, made in the executors' JVMs (real Spark, no TensorFlow
cluster) as the feed source makes them (an RDD as a one-column DataFrame fed as ByteArray):
the sharing rule, the records' bytes, the batch size, and data that changed."""

from __future__ import annotations

import collections
from types import SimpleNamespace

import pyarrow as pa
import pytest
from pyspark import RDD, SparkContext
from pyspark.serializers import NoOpSerializer

from tfrecord_io import example
from tfrecord_io.cluster.feed.batch_format import BATCH_HEADER, LENGTH, MAGIC, locate
from tfrecord_io.cluster.feed.plan import BATCH_BYTES, deal
from tfrecord_io.spark.jvm import FEED_BATCHES_CLASS, call, java_class, java_dataset, records_frame

SIZES = [5, 0, 17, 1, 9]  # uneven partitions, one empty: 32 records b"r0".."r31"


def uneven_rdd(sc, sizes):
    starts = [sum(sizes[:i]) for i in range(len(sizes))]

    def partition(index, _):
        return [b"r%d" % i for i in range(starts[index], starts[index] + sizes[index])]

    return sc.parallelize(range(len(sizes)), len(sizes)).mapPartitionsWithIndex(partition)


def plan_batches(sc, data, workers, job, *, equal, batch_bytes=BATCH_BYTES):
    """What the feed source's ``send`` makes of *data* (``FeedBatches``): the batches, and the
    deal's records per worker and records dropped."""
    record_type = "Example"
    if isinstance(data, RDD):
        data, record_type = records_frame(data), "ByteArray"
    batches = java_class(sc, FEED_BATCHES_CLASS)
    frame = java_dataset(data)
    rule = deal([int(n) for n in call(batches.countRows, frame)] if equal else None, workers)
    jrdd = call(batches.fromRows, frame, record_type, rule.offsets, rule.counts, rule.limit,
                workers, job, batch_bytes)
    return SimpleNamespace(jrdd=jrdd, per_worker=rule.per_worker, dropped=rule.dropped)


def collect(plan):
    """The plan's batches, collected to Python as ``bytes``."""
    return RDD(plan.jrdd, SparkContext.getOrCreate(), NoOpSerializer()).collect()


def unpack(plan):
    """[(worker, job, partition, seq, records as bytes)] of the plan's batches."""
    out = []
    for batch in collect(plan):
        magic, worker, job, partition, seq, count = BATCH_HEADER.unpack_from(batch)
        assert magic == MAGIC
        records = locate(batch[BATCH_HEADER.size:], count).records()
        out.append((worker, job, partition, seq, records))
    return out


def by_worker(batches):
    records = collections.defaultdict(list)
    for worker, _, _, _, recs in batches:
        records[worker].extend(recs)
    return records


def test_sync_rule_gives_each_worker_every_wth_record_and_drops_the_remainder(sc):
    plan = plan_batches(sc, uneven_rdd(sc, SIZES), 3, job=7, equal=True)
    got = by_worker(unpack(plan))
    assert (plan.per_worker, plan.dropped) == (10, 2)
    # Global index g (in partition order) goes to worker g % 3 while g < 3 * (32 // 3) = 30.
    for w in range(3):
        assert sorted(got[w], key=lambda r: int(r[1:])) == [b"r%d" % g for g in range(w, 30, 3)]


def test_without_the_equal_rule_nothing_is_counted_or_dropped(sc):
    plan = plan_batches(sc, uneven_rdd(sc, SIZES), 2, job=0, equal=False)
    got = by_worker(unpack(plan))
    assert (plan.per_worker, plan.dropped) == (None, 0)
    assert sorted(got[0] + got[1]) == sorted(b"r%d" % i for i in range(32))
    assert abs(len(got[0]) - len(got[1])) <= len([s for s in SIZES if s])


def test_dataframe_rows_cross_as_the_examples_the_python_codec_writes(spark):
    rows = [(i, f"name {i}", [float(i), 0.5], None if i % 3 else b"\x00\xff")
            for i in range(50)]
    schema = "id long, name string, x array<float>, raw binary"
    df = spark.createDataFrame(rows, schema).repartition(3)
    plan = plan_batches(spark.sparkContext, df, 1, job=0, equal=True)
    fed = sorted(r for *_, recs in unpack(plan) for r in recs)
    table = pa.table({
        "id": pa.array([r[0] for r in rows], pa.int64()),
        "name": [r[1] for r in rows],
        "raw": pa.array([r[3] for r in rows], pa.binary()),
        "x": pa.array([r[2] for r in rows], pa.list_(pa.float32())),
    })
    assert fed == sorted(example.from_arrow(table))


def test_batches_are_cut_near_the_target_size_and_numbered_per_partition(sc):
    records = sc.parallelize([bytes([i % 256]) * 1000 for i in range(200)], 2)
    batches = unpack(plan_batches(sc, records, 2, job=3, equal=True, batch_bytes=10_000))
    assert len(batches) > 4
    for _, job, _, _, recs in batches:
        assert job == 3
        assert sum(len(r) + LENGTH.itemsize for r in recs) < 10_000 + 1004
    keys = [(partition, seq) for _, _, partition, seq, _ in batches]
    assert len(keys) == len(set(keys))
    assert sum(len(recs) for *_, recs in batches) == 200


def test_a_partition_that_changed_since_it_was_counted_fails_the_feed(sc, tmp_path):
    counter = tmp_path / "evaluations"

    def grows(_):  # one more record each time the partition is computed
        with open(counter, "a+b") as f:
            f.write(b".")
            f.seek(0)
            return [b"x"] * len(f.read())

    data = sc.parallelize([0], 1).flatMap(grows)
    plan = plan_batches(sc, data, 2, job=0, equal=True)
    # (Spark retries the task: each attempt computes the partition again, one record more.)
    with pytest.raises(Exception, match=r"partition 0 holds \d+ records now but held 1 when it "
                                         r"was counted.*cache it"):
        collect(plan)
