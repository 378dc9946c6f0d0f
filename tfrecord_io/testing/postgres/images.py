"""The ``images`` table of the tests: PNG files in ``bytea`` with their labels.

The table has the columns a catalogue of labelled images has::

    images(id serial primary key, filename text, label int, class text, image bytea)

:func:`mnist_png_rows` turns an MNIST set (:func:`tfrecord_io.datasets.mnist.load`) into such
rows, each 28x28 image a grayscale PNG file (Pillow); :func:`load_images` copies rows into the
table with PostgreSQL's ``COPY``.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from PIL import Image

from tfrecord_io.datasets.mnist import Split
from tfrecord_io.testing.postgres.server import Postgres

__all__ = ["IMAGES_TABLE", "ImageRow", "create_images_table", "load_images", "mnist_png_rows"]

#: The name of the table of images.
IMAGES_TABLE = "images"


@dataclass(frozen=True)
class ImageRow:
    """One row of the table (``id`` is given by the database).

    Attributes:
        filename: the image's file name, ``CLASS/SPLIT-NNNNN.png``.
        label: the class index (the MNIST digit).
        class_text: the class's name (``"7"``), the ``class`` column.
        image: the encoded image file (PNG bytes).
    """

    filename: str
    label: int
    class_text: str
    image: bytes


def mnist_png_rows(split: Split, limit: int | None = None) -> Iterator[ImageRow]:
    """The first *limit* images of an MNIST set (all when None) as rows of grayscale PNGs, in
    the set's order."""
    n = len(split) if limit is None else min(limit, len(split))
    for i in range(n):
        buffer = io.BytesIO()
        Image.fromarray(split.images[i], mode="L").save(buffer, format="PNG")
        label = int(split.labels[i])
        yield ImageRow(f"{label}/{split.name}-{i:05d}.png", label, str(label), buffer.getvalue())


def create_images_table(db: Postgres, table: str = IMAGES_TABLE) -> None:
    """Create the (empty) table of images, replacing one of that name."""
    with db.connect() as conn:
        conn.execute(f"drop table if exists {table}")
        conn.execute(
            f"create table {table} (id serial primary key, filename text not null, "
            "label int not null, class text not null, image bytea not null)"
        )


def load_images(db: Postgres, rows: Iterable[ImageRow], table: str = IMAGES_TABLE) -> int:
    """Append *rows* to the table with ``COPY`` (ids follow the rows' order); the number
    copied."""
    count = 0
    with db.connect() as conn, conn.cursor() as cur:
        copy_sql = f"copy {table} (filename, label, class, image) from stdin"
        with cur.copy(copy_sql) as copy:
            for row in rows:
                copy.write_row((row.filename, row.label, row.class_text, row.image))
                count += 1
    return count
