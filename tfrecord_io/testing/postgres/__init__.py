"""A real PostgreSQL server for tests, and a table of images to read from it with Spark's JDBC.

:class:`Postgres` (in :mod:`~tfrecord_io.testing.postgres.server`) runs Debian's PostgreSQL in a
temporary directory on 127.0.0.1, as the ``postgres`` OS user when run as root, and removes it
when stopped. :mod:`~tfrecord_io.testing.postgres.images` makes the ``images`` table (PNG files
in ``bytea``, with labels) and fills it, for example with the MNIST test set.

By hand, for developers (``make postgres``)::

    python -m tfrecord_io.testing.postgres --mnist ../shared/data/mnist

Example::

    with Postgres() as db:
        create_images_table(db)
        load_images(db, mnist_png_rows(split))
        print(db.jdbc_url)      # jdbc:postgresql://127.0.0.1:PORT/postgres
"""

from tfrecord_io.errors import PostgresError
from tfrecord_io.testing.postgres.images import (
    IMAGES_TABLE,
    ImageRow,
    create_images_table,
    load_images,
    mnist_png_rows,
)
from tfrecord_io.testing.postgres.jdbc import DRIVER_CLASS, JDBC_ENV, find_jdbc_jars
from tfrecord_io.testing.postgres.server import BIN_ENV, Postgres, find_bindir

__all__ = [
    "BIN_ENV",
    "DRIVER_CLASS",
    "IMAGES_TABLE",
    "JDBC_ENV",
    "ImageRow",
    "Postgres",
    "PostgresError",
    "create_images_table",
    "find_bindir",
    "find_jdbc_jars",
    "load_images",
    "mnist_png_rows",
]
