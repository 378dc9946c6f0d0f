"""Google's Cloud Storage connector for the tests' Spark applications, as the project's setup
fetched it from Maven Central (``com.google.cloud.bigdataoss:gcs-connector``, its shaded jar;
see build.sbt), for the driver's and executors' classpath."""

from __future__ import annotations

import os

from tfrecord_io.testing.classpaths import find_jars

__all__ = ["GCS_CONNECTOR_CLASSPATH_ENV", "find_gcs_connector_classpath"]

#: Environment variable: the connector's classpath (``:``-separated), or a file holding one.
GCS_CONNECTOR_CLASSPATH_ENV = "TFRECORD_IO_GCS_CONNECTOR_CLASSPATH"


def find_gcs_connector_classpath() -> str | None:
    """The connector's classpath, from ``$TFRECORD_IO_GCS_CONNECTOR_CLASSPATH`` or else
    ``.tools/gcs-connector.classpath`` at the repository root (``make setup`` writes it); None
    when neither exists."""
    jars = find_jars(GCS_CONNECTOR_CLASSPATH_ENV, "gcs-connector.classpath")
    return None if jars is None else os.pathsep.join(jars)
