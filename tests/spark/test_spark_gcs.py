"""Spark on Google Cloud Storage through Google's connector for Hadoop (``gs://``), configured
from the same settings that tfrecord-io's own ``gs://`` reads (:func:`tfrecord_io.spark
.gcs_conf`): ``save_dataframe`` read back with ``format("tfrecord")`` and in Python from the
same URL (classic and Spark Connect), exact splits from the index sidecars,
``save_records``/``load_records``, and a failed write that leaves nothing at its destination
(store_checks.py). On the test GCS server (fake-gcs-server, started once per session), with the
connector that ``make setup`` fetched (tfrecord_io.testing.gcs.connector) on the session's
classpath. Spark 4 only, as for S3 (tests/spark/test_spark_s3.py)."""

from __future__ import annotations

import uuid

import pytest

from tfrecord_io import spark as tfs

import store_checks


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


def test_spark_writes_on_gs_and_python_reads_the_same_objects(gs):
    store_checks.spark_writes_and_python_reads_the_same_objects(*gs)


def test_a_big_file_on_gs_is_read_in_exact_splits_from_its_index(gs_classic):
    store_checks.a_big_file_is_read_in_exact_splits(*gs_classic)


def test_a_failed_write_job_leaves_nothing_at_its_gs_destination(gs_classic):
    store_checks.a_failed_write_leaves_nothing(*gs_classic)


def test_save_records_and_load_records_round_trip_on_gs(gs_classic):
    store_checks.records_round_trip(*gs_classic)
