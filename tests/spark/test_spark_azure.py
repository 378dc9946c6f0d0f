"""Spark on Azure Blob Storage through Hadoop's ABFS connector (``abfs://``), configured from the
same settings that tfrecord-io's own ``az://`` and ``abfs://`` read (:func:`tfrecord_io.spark
.abfs_conf`): ``save_dataframe`` read back with ``format("tfrecord")`` and in Python from the
same URL (classic and Spark Connect), exact splits from the index sidecars,
``save_records``/``load_records``, a failed write that leaves nothing at its destination
(store_checks.py), and the account key in no event log. On the test Azure Blob server (Azurite,
started once per session: a flat-namespace account, reached through its Blob endpoint as ABFS
does since Hadoop 3.4.2), with the connector that ``make setup`` fetched
(tfrecord_io.testing.azurite.abfs) on the session's classpath. Spark 4 only, as for S3
(tests/spark/test_spark_s3.py): pyspark 3.5's Hadoop has no ABFS over the Blob endpoint."""

from __future__ import annotations

import uuid

import pytest

from tfrecord_io import example as ex
from tfrecord_io import records
from tfrecord_io import spark as tfs
from tfrecord_io.testing.azurite import ACCOUNT_KEY, ACCOUNT_NAME

import store_checks


def _configured(spark, container: str):
    """*spark* with ABFS configured for the test Azure server, and the test's own prefix of
    the container as an ``abfs://`` URL (Hadoop's form, which Python reads as it is)."""
    tfs.configure_abfs(spark)
    host = f"{ACCOUNT_NAME}.dfs.core.windows.net"
    return spark, f"abfs://{container}@{host}/spark-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def abfs(any_spark, azure_env, azure_container):
    """Each test on a classic session, then on a Spark Connect client (:func:`_configured`)."""
    return _configured(any_spark, azure_container)


@pytest.fixture
def abfs_classic(spark, azure_env, azure_container):
    """A classic session (RDDs), :func:`_configured`."""
    return _configured(spark, azure_container)


def test_spark_writes_on_abfs_and_python_reads_the_same_blobs(abfs):
    store_checks.spark_writes_and_python_reads_the_same_objects(*abfs)


def test_python_writes_on_abfs_and_spark_reads_it(abfs):
    spark, url = abfs
    data = [ex.encode_example({"id": [i], "name": [f"name{i}".encode()]}) for i in range(30)]
    records.write(f"{url}/from-python/part-00000.tfrecord", data)
    back = spark.read.format("tfrecord").load(f"{url}/from-python")
    assert sorted(r.id for r in back.select("id").collect()) == list(range(30))


def test_a_big_file_on_abfs_is_read_in_exact_splits_from_its_index(abfs_classic):
    store_checks.a_big_file_is_read_in_exact_splits(*abfs_classic)


def test_a_failed_write_job_leaves_nothing_at_its_abfs_destination(abfs):
    store_checks.a_failed_write_leaves_nothing(*abfs)


def test_save_records_and_load_records_round_trip_on_abfs(abfs_classic):
    store_checks.records_round_trip(*abfs_classic)


def test_the_account_key_is_in_no_event_log(abfs, event_logs):
    spark, url = abfs
    tfs.save_dataframe(store_checks.people(spark, 10), f"{url}/redacted")
    assert spark.read.format("tfrecord").load(f"{url}/redacted").count() == 10
    logged = "\n".join(p.read_text(encoding="utf-8", errors="replace")
                       for p in event_logs.rglob("*") if p.is_file())
    assert "fs.azure.account.key" in logged  # the setting is there, its value is not
    assert ACCOUNT_KEY not in logged
