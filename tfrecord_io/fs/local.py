"""Local files (plain paths and ``file:`` URLs), through :mod:`os`. Symbolic links are followed:
a link to a file is that file, a link to a directory that directory. Entries that are neither
regular files nor directories (FIFOs, sockets, devices) are reported with
:attr:`FileInfo.special <tfrecord_io.fs.FileInfo>` saying what they are, never as plain files."""

from __future__ import annotations

import builtins
import errno
import os
import shutil
import stat as _stat
from typing import Any, BinaryIO

from tfrecord_io.fs.backend import FileInfo, FileSystem

__all__ = ["LocalFileSystem"]


_SPECIAL = ((_stat.S_ISFIFO, "FIFO"), (_stat.S_ISSOCK, "socket"),
            (_stat.S_ISCHR, "character device"), (_stat.S_ISBLK, "block device"))


def _special(mode: int) -> str:
    """What a non-regular, non-directory entry is; "" for regular files and directories."""
    if _stat.S_ISREG(mode) or _stat.S_ISDIR(mode):
        return ""
    return next((name for test, name in _SPECIAL if test(mode)), "special file")


def _info(path: str, st: os.stat_result) -> FileInfo:
    is_dir = _stat.S_ISDIR(st.st_mode)
    special = _special(st.st_mode)
    size = 0 if is_dir or special else st.st_size
    return FileInfo(path, size, is_dir, st.st_mtime, special)


class LocalFileSystem(FileSystem):
    """The local file system."""

    protocols = ("file",)

    def open(self, target: str, mode: str, **options: Any) -> BinaryIO:
        return builtins.open(target, mode, **options)  # type: ignore[no-any-return]

    def stat(self, target: str) -> FileInfo:
        try:
            return _info(target, os.stat(target))
        except NotADirectoryError:
            # "f/x" or "f/" under a file f: nothing is there, as on every other file system.
            raise FileNotFoundError(
                errno.ENOENT, "No such file or directory (a file is in its path)", target
            ) from None

    def ls(self, target: str) -> list[FileInfo]:
        """The entries of a directory.

        Raises:
            FileNotFoundError: the directory is missing, or an entry is a symbolic link whose
                target does not exist (named in the message: a data directory with a dangling
                link is broken, and skipping it silently could lose data).
        """
        out = []
        with os.scandir(target or ".") as entries:
            for entry in entries:
                try:
                    st = entry.stat()  # follows symbolic links
                except FileNotFoundError:
                    if not entry.is_symlink():
                        continue  # deleted while being listed
                    raise FileNotFoundError(
                        f"{entry.path}: dangling symbolic link (its target "
                        f"{os.readlink(entry.path)!r} does not exist)"
                    ) from None
                out.append(_info(entry.path, st))
        return out

    def atomic_write_target(self, target: str) -> str | None:
        """The file a symbolic link points to, so that the link stays; None (written in place)
        for a device, a FIFO or a socket (``/dev/null``), which a rename would replace by a
        file, and for a directory (which ``open`` then refuses)."""
        real = os.path.realpath(target)
        if os.path.lexists(real) and not os.path.isfile(real):
            return None
        return real

    def makedirs(self, target: str) -> None:
        os.makedirs(target, exist_ok=True)

    def delete(self, target: str, recursive: bool) -> None:
        # "link/" is the link too: removed, never what it points to.
        target = target.rstrip("/") or target
        if os.path.islink(target) or not os.path.isdir(target):
            os.remove(target)  # FileNotFoundError if missing
        elif recursive:
            shutil.rmtree(target)
        else:
            os.rmdir(target)

    def rename(self, src: str, dst: str) -> None:
        if not os.path.lexists(src):
            raise FileNotFoundError(f"no such file or directory: {src}")
        if os.path.lexists(dst):
            raise FileExistsError(f"rename destination exists: {dst}")
        os.rename(src, dst)

    def replace(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def realpath(self, target: str) -> str:
        return os.path.realpath(target or ".")
