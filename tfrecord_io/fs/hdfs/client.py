"""What an HDFS client must do for the ``hdfs://`` backend of :mod:`tfrecord_io.fs`: the
:class:`Client` interface that the hdfs-native and WebHDFS clients implement, and the
:class:`ChunkStream` of bytes they return."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["CHUNK", "CONNECT_TIMEOUT", "READ_TIMEOUT", "Client", "ChunkStream"]

#: Seconds to connect to a NameNode (and WebHDFS DataNodes).
CONNECT_TIMEOUT = 5.0
#: Seconds to wait for a WebHDFS response.
READ_TIMEOUT = 120.0
#: WebHDFS streaming chunk (measured best; larger chunks were slower).
CHUNK = 64 * 1024


class ChunkStream:
    """An iterator of byte chunks from an offset, with close()."""

    def __init__(self, it: Iterator[bytes], close: Callable[[], None] = lambda: None) -> None:
        self._it = it
        self._close = close

    def __iter__(self) -> ChunkStream:
        return self

    def __next__(self) -> bytes:
        return next(self._it)

    def close(self) -> None:
        try:
            self._close()
        except Exception:  # noqa: BLE001 - closing a broken stream must not raise
            pass


class Client:
    """One client for one (NameNode, user).

    Statuses are dicts with the keys ``length``, ``is_dir``, ``mtime`` (seconds), ``owner``,
    ``group``, ``permission``, ``replication`` and ``block_size``. Methods raise the client's
    own exceptions; :mod:`tfrecord_io.fs.hdfs.translation` turns them into ours.
    """

    name = "?"

    def status(self, path: str) -> dict[str, Any] | None:
        """Raw status, or None if missing."""
        raise NotImplementedError

    def list(self, path: str) -> list[tuple[str, dict[str, Any]]]:
        """``(name, status)`` of each entry of a directory."""
        raise NotImplementedError

    def reader(self, path: str) -> Any:
        """A handle for :meth:`open_stream` (block locations are fetched once per handle)."""
        return path

    def open_stream(self, handle: Any, offset: int, length: int) -> ChunkStream:
        """The bytes ``[offset, offset + length)`` of a file, as a stream of chunks."""
        raise NotImplementedError

    def create(self, path: str) -> Any:
        """A handle with ``write(bytes)`` and ``close()`` creating or overwriting a file."""
        raise NotImplementedError

    def mkdirs(self, path: str) -> None:
        raise NotImplementedError

    def delete(self, path: str, recursive: bool) -> bool:
        """Whether something was deleted."""
        raise NotImplementedError

    def rename(self, src: str, dst: str) -> None:
        raise NotImplementedError

    def replace(self, src: str, dst: str) -> None:
        """Renames *src* over the file *dst* in one NameNode call (a rename with HDFS's
        ``OVERWRITE`` option): readers find the old file or the new one, never none."""
        raise NotImplementedError
