"""The PostgreSQL JDBC driver's jars for Spark (``spark.jars``), as the project's setup fetched
them from Maven Central (``org.postgresql:postgresql``, see build.sbt)."""

from __future__ import annotations

from tfrecord_io.testing.classpaths import find_jars

__all__ = ["DRIVER_CLASS", "JDBC_ENV", "find_jdbc_jars"]

#: Environment variable: the driver's classpath (``:``-separated), or a file holding one.
JDBC_ENV = "TFRECORD_IO_POSTGRES_JDBC"

#: The class Spark's JDBC source is told to load (its ``driver`` option).
DRIVER_CLASS = "org.postgresql.Driver"


def find_jdbc_jars() -> list[str] | None:
    """The jar files of the driver, from ``$TFRECORD_IO_POSTGRES_JDBC`` or else
    ``.tools/postgres-jdbc.classpath`` at the repository root (``make setup`` writes it); None
    when neither exists."""
    return find_jars(JDBC_ENV, "postgres-jdbc.classpath")
