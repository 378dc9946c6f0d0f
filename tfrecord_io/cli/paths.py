"""Command-line PATHs -> data files: the CLI's one place that touches locations.

The location layer (``tfrecord_io.fs``) replaces this module's body.
"""

from __future__ import annotations

import glob as _glob
import os
import posixpath
from collections.abc import Iterator, Sequence
from typing import Any

from tfrecord_io import records as _records
from tfrecord_io.errors import InputError

__all__ = ["expand_paths", "is_local"]

_GLOB_CHARS = frozenset("*?[")


def is_local(path: str) -> bool:
    """Whether *path* is a local path or ``file:`` URL (not ``hdfs://``/``webhdfs://``)."""
    return _records._classify(path)[0] == "local"


def expand_paths(patterns: Sequence[str]) -> list[str]:
    """Expand command-line PATHs into data files, in a stable order.

    Each pattern is a file (taken as is), a directory (its files, recursively, sorted; names
    starting with ``_`` or ``.`` -- ``_SUCCESS``, indexes, ``.crc`` files -- are skipped) or a
    glob (``*``, ``?``, ``[...]``; matched directories are expanded too). Local paths,
    ``file:`` URLs and ``hdfs://``/``webhdfs://`` URLs are accepted. Duplicates are dropped.

    Raises:
        InputError: a pattern that matches no file, naming it.
    """
    files: list[str] = []
    for pattern in patterns:
        try:
            kind, resolved = _records._classify(pattern)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        found = _expand_hdfs(resolved) if kind == "hdfs" else _expand_local(resolved)
        if not found:
            raise InputError(f"{pattern}: no data files (names starting with _ or . are skipped)")
        files.extend(found)
    return list(dict.fromkeys(files))


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _expand_local(path: str) -> list[str]:
    if _GLOB_CHARS.intersection(path):
        matches = sorted(_glob.glob(path))
        if not matches:
            raise InputError(f"{path}: no files match")
    elif os.path.exists(path):
        matches = [path]
    else:
        raise InputError(f"{path}: no such file or directory")
    files = []
    for match in matches:
        if os.path.isdir(match):
            for root, dirs, names in os.walk(match):
                dirs[:] = sorted(d for d in dirs if not _hidden(d))
                files.extend(os.path.join(root, n) for n in sorted(names) if not _hidden(n))
        else:
            files.append(match)
    return files


def _expand_hdfs(url: str) -> list[str]:
    from tfrecord_io import hdfs  # noqa: PLC0415 - optional, heavier dependency

    authority_end = url.find("/", url.find("://") + 3)
    if _GLOB_CHARS.intersection(url[authority_end:] if authority_end >= 0 else ""):
        matches = hdfs.glob(url)
        if not matches:
            raise InputError(f"{url}: no files match")
    else:
        matches = [url]
    files = []
    for match in matches:
        try:
            status = hdfs.stat(match)
        except FileNotFoundError:
            raise InputError(f"{match}: no such file or directory") from None
        if status.is_dir:
            files.extend(_walk_hdfs(hdfs, match))
        else:
            files.append(match)
    return files


def _walk_hdfs(hdfs: Any, url: str) -> Iterator[str]:
    for status in hdfs.ls(url):
        if _hidden(posixpath.basename(status.url.rstrip("/"))):
            continue
        if status.is_dir:
            yield from _walk_hdfs(hdfs, status.url)
        else:
            yield status.url
