"""Command-line PATHs -> data files, through the location layer (:func:`tfrecord_io.fs.expand`)."""

from __future__ import annotations

from collections.abc import Sequence

from tfrecord_io import fs
from tfrecord_io.errors import InputError, SpecialFileError

__all__ = ["expand_paths"]


def expand_paths(patterns: Sequence[str]) -> list[str]:
    """Expand command-line PATHs into data files: :func:`tfrecord_io.fs.expand`'s rules (files
    as given; directories recursively with names starting with ``_`` or ``.`` skipped; globs),
    all files sorted together, duplicates dropped.

    Raises:
        InputError: a PATH that is missing, matches no file, or holds no data files, or a FIFO,
            socket or device inside a PATH's directory or among its matches, naming it.
    """
    try:
        return fs.expand(list(patterns), allow_empty=False)
    except (FileNotFoundError, SpecialFileError, ValueError) as exc:
        raise InputError(str(exc)) from None
