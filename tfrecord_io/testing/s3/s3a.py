"""Hadoop's S3A connector for the tests' Spark applications, as the project's setup fetched it
from Maven Central (``org.apache.hadoop:hadoop-aws`` of the Hadoop that pyspark bundles, with
the AWS SDK bundle; see build.sbt)."""

from __future__ import annotations

import os
import re

from tfrecord_io.spark.object_stores import hadoop_version
from tfrecord_io.testing.classpaths import find_jars

__all__ = ["S3A_CLASSPATH_ENV", "find_s3a_classpath"]

#: Environment variable: the connector's classpath (``:``-separated), or a file holding one.
S3A_CLASSPATH_ENV = "TFRECORD_IO_S3A_CLASSPATH"

_HADOOP_AWS = re.compile(r"hadoop-aws-(\d+\.\d+\.\d+)\.jar$")


def find_s3a_classpath() -> str | None:
    """The connector's classpath (for ``spark.driver.extraClassPath`` and
    ``spark.executor.extraClassPath``), from ``$TFRECORD_IO_S3A_CLASSPATH`` or else
    ``.tools/hadoop-aws.classpath`` at the repository root (``make setup`` writes it). None when
    neither exists, or when its ``hadoop-aws`` is not of the Hadoop that the installed pyspark
    bundles (pyspark 3.5 bundles Hadoop 3.3.4, the setup fetches the connector of 4.x's)."""
    jars = find_jars(S3A_CLASSPATH_ENV, "hadoop-aws.classpath")
    if jars is None:
        return None
    versions = {m.group(1) for m in map(_HADOOP_AWS.search, jars) if m}
    if versions != {hadoop_version()}:
        return None
    return os.pathsep.join(jars)
