"""Hadoop's ABFS connector for the tests' Spark applications, as the project's setup fetched it
from Maven Central (``org.apache.hadoop:hadoop-azure`` of the Hadoop that pyspark bundles, with
the few libraries it adds; see build.sbt)."""

from __future__ import annotations

from tfrecord_io.testing.classpaths import find_hadoop_connector

__all__ = ["ABFS_CLASSPATH_ENV", "find_abfs_classpath"]

#: Environment variable: the connector's classpath (``:``-separated), or a file holding one.
ABFS_CLASSPATH_ENV = "TFRECORD_IO_ABFS_CLASSPATH"


def find_abfs_classpath() -> str | None:
    """The connector's classpath, from ``$TFRECORD_IO_ABFS_CLASSPATH`` or else
    ``.tools/hadoop-azure.classpath`` at the repository root (``make setup`` writes it); None
    when neither exists or its ``hadoop-azure`` is not of pyspark's Hadoop (pyspark 3.5's
    Hadoop 3.3.4 has no ABFS over the Blob endpoint;
    :func:`~tfrecord_io.testing.classpaths.find_hadoop_connector`)."""
    return find_hadoop_connector(ABFS_CLASSPATH_ENV, "hadoop-azure.classpath", "hadoop-azure")
