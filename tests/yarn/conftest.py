"""Fixtures of the YARN tests: the test YARN with its HDFS (one child JVM), the Python
environment that applications ship to their containers, and a client-mode Spark application on
it, all for the whole directory."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tfrecord_io import fs
from tfrecord_io.testing import miniyarn

ROOT = Path(__file__).resolve().parents[2]
# The packed environment (venv-pack) of `make setup` (setup-ship): TensorFlow and tfrecord-io
# installed, no pyspark.
SHIP_ENV = ROOT / ".tools" / "ship-env.tar"


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
    base = tmp_path_factory.mktemp("yarn")
    cluster = miniyarn.MiniYarn(base, nodemanagers=2)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        _remove_storage(base)


def _remove_storage(base: Path) -> None:
    """Frees the gigabytes a run leaves (HDFS blocks of the shipped environment, its localized
    and unpacked copies in the NodeManagers' local directories), keeping every log to look at."""
    shutil.rmtree(base / "hdfs", ignore_errors=True)
    for local_dir in sorted(base.glob("yarn/**/*localDir*"), key=lambda p: len(p.parts)):
        shutil.rmtree(local_dir, ignore_errors=True)


@pytest.fixture(scope="package")
def shipped_env(yarn):
    """The packed environment of ``make setup``, uploaded once to the test HDFS: its
    ``hdfs://`` URL, which every application of the session localizes from there."""
    if not SHIP_ENV.is_file():
        pytest.fail(f"no {SHIP_ENV.relative_to(ROOT)} (the environment the YARN tests ship to "
                    "their containers): run `make setup` (its setup-ship step)", pytrace=False)
    url = f"{yarn.hdfs_url}/apps/ship-env.tar"
    with SHIP_ENV.open("rb") as src, fs.open(url, "wb") as dst:
        shutil.copyfileobj(src, dst, 8 << 20)
    return url


@pytest.fixture(scope="package")
def yarn_spark(yarn, shipped_env):
    """A SparkSession on the test YARN (client mode, three executors of 2 cores, one task
    each: room for a ps-mode cluster's three nodes, or two workers and the task feeding them;
    it outlives 16 lost executors), made with ``tfrecord_io.spark.session(master="yarn")``
    and ``HADOOP_CONF_DIR`` set. Executors run the shipped environment's Python
    (``spark.yarn.dist.archives``), with no PYTHONPATH of this process. Any Spark application
    already running in this process (the ``spark`` fixture's) is stopped first."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from tfrecord_io import spark as tfs
    from tfrecord_io.cluster import slots
    from tfrecord_io.cluster.application import application_of

    active = SparkSession.getActiveSession() or SparkContext._active_spark_context
    if active is not None:
        active.stop()
    saved = os.environ.get("HADOOP_CONF_DIR")
    os.environ.update(yarn.env())
    # Spark's YARN client adds its JVM's PYTHONPATH to the executors' (this checkout, when the
    # tests run with PYTHONPATH set): the driver JVM must start without it.
    pythonpath = os.environ.pop("PYTHONPATH", None)
    _stop_driver_jvm_with_pythonpath()
    try:
        session = tfs.session(
            "yarn", app_name="tfrecord-io-yarn-tests",
            **yarn.spark_conf(executors=3, archive=shipped_env),
            **{"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
               "spark.task.maxFailures": "2",
               # the tests kill containers on purpose: the application must outlive them
               "spark.executor.maxNumFailures": "16"},
        )
    finally:
        if pythonpath is not None:
            os.environ["PYTHONPATH"] = pythonpath
    session.sparkContext.setLogLevel("ERROR")
    # Every executor localizes the environment before it starts: wait for the three (the first
    # test's cluster.run waits for its slots a minute only).
    slots.wait_for(application_of(session), 3, timeout=600)
    try:
        yield session
    finally:
        session.stop()
        if saved is None:
            os.environ.pop("HADOOP_CONF_DIR", None)
        else:
            os.environ["HADOOP_CONF_DIR"] = saved


def _stop_driver_jvm_with_pythonpath() -> None:
    """Stops the driver JVM that an earlier Spark test of this process started with PYTHONPATH
    in its environment, so that the next session starts a new one (pyspark starts its JVM once
    per process and keeps it)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None or not gateway.jvm.java.lang.System.getenv("PYTHONPATH"):
        return
    process = getattr(gateway, "proc", None)
    gateway.shutdown()
    if process is not None:
        process.stdin.close()  # pyspark's JVM exits when its stdin closes
        process.wait(timeout=60)
    SparkContext._gateway = None
    SparkContext._jvm = None


def _register_programs() -> None:
    # Node programs travel by value: executors and node processes do not have tests/ on their path
    # (nor anything else of this checkout: they run the shipped environment).
    # The feeding programs are tests/cluster's (that directory is on the path for them only).
    sys.path.append(str(Path(__file__).resolve().parent.parent / "cluster"))
    from pyspark import cloudpickle

    import feed_programs
    import manager_programs

    cloudpickle.register_pickle_by_value(manager_programs)
    cloudpickle.register_pickle_by_value(feed_programs)


_register_programs()
