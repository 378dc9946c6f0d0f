"""Hadoop's S3A connector for the tests' Spark applications, as the project's setup fetched it
from Maven Central (``org.apache.hadoop:hadoop-aws`` of the Hadoop that pyspark bundles, with
the AWS SDK bundle; see build.sbt)."""

from __future__ import annotations

from tfrecord_io.testing.classpaths import find_hadoop_connector

__all__ = ["S3A_CLASSPATH_ENV", "find_s3a_classpath"]

#: Environment variable: the connector's classpath (``:``-separated), or a file holding one.
S3A_CLASSPATH_ENV = "TFRECORD_IO_S3A_CLASSPATH"


def find_s3a_classpath() -> str | None:
    """The connector's classpath, from ``$TFRECORD_IO_S3A_CLASSPATH`` or else
    ``.tools/hadoop-aws.classpath`` at the repository root (``make setup`` writes it); None when
    neither exists or its ``hadoop-aws`` is not of pyspark's Hadoop
    (:func:`~tfrecord_io.testing.classpaths.find_hadoop_connector`)."""
    return find_hadoop_connector(S3A_CLASSPATH_ENV, "hadoop-aws.classpath", "hadoop-aws")
