"""Input files of the TensorFlow readers and the shard planner, and the location access they use.

:func:`list_files` expands paths, globs and directories, local or ``hdfs://``/``webhdfs://``,
into the data files to read (the rules are in :mod:`tfrecord_io.tf`'s docs). This module is
the one place where :mod:`tfrecord_io.tf` and :mod:`tfrecord_io.sharding` touch locations
(:func:`is_remote`, :func:`local_name`, :func:`open_location`); the location layer
(``tfrecord_io.fs``) replaces its body. No TensorFlow here.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import logging
import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Union

from tfrecord_io import records as _records
from tfrecord_io.errors import InputNotFoundError

__all__ = [
    "PathLike",
    "Paths",
    "FileInfo",
    "list_files",
    "list_file_infos",
    "is_remote",
    "local_name",
    "open_location",
]

log = logging.getLogger(__name__)

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class FileInfo:
    """A data file found by the listing, and its size in bytes."""

    path: str
    size: int


def is_remote(path: str) -> bool:
    """Whether *path* is an ``hdfs://`` or ``webhdfs://`` URL (else local or ``file:``)."""
    return _records._classify(path)[0] == "hdfs"


def local_name(path: str) -> str:
    """*path* as TensorFlow names it: a ``file:`` URL as a plain path, other URLs unchanged."""
    return _records._classify(path)[1]


def open_location(path: str, stack: contextlib.ExitStack) -> BinaryIO:
    """A binary stream of the file at *path* (local or HDFS), closed with *stack*."""
    stream, _, _ = _records._open_location(path, "rb", stack)
    return stream


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _as_list(paths: Paths) -> list[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        items: Iterable[Any] = [paths]
    else:
        items = paths
    out = []
    for p in items:
        name = os.fspath(p)
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        if not name:
            raise ValueError("an input path is empty")
        out.append(name)
    if not out:
        raise ValueError("no input paths given")
    return out


def _local_walk(root: str) -> Iterator[FileInfo]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
        for name in filenames:
            if not _hidden(name):
                path = os.path.join(dirpath, name)
                yield FileInfo(path, os.path.getsize(path))


def _list_local(given: str, path: str) -> list[FileInfo]:
    if _GLOB_CHARS.search(path):
        matches = [m for m in _glob.glob(path) if not _hidden(os.path.basename(m))]
        if not matches:
            raise InputNotFoundError(f"no file matches {given!r}")
        out: list[FileInfo] = []
        for m in matches:
            if os.path.isdir(m):
                out.extend(_local_walk(m))
            else:
                out.append(FileInfo(m, os.path.getsize(m)))
        return out
    if os.path.isdir(path):
        found = list(_local_walk(path))
        if not found:
            log.warning("%s holds no data files (names starting with _ or . are skipped)", given)
        return found
    try:
        return [FileInfo(path, os.path.getsize(path))]
    except FileNotFoundError:
        raise InputNotFoundError(f"no such file or directory: {given!r}") from None


def _hdfs_walk(url: str) -> Iterator[FileInfo]:
    from tfrecord_io import hdfs

    for st in hdfs.ls(url):
        if _hidden(posixpath.basename(st.url.rstrip("/"))):
            continue
        if st.is_dir:
            yield from _hdfs_walk(st.url)
        else:
            yield FileInfo(st.url, st.length)


def _list_hdfs(url: str) -> list[FileInfo]:
    from tfrecord_io import hdfs

    if _GLOB_CHARS.search(url.partition("://")[2].partition("/")[2]):
        matches = [m for m in hdfs.glob(url) if not _hidden(posixpath.basename(m))]
        if not matches:
            raise InputNotFoundError(f"no file matches {url!r}")
        # One listing per parent directory rather than one stat per match.
        statuses: dict[str, Any] = {}
        for parent in sorted({posixpath.dirname(m) for m in matches}):
            for st in hdfs.ls(parent):
                statuses[st.url] = st
        out: list[FileInfo] = []
        for m in matches:
            st = statuses.get(m) or hdfs.stat(m)
            if st.is_dir:
                out.extend(_hdfs_walk(m))
            else:
                out.append(FileInfo(m, st.length))
        return out
    st = hdfs.stat(url)  # HdfsFileNotFoundError if missing
    if st.is_dir:
        found = list(_hdfs_walk(url))
        if not found:
            log.warning("%s holds no data files (names starting with _ or . are skipped)", url)
        return found
    return [FileInfo(url, st.length)]


def list_file_infos(paths: Paths) -> list[FileInfo]:
    """Like :func:`list_files`, with the size of each file."""
    files: dict[str, FileInfo] = {}
    for given in _as_list(paths):
        kind, resolved = _records._classify(given)
        found = _list_local(given, resolved) if kind == "local" else _list_hdfs(resolved)
        for f in found:
            files.setdefault(f.path, f)
    return [files[p] for p in sorted(files)]


def list_files(paths: Paths) -> list[str]:
    """The data files named by *paths*, sorted and without duplicates (see the module docs).

    Raises:
        InputNotFoundError: a local path does not exist, or a glob matches nothing.
        HdfsError: an HDFS path does not exist (``HdfsFileNotFoundError``) or cannot be listed.
        ValueError: an empty path, or a URL scheme other than file, hdfs and webhdfs.
    """
    return [f.path for f in list_file_infos(paths)]
