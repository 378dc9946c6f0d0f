"""What Spark on an object store must do, whichever connector serves it: the checks that
test_spark_azure.py and test_spark_gcs.py run on their stores (*url* a fresh prefix of the
test's own, *spark* a session with the store's connector configured)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from tfrecord_io import example as ex
from tfrecord_io import fs, records
from tfrecord_io import spark as tfs


def people(spark, n: int = 50):
    """*n* rows of (id, name)."""
    return spark.range(n).select(F.col("id"), F.concat(F.lit("name"), F.col("id")).alias("name"))


def spark_writes_and_python_reads_the_same_objects(spark, url: str) -> None:
    """``save_dataframe`` in 3 tasks, read back by ``format("tfrecord")`` and, from the same
    URL, by tfrecord-io's reader; ``_SUCCESS``, 3 part files and their 3 split indexes."""
    tfs.save_dataframe(people(spark).repartition(3), f"{url}/people")
    back = spark.read.format("tfrecord").load(f"{url}/people")
    assert sorted((r.id, r.name) for r in back.collect()) == [(i, f"name{i}") for i in range(50)]
    names = [fs.split(u)[1] for u in fs.ls(f"{url}/people")]
    assert "_SUCCESS" in names
    assert len([n for n in names if n.startswith("part-")]) == 3
    assert len([n for n in names if n.endswith(".tfindex")]) == 3  # the split index sidecars
    found = [ex.decode_example(r) for u in fs.expand(f"{url}/people") for r in records.read(u)]
    assert sorted(e["id"][0] for e in found) == list(range(50))


def a_big_file_is_read_in_exact_splits(spark, url: str) -> None:
    """One file of about 0.9 MB, read in splits of 128 KiB: every record once."""
    rows = spark.range(4000).select(F.col("id"), F.repeat(F.lit("x"), 200).alias("pad"))
    tfs.save_dataframe(rows.coalesce(1), f"{url}/big")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(128 << 10))
    try:
        frame = spark.read.format("tfrecord").load(f"{url}/big")
        assert frame.rdd.getNumPartitions() > 1
        ids = [r.id for r in frame.select("id").collect()]
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert sorted(ids) == list(range(4000))  # every record once, none cut at a split


def a_failed_write_leaves_nothing(spark, url: str) -> None:
    """A write job whose task fails: no part file, no ``_SUCCESS``, no task attempt's output
    at the destination (an empty directory, or nothing at all)."""
    failing = people(spark).repartition(2).withColumn(
        "id", F.when(F.col("id") == 42, F.raise_error(F.lit("task fails"))).otherwise(F.col("id")))
    with pytest.raises(Exception, match="task fails"):
        failing.write.format("tfrecord").save(f"{url}/failed")
    target = f"{url}/failed"
    left = [n for _, _, files in fs.walk(target) for n in files] if fs.exists(target) else []
    assert left == []


def records_round_trip(spark, url: str) -> None:
    """``save_records`` of 100 records in 4 tasks, read back by ``load_records`` and by
    tfrecord-io's reader."""
    data = [b"record-%d" % i for i in range(100)]
    tfs.save_records(spark.sparkContext.parallelize(data, 4), f"{url}/records")
    assert sorted(tfs.load_records(spark.sparkContext, f"{url}/records").collect()) == \
        sorted(data)
    assert sorted(r for u in fs.expand(f"{url}/records") for r in records.read(u)) == sorted(data)
