"""The sidecar split index as files name and hold it (``docs/index-format.md``): where the index of
a data file lives, and its text for records written from offset 0. The writer writes it;
:mod:`tfrecord_io.index` reads, checks and uses it."""

from __future__ import annotations

import os
from collections.abc import Iterable
from itertools import accumulate

from tfrecord_io import framing, fs

__all__ = ["INDEX_SUFFIX", "index_path", "index_text", "trailer"]

#: Suffix of index file names.
INDEX_SUFFIX = ".tfindex"


def index_path(data_path: str | os.PathLike[str]) -> str:
    """Return the index path of a data file: ``DIR/NAME`` -> ``DIR/_NAME.tfindex``.

    Works for local paths and for URLs (``hdfs://nn:8020/d/part-0`` ->
    ``hdfs://nn:8020/d/_part-0.tfindex``).

    Raises:
        ValueError: if *data_path* names no file (empty, or ends with ``/``).
    """
    name = fs.name(data_path)
    directory, base = fs.split(name)
    if not base:
        raise ValueError(f"not a file {'URL' if '://' in name else 'path'}: {name!r}")
    return fs.join(directory, "_" + base + INDEX_SUFFIX)


def trailer(count: int) -> str:
    """The index's last line, stating how many records (entry lines) it lists, so that the count
    of a file is read from the index's last bytes alone."""
    return f"# {count} records\n"


def index_text(lengths: Iterable[int]) -> str:
    """The index text for records of the given data lengths, starting at offset 0, with its
    trailer."""
    framed = [n + framing.FRAMING_BYTES for n in lengths]
    entries = "".join(map("{} {}\n".format, accumulate(framed, initial=0), framed))
    return entries + trailer(len(framed))
