"""``hdfs://`` and ``webhdfs://`` URLs, served by :mod:`tfrecord_io.hdfs` (hdfs-native or
WebHDFS, no JVM)."""

from __future__ import annotations

from typing import Any, BinaryIO

from tfrecord_io import hdfs
from tfrecord_io.errors import HdfsFileExistsError
from tfrecord_io.fs.backend import FileInfo, FileSystem

__all__ = ["HdfsFileSystem"]


def _info(st: hdfs.FileStatus) -> FileInfo:
    return FileInfo(st.url, st.length, st.is_dir, st.modification_time)


class HdfsFileSystem(FileSystem):
    """HDFS through :mod:`tfrecord_io.hdfs`; its errors are the ``HdfsError`` family."""

    protocols = ("hdfs", "webhdfs")

    def open(self, target: str, mode: str, **options: Any) -> BinaryIO:
        return hdfs.open(target, mode, **options)  # type: ignore[return-value]

    def stat(self, target: str) -> FileInfo:
        return _info(hdfs.stat(target))

    def ls(self, target: str) -> list[FileInfo]:
        return [_info(st) for st in hdfs.ls(target)]

    def makedirs(self, target: str) -> None:
        hdfs.makedirs(target)

    def delete(self, target: str, recursive: bool) -> None:
        hdfs.delete(target, recursive=recursive)

    def rename(self, src: str, dst: str) -> None:
        hdfs.rename(src, dst)

    def replace(self, src: str, dst: str) -> None:
        """HDFS renames refuse an existing destination: a file there is deleted first, so
        readers may find nothing at *dst* for a moment (never a partial file)."""
        try:
            if hdfs.stat(dst).is_dir:
                raise HdfsFileExistsError(f"cannot replace the directory {dst} by {src}")
            hdfs.delete(dst)
        except FileNotFoundError:
            pass
        hdfs.rename(src, dst)
