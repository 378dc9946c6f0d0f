"""Fixtures of the standalone tests: three hosts on a virtual network (Linux network namespaces),
a Spark Master on the bridge and a Worker on each host, an HDFS on the bridge address, and a
driver in the root namespace that reaches its executors only over that network."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tfrecord_io.testing import minihdfs
from tfrecord_io.testing.standalone import StandaloneCluster, VirtualNetwork

from waiting import eventually


@pytest.fixture(scope="package")
def network():
    """Three namespaced hosts (198.18.N.11, .12, .13) on a bridge (198.18.N.1): room for a
    ps-mode cluster's three nodes, one per host. All removed at the end, with every process left
    in them, also when tests failed."""
    net = VirtualNetwork(3)
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

    active = SparkSession.getActiveSession() or SparkContext._active_spark_context
    if active is not None:
        active.stop()
    session = tfs.session(
        standalone.master_url, app_name="tfrecord-io-standalone-tests",
        **standalone.spark_conf(),
        **{"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
           "spark.task.maxFailures": "2"},
    )
    session.sparkContext.setLogLevel("ERROR")
    _wait_for_executors(session.sparkContext, {h.address for h in standalone.network.hosts})
    try:
        yield session
    finally:
        session.stop()


def executor_hosts(sc) -> set[str]:
    """The addresses (``SPARK_LOCAL_IP``) of the executors that ran a small job's tasks."""
    return set(sc.parallelize(range(8), 8)
               .map(lambda _: __import__("os").environ.get("SPARK_LOCAL_IP")).collect())


def _wait_for_executors(sc, hosts: set[str], timeout: float = 600.0) -> None:
    eventually(lambda: executor_hosts(sc) == hosts, timeout=timeout, every=2,
               what=f"an executor on every host {sorted(hosts)}")


def _register_programs() -> None:
    # Node programs travel by value: executors and node processes do not have tests/ on their path.
    # The feeding programs are tests/cluster's (that directory is on the path for them only).
    sys.path.append(str(Path(__file__).resolve().parent.parent / "cluster"))
    from pyspark import cloudpickle

    import feed_programs
    import manager_programs

    cloudpickle.register_pickle_by_value(manager_programs)
    cloudpickle.register_pickle_by_value(feed_programs)


_register_programs()
