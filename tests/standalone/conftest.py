"""Fixtures of the standalone tests: two hosts on a virtual network (Linux network namespaces),
a Spark Master on the bridge and a Worker on each host, an HDFS on the bridge address, and a
driver in the root namespace that reaches its executors only over that network."""

from __future__ import annotations

import pytest

from tfrecord_io.testing import minihdfs
from tfrecord_io.testing.standalone import StandaloneCluster, VirtualNetwork


@pytest.fixture(scope="package")
def network():
    """Two namespaced hosts (198.18.N.11, .12) on a bridge (198.18.N.1); all removed at the end,
    with every process left in them, also when tests failed."""
    net = VirtualNetwork(2)
    try:
        net.create()
        yield net
    finally:
        net.remove()


@pytest.fixture(scope="package")
def standalone_hdfs(network, tmp_path_factory):
    """An HDFS (NameNode + 1 DataNode) bound to the bridge address, reached from every host."""
    cluster = minihdfs.MiniHdfs(tmp_path_factory.mktemp("standalone-hdfs"), datanodes=1,
                                replication=1, host=network.gateway)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="package")
def standalone(network, tmp_path_factory):
    """A Spark Master on the bridge and a Worker (2 cores) in each host's namespace."""
    cluster = StandaloneCluster(network, tmp_path_factory.mktemp("standalone"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="package")
def standalone_spark(standalone):
    """A SparkSession on the standalone cluster, its driver bound to the bridge address. Any
    Spark application already running in this process is stopped first."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from tfrecord_io import spark as tfs

    active = SparkSession.getActiveSession() or SparkContext._active_spark_context  # noqa: SLF001
    if active is not None:
        active.stop()
    session = tfs.session(
        standalone.master_url, app_name="tfrecord-io-standalone-tests",
        **standalone.spark_conf(),
        **{"spark.ui.enabled": "false", "spark.task.maxFailures": "2"},
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def _register_programs() -> None:
    # Node programs travel by value: executors and node processes do not have tests/ on their path.
    from pyspark import cloudpickle

    import manager_programs

    cloudpickle.register_pickle_by_value(manager_programs)


_register_programs()
