"""Session-wide fixtures: real services, started once per test session."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

SPARK_MASTER = os.environ.get("TFRECORD_IO_TEST_MASTER", "local-cluster[2,2,1024]")


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


@pytest.fixture(scope="session")
def hdfs(tmp_path_factory):
    """A real HDFS for the session: a MiniDFSCluster (NameNode + 2 DataNodes, replication 2,
    1 MiB blocks) in a child JVM on 127.0.0.1. ``hdfs.url`` is ``hdfs://127.0.0.1:PORT``.

    Its root directory is made world-writable, so the test process and Spark's executors can
    write anywhere in it whatever HDFS user they run as. Never skips: without the JVM
    classpath it fails, saying how to get one.
    """
    from tfrecord_io.testing import minihdfs

    if minihdfs.find_classpath() is None:
        pytest.fail(
            "no classpath for the mini HDFS (.tools/minihdfs.classpath, or "
            f"${minihdfs.CLASSPATH_ENV}): run `make setup`",
            pytrace=False,
        )
    cluster = minihdfs.MiniHdfs(
        tmp_path_factory.mktemp("hdfs"), datanodes=2, replication=2, block_size=1 << 20
    )
    try:
        try:
            cluster.start()
        except minihdfs.MiniHdfsError as e:
            pytest.fail(
                f"the mini HDFS did not start: {e}\n(run `make setup` to rebuild its classpath)",
                pytrace=False,
            )
        import hdfs_native

        # As the superuser (who runs the JVM), whatever HADOOP_USER_NAME says.
        saved = os.environ.pop("HADOOP_USER_NAME", None)
        os.environ["HADOOP_USER_NAME"] = cluster.superuser
        try:
            hdfs_native.Client(cluster.url).set_permission("/", 0o777)
        finally:
            if saved is None:
                os.environ.pop("HADOOP_USER_NAME", None)
            else:
                os.environ["HADOOP_USER_NAME"] = saved
        yield cluster
    finally:
        cluster.stop()
