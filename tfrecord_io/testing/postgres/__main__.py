"""``python -m tfrecord_io.testing.postgres``: a test PostgreSQL on 127.0.0.1 by hand
(``make postgres``).

Prints its URLs (libpq and JDBC) and the driver's jars for ``spark.jars``, optionally after
loading an MNIST set as the ``images`` table (``--mnist DIR``), then runs until Ctrl-C or
SIGTERM; everything is removed at the end.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tfrecord_io.datasets import mnist
from tfrecord_io.errors import MnistError, PostgresError
from tfrecord_io.testing.postgres.images import create_images_table, load_images, mnist_png_rows
from tfrecord_io.testing.postgres.jdbc import find_jdbc_jars
from tfrecord_io.testing.postgres.server import Postgres
from tfrecord_io.testing.serving import serve


def _main(argv: Sequence[str] | None = None) -> int:
    """Runs the server until Ctrl-C / SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_io.testing.postgres",
        description="Run a PostgreSQL server on 127.0.0.1 until Ctrl-C, optionally holding "
        "an MNIST set as PNG images in the table `images`.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: a free one)")
    parser.add_argument("--mnist", help="an MNIST directory whose test set (else train set) "
                        "is loaded into the table `images`")
    parser.add_argument("--limit", type=int, default=None, help="load only the first N images")
    ns = parser.parse_args(argv)

    def describe(db: Postgres) -> None:
        print(f"PostgreSQL ready in {db.start_seconds:.1f} s")
        print(f"  libpq:  {db.url}")
        print(f"  JDBC:   {db.jdbc_url}  (user {db.user}, no password)")
        print(f"  log:    {db.log_path}")
        if ns.mnist:
            splits = {s.name: s for s in mnist.load(ns.mnist)}
            split = splits.get("test") or splits["train"]
            create_images_table(db)
            n = load_images(db, mnist_png_rows(split, ns.limit))
            print(f"  table:  images ({n} PNG images of the MNIST {split.name} set)")
        jars = find_jdbc_jars()
        print(f"  spark.jars: {','.join(jars) if jars else '(none: run `make setup`)'}")

    return serve(lambda: Postgres(port=ns.port), describe, "PostgreSQL server",
                 (PostgresError, MnistError))


if __name__ == "__main__":
    sys.exit(_main())
