"""Input expansion, Hadoop style: from the paths a user gives to the data files to read.

This is the one definition used by every reader (``tfrecord_io.tf``, the CLI, MNIST):

* A **file** is taken as given, whatever its name (also ``_special.tfrecord``).
* A **directory** gives every file below it, recursively. Names starting with ``_`` or ``.``
  are skipped at every level, as Hadoop's ``FileInputFormat`` does: ``_SUCCESS``,
  ``_temporary/``, the ``_NAME.tfindex`` split indexes, ``.NAME.crc`` checksums; so are files
  that ``hadoop fs -put`` is still copying (``NAME._COPYING_``), as Spark's file index has it
  (:func:`~tfrecord_io.fs.operations.is_hidden`).
* A **glob** (``*``, ``?``, ``[...]`` in any component) gives its matches, directories
  expanded as above; a wildcard does not match names starting with ``_`` or ``.`` unless the
  pattern's component starts with one too (``_*.tfindex`` matches indexes).
* **Order**: the files of all inputs together, sorted by path/URL (code-point order of the
  whole string), each once. A local file named several ways (``d//x``, ``d/../d/x``, relative
  and absolute, a symbolic link and its target) is one file, listed under its plainest
  spelling (no ``//``, ``.`` or ``..``), the first of those in that order; so is an HDFS file
  named with and without its default NameNode (``hdfs:///d/x``, ``hdfs://nn:8020/d/x``),
  listed under the first spelling in that order. Other URLs are compared as given. Every process
  expanding the same inputs, in whatever order they are given, gets the same list, which
  sharding relies on.
* **Symbolic links** (local) are followed: a link to a file is a file, a link to a directory is
  walked (a link back to a directory being walked is skipped with a warning); a dangling link
  inside a directory raises ``FileNotFoundError`` naming it.
* **Regular files only** in directories and glob matches: a FIFO, socket or device found there
  is damaged input and raises :class:`~tfrecord_io.errors.SpecialFileError` naming it; it is
  never opened (reading it could block forever). One named on its own is taken as given, like
  any file (``/dev/stdin``, a shell's ``<(...)``).
* **Errors**: a missing input raises :class:`~tfrecord_io.errors.InputNotFoundError` ("PATH: no
  such file or directory"; on HDFS the ``HdfsFileNotFoundError`` naming the URL), a glob that
  matches nothing raises ``InputNotFoundError`` too: both are ``FileNotFoundError``. A
  directory holding no data files logs a warning (or raises, with ``allow_empty=False``).

Local inputs come back as paths (``file:`` URLs turned into paths), others as URLs in the form
given.
"""

from __future__ import annotations

import logging
import os
import posixpath
from collections.abc import Iterable
from typing import Any

from tfrecord_io.errors import InputNotFoundError, SpecialFileError, TFRecordError
from tfrecord_io.fs.backend import FileInfo
from tfrecord_io.fs.operations import glob, is_hidden, walk_directory
from tfrecord_io.fs.registry import filesystem
from tfrecord_io.fs.urls import has_magic

__all__ = ["expand", "Paths", "PathLike"]

log = logging.getLogger(__name__)

#: One input path or URL.
PathLike = str | bytes | os.PathLike[Any]
#: One input or several.
Paths = PathLike | Iterable[PathLike]


def _as_list(paths: Paths) -> list[str]:
    items: Iterable[Any] = [paths] if isinstance(paths, (str, bytes, os.PathLike)) else paths
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


def _files_below(directory: str) -> list[FileInfo]:
    """The files under *directory* (known to be one), hidden names skipped."""
    files: list[FileInfo] = []
    for _, dirs, names in walk_directory(directory, detail=True):
        dirs[:] = [d for d in dirs if not is_hidden(posixpath.basename(d.url.rstrip("/")))]
        files.extend(f for f in names if not is_hidden(posixpath.basename(f.url)))
    return files


