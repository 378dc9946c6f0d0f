"""Session-wide fixtures: real services, started once per test session."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

SPARK_MASTER = os.environ.get("TFRECORD_IO_TEST_MASTER", "local-cluster[2,1,1024]")


@pytest.fixture(scope="session")
def spark():
    """A SparkSession on a local cluster: two executor JVMs with their own Python workers."""
    from tfrecord_io import spark as tfs

    session = tfs.session(
        SPARK_MASTER,
        app_name="tfrecord-io-tests",
        **{
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.task.maxFailures": "4",
            "spark.executor.memory": "1g",
            "spark.python.worker.reuse": "true",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sc(spark):
    """The SparkContext of :func:`spark`."""
    return spark.sparkContext
