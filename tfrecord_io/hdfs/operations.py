"""The operations of :mod:`tfrecord_io.hdfs`: open, stat, exists, ls, glob, makedirs, delete,
rename, and the :class:`FileStatus` they report."""

from __future__ import annotations

import fnmatch
import os
import posixpath
from dataclasses import dataclass
from typing import Any

from tfrecord_io.errors import HdfsError, HdfsFileExistsError, HdfsFileNotFoundError
from tfrecord_io.hdfs.clients import backend_for, call
from tfrecord_io.hdfs.files import HdfsReader, HdfsWriter
from tfrecord_io.hdfs.urls import GLOB_CHARS, Location, resolve

__all__ = [
    "FileStatus",
    "delete",
    "exists",
    "glob",
    "ls",
    "makedirs",
    "open",
    "rename",
    "stat",
]


@dataclass(frozen=True)
class FileStatus:
    """What HDFS knows about a file or directory.

    Attributes:
        url: the URL, in the form it was asked for (``ls`` children extend it).
        length: size in bytes (0 for directories).
        is_dir: whether it is a directory.
        modification_time: seconds since the epoch (float), like ``os.stat().st_mtime``.
        owner, group: HDFS owner and group.
        permission: mode bits, e.g. ``0o644``.
        replication: replication factor (0 for directories).
        block_size: HDFS block size in bytes (0 for directories).
    """

    url: str
    length: int
    is_dir: bool
    modification_time: float
    owner: str = ""
    group: str = ""
    permission: int = 0
    replication: int = 0
    block_size: int = 0


def _to_status(loc: Location, d: dict[str, Any], path: str | None = None) -> FileStatus:
    return FileStatus(
        url=loc.url(path),
        length=0 if d["is_dir"] else d["length"],
        is_dir=d["is_dir"],
        modification_time=d["mtime"],
        owner=d["owner"],
        group=d["group"],
        permission=d["permission"],
        replication=d["replication"],
        block_size=d["block_size"],
    )


def open(  # noqa: A001 - mirrors builtins.open
    url: str | os.PathLike[str], mode: str = "rb", *, offset: int = 0, read_ahead: int = 0
) -> HdfsReader | HdfsWriter:
    """Opens an HDFS file as a binary file object (a context manager).

    Args:
        url: ``hdfs://nn:port/path``, ``webhdfs://nn:httpport/path``, ``hdfs:///path`` or
            ``/path`` (see the module docs).
        mode: ``"rb"`` to read (seekable; ``read(n)``, ``readinto``), ``"wb"`` to create or
            overwrite (parents are created). Over WebHDFS the NameNode checks a create only
            when data reaches a DataNode, so a write error (e.g. permission) may be raised by
            ``close()`` rather than by ``open()``.
        offset: for ``"rb"``, the starting position.
        read_ahead: accepted for compatibility and ignored: hdfs-native already streams ahead
            of the reader, and a read-ahead thread of ours measured no faster.

    Raises:
        HdfsFileNotFoundError: reading a file that does not exist.
        HdfsPermissionError: access denied for :func:`current_user`.
        HdfsError: anything else, e.g. opening a directory or an unreachable NameNode.
    """
    del read_ahead  # see above
    loc = resolve(url)
    if mode == "rb":
        d = call(loc, "open", lambda b: b.status(loc.path))
        if d is None:
            raise HdfsFileNotFoundError(f"no such file: {loc.url()}")
        if d["is_dir"]:
            raise HdfsError(f"is a directory, not a file: {loc.url()}")
        if offset < 0:
            raise HdfsError(f"negative offset {offset} for {loc.url()}")
        return HdfsReader(loc, backend_for(loc, "open"), d["length"], offset)
    if mode == "wb":
        if offset:
            raise HdfsError("offset is only for reading")
        handle = call(loc, "create", lambda b: b.create(loc.path))
        return HdfsWriter(loc, handle)
    raise ValueError(f"unsupported mode {mode!r}: use 'rb' or 'wb'")


def stat(url: str | os.PathLike[str]) -> FileStatus:
    """The :class:`FileStatus` of a file or directory; HdfsFileNotFoundError if missing."""
    loc = resolve(url)
    d = call(loc, "stat", lambda b: b.status(loc.path))
    if d is None:
        raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")
    return _to_status(loc, d)


def exists(url: str | os.PathLike[str]) -> bool:
    """Whether a file or directory exists (errors other than "missing" still raise)."""
    loc = resolve(url)
    return call(loc, "stat", lambda b: b.status(loc.path)) is not None


