"""The :class:`HdfsFileSystem` that :mod:`tfrecord_io.fs` serves ``hdfs://`` and ``webhdfs://``
URLs with: open, stat, ls, makedirs, delete, rename and replace on one HDFS, reporting
:class:`~tfrecord_io.fs.FileInfo`. Listing, globbing, walking and ``exists`` are
:mod:`tfrecord_io.fs.operations`', written once for every protocol."""

from __future__ import annotations

import posixpath
from typing import Any, BinaryIO

from tfrecord_io.errors import (
    HdfsError,
    HdfsFileExistsError,
    HdfsFileNotFoundError,
    HdfsIsADirectoryError,
    HdfsNotADirectoryError,
)
from tfrecord_io.fs.backend import FileInfo, FileSystem
from tfrecord_io.fs.hdfs.clients import call, client_for
from tfrecord_io.fs.hdfs.files import HdfsReader, HdfsWriter
from tfrecord_io.fs.hdfs.urls import Location, resolve

__all__ = ["HdfsFileSystem"]


def _info(loc: Location, d: dict[str, Any], path: str | None = None) -> FileInfo:
    """The :class:`FileInfo` of a client's raw status (see
    :class:`~tfrecord_io.fs.hdfs.client.Client`), its URL spelled from *loc*."""
    return FileInfo(loc.url(path), 0 if d["is_dir"] else d["length"], d["is_dir"], d["mtime"])


