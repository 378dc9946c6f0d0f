"""Spark on Google Cloud Storage through Google's connector for Hadoop (``gs://``), configured
from the same settings that tfrecord-io's own ``gs://`` reads (:func:`tfrecord_io.spark
.gcs_conf`): ``save_dataframe`` read back with ``format("tfrecord")`` and in Python from the
same URL (classic and Spark Connect), exact splits from the index sidecars,
``save_records``/``load_records``, and a failed write that leaves nothing at its destination. On
the test GCS server (fake-gcs-server, started once per session), with the connector that ``make
setup`` fetched (tfrecord_io.testing.gcs.connector) on the session's classpath. Spark 4 only, as
for S3 (tests/spark/test_spark_s3.py)."""

from __future__ import annotations

import uuid

import pytest
from pyspark.sql import functions as F

from tfrecord_io import example as ex
from tfrecord_io import fs, records
from tfrecord_io import spark as tfs


def _configured(spark, bucket: str):
    """*spark* with the connector configured for the test GCS server, and the test's own
    prefix of the bucket as a ``gs://`` URL."""
    tfs.configure_gcs(spark)
    return spark, f"gs://{bucket}/spark-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def gs(any_spark, gcs_env, gcs_bucket):
    """Each test on a classic session, then on a Spark Connect client (:func:`_configured`)."""
    return _configured(any_spark, gcs_bucket)


@pytest.fixture
def gs_classic(spark, gcs_env, gcs_bucket):
    """A classic session (RDDs), :func:`_configured`."""
    return _configured(spark, gcs_bucket)


def _people(spark, n: int = 50):
    return spark.range(n).select(F.col("id"), F.concat(F.lit("name"), F.col("id")).alias("name"))


def test_spark_writes_on_gs_and_python_reads_the_same_objects(gs):
    spark, url = gs
    tfs.save_dataframe(_people(spark).repartition(3), f"{url}/people")
    back = spark.read.format("tfrecord").load(f"{url}/people")
    assert sorted((r.id, r.name) for r in back.collect()) == [(i, f"name{i}") for i in range(50)]
    names = [fs.split(u)[1] for u in fs.ls(f"{url}/people")]
    assert "_SUCCESS" in names
    assert len([n for n in names if n.startswith("part-")]) == 3
    assert len([n for n in names if n.endswith(".tfindex")]) == 3  # the split index sidecars
    found = [ex.decode_example(r) for u in fs.expand(f"{url}/people") for r in records.read(u)]
    assert sorted(e["id"][0] for e in found) == list(range(50))


def test_a_big_file_on_gs_is_read_in_exact_splits_from_its_index(gs_classic):
    spark, url = gs_classic
    rows = spark.range(4000).select(F.col("id"), F.repeat(F.lit("x"), 200).alias("pad"))
    tfs.save_dataframe(rows.coalesce(1), f"{url}/big")  # one file of about 0.9 MB
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(128 << 10))
    try:
        frame = spark.read.format("tfrecord").load(f"{url}/big")
        assert frame.rdd.getNumPartitions() > 1
        ids = [r.id for r in frame.select("id").collect()]
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert sorted(ids) == list(range(4000))  # every record once, none cut at a split


def test_a_failed_write_job_leaves_nothing_at_its_gs_destination(gs_classic):
    spark, url = gs_classic
    failing = _people(spark).repartition(2).withColumn(
        "id", F.when(F.col("id") == 42, F.raise_error(F.lit("task fails"))).otherwise(F.col("id")))
    with pytest.raises(Exception, match="task fails"):
        failing.write.format("tfrecord").save(f"{url}/failed")
    left = [n for _, _, files in fs.walk(f"{url}/failed") for n in files]
    assert left == []  # no part file, no _SUCCESS, no task attempt's _temporary output


def test_save_records_and_load_records_round_trip_on_gs(gs_classic):
    spark, url = gs_classic
    data = [b"record-%d" % i for i in range(100)]
    tfs.save_records(spark.sparkContext.parallelize(data, 4), f"{url}/records")
    assert sorted(tfs.load_records(spark.sparkContext, f"{url}/records").collect()) == \
        sorted(data)
    assert sorted(r for u in fs.expand(f"{url}/records") for r in records.read(u)) == sorted(data)
