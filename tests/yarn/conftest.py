"""Fixtures of the YARN tests: the test YARN with its HDFS (one child JVM), and a client-mode
Spark application on it, both for the whole directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tfrecord_io.testing import miniyarn


@pytest.fixture(scope="package")
def yarn(tmp_path_factory):
    """A ResourceManager, two NodeManagers (8 GiB each, physical memory checked) and an HDFS
    on 127.0.0.1. Stopped at the end, which kills every container, also when tests failed."""
    if miniyarn.find_classpath() is None:
        pytest.fail(
            "no classpath for the test YARN (.tools/miniyarn.classpath, or "
            f"${miniyarn.CLASSPATH_ENV}): run `make setup`",
            pytrace=False,
        )
    cluster = miniyarn.MiniYarn(tmp_path_factory.mktemp("yarn"), nodemanagers=2)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="package")
def yarn_spark(yarn):
    """A SparkSession on the test YARN (client mode, three executors of 2 cores, one task
    each: room for a ps-mode cluster's three nodes, or two workers and the task feeding them;
    it outlives 16 lost executors), made with ``tfrecord_io.spark.session(master="yarn")``
    and ``HADOOP_CONF_DIR`` set. Any Spark application already running in this process (the
    ``spark`` fixture's) is stopped first."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from tfrecord_io import spark as tfs

    active = SparkSession.getActiveSession() or SparkContext._active_spark_context
    if active is not None:
        active.stop()
    saved = os.environ.get("HADOOP_CONF_DIR")
    os.environ.update(yarn.env())
    session = tfs.session(
        "yarn", app_name="tfrecord-io-yarn-tests",
        **yarn.spark_conf(executors=3),
        **{"spark.ui.enabled": "false", "spark.task.maxFailures": "2",
           # the tests kill containers on purpose: the application must outlive them
           "spark.executor.maxNumFailures": "16"},
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        if saved is None:
            os.environ.pop("HADOOP_CONF_DIR", None)
        else:
            os.environ["HADOOP_CONF_DIR"] = saved


def _register_programs() -> None:
    # Node programs travel by value: executors and node processes do not have tests/ on their path.
    # The feeding programs are tests/cluster's (that directory is on the path for them only).
    sys.path.append(str(Path(__file__).resolve().parent.parent / "cluster"))
    import feed_programs
    import manager_programs
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(manager_programs)
    cloudpickle.register_pickle_by_value(feed_programs)


_register_programs()
