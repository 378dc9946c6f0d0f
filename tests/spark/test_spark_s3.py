"""Spark on an S3-compatible store through Hadoop's S3A connector (``s3a://``, and ``s3://`` as
:func:`tfrecord_io.spark.s3a_conf` maps it), configured from the same AWS settings that
tfrecord-io's own ``s3://`` reads: ``save_dataframe`` read back with ``format("tfrecord")`` and
in Python from the same URL (classic and Spark Connect), exact splits from the index sidecars,
``save_records``/``load_records``, and a failed write that leaves nothing at its destination
(the checks every store runs, store_checks.py, with S3's own: commits by the magic committer,
no pending multipart upload left). On the test S3 server (moto's, started once per
session), with the connector that ``make setup`` fetched (tfrecord_io.testing.s3.s3a) on the
session's classpath. Spark 4 only: pyspark 3.5 bundles Hadoop 3.3.4, whose connector the setup does
not fetch."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from tfrecord_io import example as ex
from tfrecord_io import fs, records
from tfrecord_io import spark as tfs

import store_checks


def _configured(spark, bucket: str):
    """*spark* with S3A configured for the test S3 server, in the session's configuration (and,
    on a classic session, in the SparkContext's Hadoop configuration for RDD I/O); the test's
    own prefix of the bucket, as ``s3://`` and ``s3a://`` URLs."""
    tfs.configure_s3a(spark, credentials=True)
    prefix = f"{bucket}/spark-{uuid.uuid4().hex[:8]}"
    return spark, f"s3://{prefix}", f"s3a://{prefix}"


@pytest.fixture
def s3a(any_spark, s3_env, s3_bucket):
    """Each test on a classic session, then on a Spark Connect client (:func:`_configured`)."""
    return _configured(any_spark, s3_bucket)


@pytest.fixture
def s3a_classic(spark, s3_env, s3_bucket):
    """A classic session (RDDs), :func:`_configured`."""
    return _configured(spark, s3_bucket)


def test_spark_writes_on_s3a_and_reads_the_same_objects_on_s3_as_python_does(s3a):
    spark, s3_url, s3a_url = s3a
    tfs.save_dataframe(store_checks.people(spark).repartition(3), f"{s3a_url}/people")
    back = spark.read.format("tfrecord").load(f"{s3_url}/people")
    assert sorted((r.id, r.name) for r in back.collect()) == [(i, f"name{i}") for i in range(50)]
    names = [fs.split(u)[1] for u in fs.ls(f"{s3_url}/people")]
    assert "_SUCCESS" in names
    assert len([n for n in names if n.startswith("part-")]) == 3
    found = [ex.decode_example(r) for u in fs.expand(f"{s3_url}/people") for r in records.read(u)]
    assert sorted(e["id"][0] for e in found) == list(range(50))


def test_writes_are_committed_by_s3as_magic_committer_without_copies(s3a, s3):
    spark, s3_url, s3a_url = s3a
    with open(s3.log_path) as log:
        log.seek(0, os.SEEK_END)
        tfs.save_dataframe(store_checks.people(spark).repartition(2), f"{s3a_url}/magic")
        requests = log.read()
    with fs.open(f"{s3_url}/magic/_SUCCESS") as f:
        assert json.load(f)["committer"] == "magic"  # S3A's own record of the commit
    assert "x-amz-copy-source" not in requests.lower() and "?uploads" in requests
    names = [fs.split(u.rstrip("/"))[1] for u in fs.ls(f"{s3_url}/magic")]
    assert not [n for n in names if n.startswith("__magic")]  # the staging prefix is gone
    assert len([n for n in names if n.startswith("part-")]) == 2
    assert len([n for n in names if n.endswith(".tfindex")]) == 2  # each part's index too


def test_a_failed_write_job_leaves_nothing_at_its_s3_destination(s3a_classic, s3, s3_bucket):
    spark, s3_url, _ = s3a_classic
    store_checks.a_failed_write_leaves_nothing(spark, f"{s3_url}/job")
    key = f"{s3_url}/job/failed".split(f"{s3_bucket}/", 1)[1]
    uploads = s3.client().list_multipart_uploads(Bucket=s3_bucket, Prefix=key)
    assert uploads.get("Uploads", []) == []  # the failed tasks' uploads were aborted


def test_a_big_file_on_s3_is_read_in_exact_splits_from_its_index(s3a_classic):
    spark, s3_url, _ = s3a_classic
    store_checks.a_big_file_is_read_in_exact_splits(spark, s3_url)


def test_save_records_and_load_records_round_trip_on_s3(s3a_classic):
    spark, s3_url, _ = s3a_classic
    store_checks.records_round_trip(spark, s3_url)
