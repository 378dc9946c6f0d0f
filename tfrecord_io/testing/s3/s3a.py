"""Hadoop's S3A connector for the tests' Spark applications, as the project's setup fetched it
from Maven Central (``org.apache.hadoop:hadoop-aws`` of the Hadoop that pyspark bundles, with
the AWS SDK bundle; see build.sbt)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tfrecord_io.spark.object_stores import hadoop_version

__all__ = ["S3A_CLASSPATH_ENV", "find_s3a_classpath"]

#: Environment variable: the connector's classpath (``:``-separated), or a file holding one.
S3A_CLASSPATH_ENV = "TFRECORD_IO_S3A_CLASSPATH"

_TOOLS_FILE = Path(__file__).resolve().parents[3] / ".tools" / "hadoop-aws.classpath"
_HADOOP_AWS = re.compile(r"hadoop-aws-(\d+\.\d+\.\d+)\.jar$")


def find_s3a_classpath() -> str | None:
    """The connector's classpath (for ``spark.driver.extraClassPath`` and
    ``spark.executor.extraClassPath``), from ``$TFRECORD_IO_S3A_CLASSPATH`` or else
    ``.tools/hadoop-aws.classpath`` at the repository root (``make setup`` writes it). None when
    neither exists, or when its ``hadoop-aws`` is not of the Hadoop that the installed pyspark
    bundles (pyspark 3.5 bundles Hadoop 3.3.4, the setup fetches the connector of 4.x's)."""
    named = os.environ.get(S3A_CLASSPATH_ENV)
    if named:
        text = Path(named).read_text() if Path(named).is_file() else named
    elif _TOOLS_FILE.is_file():
        text = _TOOLS_FILE.read_text()
    else:
        return None
    jars = [p for p in text.strip().split(os.pathsep) if p.endswith(".jar")]
    versions = {m.group(1) for m in map(_HADOOP_AWS.search, jars) if m}
    if versions != {hadoop_version()}:
        return None
    return os.pathsep.join(jars)