def ls(url: str | os.PathLike[str]) -> list[FileStatus]:
    """The entries of a directory, sorted by name; for a file, its own status alone."""
    loc = resolve(url)
    d = call(loc, "list", lambda b: b.status(loc.path))
    if d is None:
        raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")
    if not d["is_dir"]:
        return [_to_status(loc, d)]
    entries = call(loc, "list", lambda b: b.list(loc.path))
    out = [_to_status(loc, st, posixpath.join(loc.path, name)) for name, st in entries]
    out.sort(key=lambda s: s.url)
    return out


def glob(pattern: str | os.PathLike[str]) -> list[str]:
    """URLs matching ``pattern``, sorted; ``*``, ``?`` and ``[...]`` (fnmatch, case-sensitive)
    may appear in any path component after the NameNode. A pattern without wildcards gives
    ``[url]`` if it exists, else ``[]``. A missing directory matches nothing."""
    loc = resolve(pattern)
    parts = [p for p in loc.path.split("/") if p]
    first = next((i for i, p in enumerate(parts) if GLOB_CHARS.search(p)), None)
    if first is None:
        return [loc.url()] if exists(loc.url()) else []
    base0 = "/" + "/".join(parts[:first])
    st0 = call(loc, "glob", lambda b: b.status(base0), loc.url(base0))
    if st0 is None or not st0["is_dir"]:
        return []
    bases = [base0]
    for i in range(first, len(parts)):
        comp = parts[i]
        last = i == len(parts) - 1
        nxt: list[str] = []
        for base in bases:
            if GLOB_CHARS.search(comp):
                try:
                    entries = call(loc, "glob", lambda b, base=base: b.list(base), loc.url(base))
                except HdfsFileNotFoundError:
                    continue  # deleted meanwhile
                for name, st in entries:
                    if fnmatch.fnmatchcase(name, comp) and (last or st["is_dir"]):
                        nxt.append(posixpath.join(base, name))
            else:
                candidate = posixpath.join(base, comp)
                st = call(loc, "glob", lambda b, c=candidate: b.status(c), loc.url(candidate))
                if st is not None and (last or st["is_dir"]):
                    nxt.append(candidate)
        bases = nxt
        if not bases:
            break
    return sorted(loc.url(p) for p in bases)


def makedirs(url: str | os.PathLike[str]) -> None:
    """Creates a directory and its missing parents; fine if it already exists as a directory."""
    loc = resolve(url)
    d = call(loc, "mkdir", lambda b: b.status(loc.path))
    if d is not None:
        if d["is_dir"]:
            return
        raise HdfsFileExistsError(f"a file exists where a directory should be: {loc.url()}")
    call(loc, "mkdir", lambda b: b.mkdirs(loc.path))


def delete(url: str | os.PathLike[str], recursive: bool = False) -> None:
    """Deletes a file or directory (a non-empty directory only with ``recursive``).

    Raises HdfsFileNotFoundError if it does not exist.
    """
    loc = resolve(url)
    if loc.path == "/":
        raise HdfsError(f"refusing to delete the root directory: {loc.url()}")
    if not call(loc, "delete", lambda b: b.delete(loc.path, recursive)):
        raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")


def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Renames (moves) ``src`` to ``dst`` on the same HDFS.

    ``dst`` must not exist, and its parent directory must; both raise HdfsError otherwise
    (``HdfsFileNotFoundError`` when ``src`` or ``dst``'s parent is missing).
    """
    s, d = resolve(src), resolve(dst)
    if (s.scheme, s.authority) != (d.scheme, d.authority):
        raise HdfsError(f"cannot rename across file systems: {s.url()} -> {d.url()}")
    if call(s, "rename", lambda b: b.status(s.path)) is None:
        raise HdfsFileNotFoundError(f"no such file or directory: {s.url()}")
    if call(d, "rename", lambda b: b.status(d.path)) is not None:
        raise HdfsFileExistsError(f"rename destination exists: {d.url()}")
    parent = posixpath.dirname(d.path)
    pst = call(d, "rename", lambda b: b.status(parent), d.url(parent))
    if pst is None or not pst["is_dir"]:
        raise HdfsFileNotFoundError(
            f"rename destination's parent is not a directory: {d.url(parent)}"
        )
    call(s, "rename", lambda b: b.rename(s.path, d.path), f"{s.url()} -> {d.url()}")
