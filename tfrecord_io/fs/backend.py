"""What a file system must provide to :mod:`tfrecord_io.fs`: the :class:`FileSystem` base class
(one subclass per protocol) and the :class:`FileInfo` it reports; :class:`PositionedReader`, the
base of its readers (the seek arithmetic, :func:`seek_position`, they share); :data:`PROBE_SIZE`,
how much a remote reader fetches after a jump."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, BinaryIO

from tfrecord_io.errors import UnsupportedOperationError
from tfrecord_io.fs.urls import redact

__all__ = ["PROBE_SIZE", "FileInfo", "FileSystem", "PositionedReader", "seek_position"]

#: The fewest bytes a remote file's reader asks for after a jump: a read away from where it was
#: reading (a seek elsewhere), or a file's first read away from byte 0. Random access (an
#: index's record, a footer, a checkpoint's tensor) then costs one request of about this much,
#: not a stream to the end of the file; the reader streams on only once reading goes on from the
#: end of these bytes. 1 MiB costs about as much to transfer as a round trip to a store at
#: 100 MB/s per connection, and holds an index-guided read's neighbouring records.
PROBE_SIZE = 1 << 20


def seek_position(name: str, position: int, size: int | None, offset: int,
                  whence: int = io.SEEK_SET) -> int:
    """Where ``seek(offset, whence)`` goes from *position* in the file *name* of *size* bytes
    (None: unknown), for the backends' seekable readers.

    Raises:
        ValueError: an unknown *whence*, or a position before the start.
        io.UnsupportedOperation: ``SEEK_END`` in a file whose size is unknown.
    """
    if whence == io.SEEK_SET:
        target = offset
    elif whence == io.SEEK_CUR:
        target = position + offset
    elif whence == io.SEEK_END:
        if size is None:
            raise io.UnsupportedOperation(f"{name}: the server does not give its size")
        target = size + offset
    else:
        raise ValueError(f"invalid whence {whence}")
    if target < 0:
        raise ValueError(f"negative seek position {target} in {name}")
    return target


class PositionedReader(io.RawIOBase):
    """A raw, seekable reader of *name* (*size* bytes, None if unknown) that keeps its position
    itself: a seek only moves it (:meth:`seek`); subclasses read from it in ``readinto``."""

    def __init__(self, name: str, size: int | None) -> None:
        super().__init__()
        self.name = name
        self._size = size
        self._pos = 0

    @property
    def size(self) -> int | None:
        """The length in bytes (None if the file system does not say)."""
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = seek_position(self.name, self._pos, self._size, offset, whence)
        return self._pos


@dataclass(frozen=True)
class FileInfo:
    """What a file system knows about a file or directory.

    Attributes:
        url: the path or URL, in the form it was asked for (listings extend it).
        size: size in bytes (0 for directories, -1 if the system does not say, as HTTP may).
        is_dir: whether it is a directory.
        mtime: modification time, seconds since the epoch (0.0 if the file system does not say).
        special: for a local entry that is neither a regular file nor a directory, what it is
            (``"FIFO"``, ``"socket"``, ``"character device"``, ``"block device"``); ``""``
            otherwise. Such an entry is never data: reading it could block forever (a FIFO
            nobody writes) or never end (a device), so listings mark it and their users refuse
            it (:func:`~tfrecord_io.fs.expand`, the image converter) rather than open it.
    """

    url: str
    size: int
    is_dir: bool
    mtime: float = 0.0
    special: str = ""


class FileSystem:
    """One protocol's operations, on *targets*: the local path for ``file``, the whole URL for
    the others (see :func:`tfrecord_io.fs.split_url`).

    Subclasses implement what their system supports; the rest raise
    :class:`~tfrecord_io.errors.UnsupportedOperationError`. Errors are ``OSError``s: a missing
    target raises ``FileNotFoundError``, a denied one ``PermissionError``. Listing, globbing,
    walking and input expansion are written once on top of :meth:`stat` and :meth:`ls`.
    """

    #: The URL schemes served, e.g. ``("hdfs", "webhdfs")``.
    protocols: tuple[str, ...] = ()
    #: Whether :meth:`ls` works (globs and directories need it).
    can_list = True
    #: Whether a file opened with ``open(target, "wb")`` appears only when closed, whole, and
    #: leaves nothing when its ``with`` block raises (object stores): then
    #: :func:`~tfrecord_io.fs.atomic_write` writes in place, with no temporary sibling.
    atomic_writes = False
    #: Whether a file opened with ``open(target, "rb")`` fetches ahead in a background thread
    #: that its raw reader's ``start()`` starts before the first read (object stores:
    #: :class:`~tfrecord_io.fs.readahead.ReadAhead`): then opening the next file of a known
    #: order early lets its first bytes arrive while the caller works on the one before.
    reads_ahead = False

    def atomic_write_target(self, target: str) -> str | None:
        """The file :func:`~tfrecord_io.fs.atomic_write` writes a hidden sibling of and then
        replaces: *target* itself here. None to write *target* in place: when writes are
        atomic already (:attr:`atomic_writes`), or *target* is not a file to replace."""
        return None if self.atomic_writes else target

    def _unsupported(self, what: str, target: str) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"cannot {what} {redact(target)}: "
            f"{'/'.join(self.protocols) or type(self).__name__}:// "
            "does not support it"
        )

    def open(self, target: str, mode: str, **options: Any) -> BinaryIO:
        """A binary file object, ``mode`` "rb" or "wb"."""
        raise self._unsupported("open", target)

    def stat(self, target: str) -> FileInfo:
        """The :class:`FileInfo` of a file or directory (symbolic links followed)."""
        raise self._unsupported("stat", target)

    def ls(self, target: str) -> list[FileInfo]:
        """The entries of a directory, in any order."""
        raise self._unsupported("list", target)

    def makedirs(self, target: str) -> None:
        """Creates a directory and its parents; fine if it exists as a directory."""
        raise self._unsupported("create the directory", target)

    def delete(self, target: str, recursive: bool) -> None:
        """Deletes a file, or a directory (a non-empty one only if *recursive*)."""
        raise self._unsupported("delete", target)

    def rename(self, src: str, dst: str) -> None:
        """Moves *src* to *dst*, which must not exist (``FileExistsError`` otherwise)."""
        raise self._unsupported("rename", src)

    def replace(self, src: str, dst: str) -> None:
        """Moves *src* to *dst*, replacing a file at *dst*: atomically where the system can."""
        raise self._unsupported("rename", src)

    def realpath(self, target: str) -> str:
        """The target with symbolic links resolved (where the system has them)."""
        return target

    def environment(self) -> dict[str, str]:
        """The environment variables that give another process (a cluster's node on an
        executor) this file system's configuration as it stands in this process; empty when
        there is nothing to pass on."""
        return {}
