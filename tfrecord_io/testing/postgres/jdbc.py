"""The PostgreSQL JDBC driver's jars for Spark (``spark.jars``), as the project's setup fetched
them from Maven Central (``org.postgresql:postgresql``, see build.sbt)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DRIVER_CLASS", "JDBC_ENV", "find_jdbc_jars"]

#: Environment variable: the driver's classpath (``:``-separated), or a file holding one.
JDBC_ENV = "TFRECORD_IO_POSTGRES_JDBC"

#: The class Spark's JDBC source is told to load (its ``driver`` option).
DRIVER_CLASS = "org.postgresql.Driver"

_TOOLS_FILE = Path(__file__).resolve().parents[3] / ".tools" / "postgres-jdbc.classpath"


def find_jdbc_jars() -> list[str] | None:
    """The jar files of the driver, from ``$TFRECORD_IO_POSTGRES_JDBC`` or else
    ``.tools/postgres-jdbc.classpath`` at the repository root (``make setup`` writes it); None
    when neither exists."""
    named = os.environ.get(JDBC_ENV)
    if named:
        text = Path(named).read_text() if Path(named).is_file() else named
    elif _TOOLS_FILE.is_file():
        text = _TOOLS_FILE.read_text()
    else:
        return None
    jars = [p for p in text.strip().split(os.pathsep) if p.endswith(".jar")]
    return jars or None