def _regular(found: list[FileInfo], given: str) -> list[FileInfo]:
    """*found*, listed from *given*, unless it holds a FIFO, socket or device."""
    for info in found:
        if info.special:
            raise SpecialFileError(
                f"{info.url}: a {info.special}, not a regular file, in the input {given}: it is "
                "not read (remove it, or name the data files)"
            )
    return found


def _expand_one(given: str, allow_empty: bool) -> list[FileInfo]:
    fs, target = filesystem(given)
    if fs.can_list and has_magic(target):
        matches = glob(target, detail=True, skip_hidden=True)
        if not matches:
            raise InputNotFoundError(
                f"{given}: no file matches this pattern (no files match once names starting "
                "with _ or . are skipped)"
            )
        found: list[FileInfo] = []
        for m in matches:
            found.extend(_files_below(m.url) if m.is_dir else [m])
        _regular(found, given)
        if not found and not allow_empty:
            raise InputNotFoundError(
                f"{given} holds no data files (names starting with _ or . are skipped)"
            )
        return found
    try:
        info = fs.stat(target)
    except FileNotFoundError as e:
        if isinstance(e, TFRecordError):
            raise  # HDFS, HTTP: already names the URL
        raise InputNotFoundError(f"{given}: no such file or directory") from None
    if not info.is_dir:
        return [info]
    found = _regular(_files_below(target), given)
    if not found:
        message = f"{given} holds no data files (names starting with _ or . are skipped)"
        if not allow_empty:
            raise InputNotFoundError(message)
        log.warning("%s", message)
    return found


def expand(paths: Paths, *, detail: bool = False, allow_empty: bool = True) -> list[Any]:
    """The data files named by *paths* (one path/URL or several), as the module docs say:
    sorted, without duplicates, hidden names skipped inside directories and globs.

    Args:
        paths: files, directories and globs; local paths, ``file:``, ``hdfs://``,
            ``webhdfs://``, ``s3://`` or ``http(s)://`` URLs (the last only as files).
        detail: give :class:`~tfrecord_io.fs.FileInfo` (with sizes) rather than strings.
        allow_empty: whether a directory, or a glob's directories, holding no data files is
            fine (a warning is logged) or an :class:`~tfrecord_io.errors.InputNotFoundError`.

    Raises:
        InputNotFoundError: a missing local input or a glob matching nothing (both name it).
        SpecialFileError: a FIFO, socket or device in an input directory or among a glob's
            matches (named).
        HdfsFileNotFoundError: a missing HDFS input (also a ``FileNotFoundError``).
        ObjectStoreFileNotFoundError: a missing ``s3://`` input (also a ``FileNotFoundError``);
            a bucket that does not exist raises :class:`~tfrecord_io.errors.BucketNotFoundError`.
        UnsupportedURLError: a URL scheme no file system serves (also a ``ValueError``).
        ValueError: an empty path or no paths at all.
    """
    found: dict[str, FileInfo] = {}  # by the file's identity
    for given in _as_list(paths):
        for info in _expand_one(given, allow_empty):
            key = _identity(info.url)
            kept = found.get(key)
            # the same spelling whatever the order: the plainest, then the first in order
            if kept is None or _plainness(info.url) < _plainness(kept.url):
                found[key] = info
    ordered = sorted(found.values(), key=lambda info: info.url)
    return ordered if detail else [info.url for info in ordered]


def _identity(url: str) -> str:
    """What makes two inputs the same file: its file system's real path. Locally ``d//x``,
    ``d/../d/x``, a relative and an absolute spelling, a symbolic link and its target are one
    file; on HDFS ``hdfs:///d/x`` and ``hdfs://nn:8020/d/x`` (the default NameNode's) are."""
    fs, target = filesystem(url)
    return fs.realpath(target)


def _plainness(url: str) -> tuple[bool, str]:
    """Orders the spellings of one file: a normalized path (no ``//``, ``.`` or ``..``) first."""
    return ("://" not in url and os.path.normpath(url) != url, url)
