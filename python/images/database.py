"""The table of images that the database programs read, through Spark's JDBC source.

The table has (at least) ``id`` (an integer key), ``label`` (the class number) and ``image``
(the encoded file, ``bytea`` in PostgreSQL: ``binary`` in Spark), as ``tfrecord_io.testing.
postgres`` loads the MNIST test set. The split is a fixed rule on the key: a row is **held out**
(never trained on) when ``id % 5 = 0``, one row in five, the same on every run.

The rows are read in parallel: ``numPartitions`` queries over equal ranges of ``id``
(``partitionColumn``), between the table's smallest and largest id (read first).
"""

from __future__ import annotations

from typing import Any

#: The rule of the held-out rows (SQL); the others are the training rows.
HELD_OUT = "id % 5 = 0"


def jdbc_options(url: str, user: str | None = None, password: str | None = None,
                 driver: str = "org.postgresql.Driver") -> dict[str, str]:
    """Spark's JDBC source options for the database at *url* (``jdbc:postgresql://...``)."""
    options = {"url": url, "driver": driver}
    if user is not None:
        options["user"] = user
    if password is not None:
        options["password"] = password
    return options


def read_rows(session: Any, options: dict[str, str], *, table: str = "images",
              held_out: bool = False, limit: int | None = None, partitions: int = 4) -> Any:
    """The training rows (``held_out=False``) or the held-out rows of *table*, as a DataFrame
    of ``id``, ``label`` and ``image``; only ids up to *limit* when given."""
    where = HELD_OUT if held_out else f"NOT ({HELD_OUT})"
    if limit is not None:
        where += f" AND id <= {int(limit)}"
    bounds = (session.read.format("jdbc").options(**options)
              .option("query", f"SELECT min(id) AS lo, max(id) AS hi FROM {table}")
              .load().first())
    return (session.read.format("jdbc").options(**options)
            .option("dbtable", f"(SELECT id, label, image FROM {table} WHERE {where}) AS rows")
            .option("partitionColumn", "id")
            .option("lowerBound", int(bounds.lo))
            .option("upperBound", int(bounds.hi) + 1)
            .option("numPartitions", partitions)
            .option("fetchsize", 1000)
            .load())
