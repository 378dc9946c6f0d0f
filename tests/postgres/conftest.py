"""Fixtures of the database tests: the test PostgreSQL server, holding the MNIST test set as PNG
images in the table ``images``, and the options of Spark's JDBC source to read it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from pyspark import cloudpickle

import image_programs

from tfrecord_io.datasets import mnist
from tfrecord_io.testing import postgres as pg

MNIST = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mnist"


@dataclass(frozen=True)
class ImagesDb:
    """The loaded database: the server, and the MNIST set whose images have ids 1..N in order
    (``id`` k holds ``images[k - 1]``)."""

    server: pg.Postgres
    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server for the session (as the ``postgres`` OS user when root), removed at
    the end, also after a failure. Never skips: without PostgreSQL it fails, saying how to get
    it."""
    server = pg.Postgres()
    try:
        try:
            server.start()
        except pg.PostgresError as e:
            pytest.fail(f"the test PostgreSQL did not start: {e}", pytrace=False)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mnist_test():
    """The MNIST test set (10,000 images)."""
    (split,) = [s for s in mnist.load(MNIST) if s.name == "test"]
    return split


@pytest.fixture(scope="session")
def images_db(postgres, mnist_test):
    """The table ``images`` holding the whole MNIST test set as PNG files, ids 1..10000."""
    pg.create_images_table(postgres)
    assert pg.load_images(postgres, pg.mnist_png_rows(mnist_test)) == len(mnist_test)
    return ImagesDb(postgres, mnist_test.images, mnist_test.labels)


@pytest.fixture(scope="session")
def jdbc(images_db):
    """The options of Spark's JDBC source for the test database (the driver's jars are in the
    session's ``spark.jars``, see tests/conftest.py)."""
    if pg.find_jdbc_jars() is None:
        pytest.fail(f"no PostgreSQL JDBC driver (.tools/postgres-jdbc.classpath or "
                    f"${pg.JDBC_ENV}): run `make setup`", pytrace=False)
    return {"url": images_db.server.jdbc_url, "user": images_db.server.user,
            "driver": pg.DRIVER_CLASS}


# Node programs travel by value: executors and node processes do not have tests/ on their path.
cloudpickle.register_pickle_by_value(image_programs)