class HdfsFileSystem(FileSystem):
    """HDFS through hdfs-native or WebHDFS (no JVM); its errors are the ``HdfsError`` family of
    :mod:`tfrecord_io.errors`, naming the URL (and, when access is denied, the HDFS user).

    Targets are whole URLs: ``hdfs://namenode:port/path``, ``webhdfs://namenode:httpport/path``
    or ``hdfs:///path`` (the NameNode of ``fs.defaultFS``); anything else raises
    :class:`~tfrecord_io.errors.HdfsError`.
    """

    protocols = ("hdfs", "webhdfs")

    def open(
        self, target: str, mode: str, *, offset: int = 0, read_ahead: int = 0, **options: Any
    ) -> BinaryIO:
        """An :class:`~tfrecord_io.fs.hdfs.HdfsReader` (``"rb"``, seekable, starting at
        *offset*) or :class:`~tfrecord_io.fs.hdfs.HdfsWriter` (``"wb"``: creates or overwrites
        the file, and its missing parents).

        Over WebHDFS the NameNode checks a create only when data reaches a DataNode, so a
        write error (e.g. permission) may be raised by a later ``write()`` or by ``close()``
        rather than by ``open()``; at most a few mebibytes wait in memory for the DataNode.
        *read_ahead* is accepted for compatibility and ignored: once a stream is open
        (the first read, or :meth:`~tfrecord_io.fs.hdfs.HdfsReader.start`), hdfs-native
        fetches ahead of the reader in its own tasks.

        Raises:
            HdfsFileNotFoundError: reading a file that does not exist.
            HdfsPermissionError: access denied for the HDFS user.
            HdfsIsADirectoryError: *target* is a directory.
            HdfsNotADirectoryError: writing under a file (over WebHDFS, by ``close()``).
            HdfsError: anything else, e.g. an unreachable NameNode.
            TypeError: an option HDFS does not take.
        """
        del read_ahead  # see above
        if options:
            raise TypeError(f"unexpected options for an HDFS file: {', '.join(sorted(options))}")
        loc = resolve(target)
        if mode == "rb":
            d = call(loc, "open", lambda c: c.status(loc.path))
            if d is None:
                raise HdfsFileNotFoundError(f"no such file: {loc.url()}")
            if d["is_dir"]:
                raise HdfsIsADirectoryError(
                    f"{loc.url()} is a directory, not a file: open a file in it")
            if offset < 0:
                raise HdfsError(f"negative offset {offset} for {loc.url()}")
            return HdfsReader(loc, client_for(loc, "open"), d["length"], offset)
        if mode == "wb":
            if offset:
                raise HdfsError("offset is only for reading")
            try:
                handle = call(loc, "create", lambda c: c.create(loc.path))
            except HdfsFileExistsError:
                # The NameNode refuses to overwrite a directory (and a file another client is
                # writing) with the same exception: say which.
                d = call(loc, "create", lambda c: c.status(loc.path))
                if d is not None and d["is_dir"]:
                    raise HdfsIsADirectoryError(
                        f"cannot write {loc.url()}: it is a directory") from None
                raise
            return HdfsWriter(loc, handle)
        raise ValueError(f"unsupported mode {mode!r}: use 'rb' or 'wb'")

    def stat(self, target: str) -> FileInfo:
        """The :class:`FileInfo` of a file or directory; HdfsFileNotFoundError if missing."""
        loc = resolve(target)
        d = call(loc, "stat", lambda c: c.status(loc.path))
        if d is None:
            raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")
        return _info(loc, d)

    def ls(self, target: str) -> list[FileInfo]:
        """The entries of a directory, sorted by URL; for a file, its own info alone."""
        loc = resolve(target)
        d = call(loc, "list", lambda c: c.status(loc.path))
        if d is None:
            raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")
        if not d["is_dir"]:
            return [_info(loc, d)]
        entries = call(loc, "list", lambda c: c.list(loc.path))
        out = [_info(loc, st, posixpath.join(loc.path, name)) for name, st in entries]
        out.sort(key=lambda info: info.url)
        return out

    def realpath(self, target: str) -> str:
        """The URL with its NameNode spelled out and its path normalized: ``hdfs:///d/x``
        (``fs.defaultFS``'s NameNode), ``hdfs://nn:8020/d//x`` and ``hdfs://nn:8020/d/x`` are
        one file. HDFS's symbolic links are not followed (clients rarely enable them)."""
        loc = resolve(target)
        return f"{loc.scheme}://{loc.authority}{loc.path}"

    def makedirs(self, target: str) -> None:
        """Creates a directory and its missing parents; fine if it exists as a directory.

        Raises:
            HdfsFileExistsError: a file is in the way.
            HdfsNotADirectoryError: a file is in the way further up.
        """
        loc = resolve(target)
        d = call(loc, "mkdir", lambda c: c.status(loc.path))
        if d is not None:
            if d["is_dir"]:
                return
            raise HdfsFileExistsError(f"a file exists where a directory should be: {loc.url()}")
        call(loc, "mkdir", lambda c: c.mkdirs(loc.path))

    def delete(self, target: str, recursive: bool) -> None:
        """Deletes a file or directory (a non-empty directory only if *recursive*); never the
        root directory.

        Raises:
            HdfsFileNotFoundError: it does not exist.
        """
        loc = resolve(target)
        if loc.path == "/":
            raise HdfsError(f"refusing to delete the root directory: {loc.url()}")
        if not call(loc, "delete", lambda c: c.delete(loc.path, recursive)):
            raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")

    def rename(self, src: str, dst: str) -> None:
        """Renames (moves) *src* to *dst* on the same HDFS.

        Raises:
            HdfsFileNotFoundError: *src*, or *dst*'s parent directory, is missing.
            HdfsFileExistsError: *dst* exists.
            HdfsNotADirectoryError: *dst*'s parent is a file.
            HdfsError: *src* and *dst* are on different NameNodes or schemes.
        """
        s, d = _same_hdfs(src, dst)
        if call(s, "rename", lambda c: c.status(s.path)) is None:
            raise HdfsFileNotFoundError(f"no such file or directory: {s.url()}")
        if call(d, "rename", lambda c: c.status(d.path)) is not None:
            raise HdfsFileExistsError(f"rename destination exists: {d.url()}")
        parent = posixpath.dirname(d.path)
        pst = call(d, "rename", lambda c: c.status(parent), d.url(parent))
        if pst is None:
            raise HdfsFileNotFoundError(f"rename destination's parent is missing: {d.url(parent)}")
        if not pst["is_dir"]:
            raise HdfsNotADirectoryError(
                f"cannot rename {s.url()} to {d.url()}: {d.url(parent)} is a file, not a directory"
            )
        call(s, "rename", lambda c: c.rename(s.path, d.path), f"{s.url()} -> {d.url()}")

    def replace(self, src: str, dst: str) -> None:
        """Renames *src* over the file *dst* (or to *dst*, if there is none). One NameNode call
        (a rename with HDFS's ``OVERWRITE`` option, over hdfs-native and WebHDFS alike) replaces
        it, so readers find the old file or the new one, never none.

        Raises:
            HdfsFileExistsError: *dst* is a directory.
        """
        try:
            existing = self.stat(dst)
        except FileNotFoundError:
            self.rename(src, dst)
            return
        if existing.is_dir:
            raise HdfsFileExistsError(f"cannot replace the directory {dst} by {src}")
        s, d = _same_hdfs(src, dst)
        if s.path == d.path:
            return  # a file replaced by itself stays, as with os.replace
        call(s, "rename", lambda c: c.replace(s.path, d.path), f"{s.url()} -> {d.url()}")


def _same_hdfs(src: str, dst: str) -> tuple[Location, Location]:
    """*src* and *dst* resolved; HdfsError unless both are on one NameNode, by one scheme."""
    s, d = resolve(src), resolve(dst)
    if (s.scheme, s.authority) != (d.scheme, d.authority):
        raise HdfsError(f"cannot rename across file systems: {s.url()} -> {d.url()}")
    return s, d
