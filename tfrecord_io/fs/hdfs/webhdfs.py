"""The WebHDFS client (REST over HTTP, through the ``hdfs`` package): ``webhdfs://`` URLs, and
``hdfs://`` ones when ``TFRECORD_IO_HDFS_CLIENT=webhdfs``."""

from __future__ import annotations

from typing import Any

from tfrecord_io.fs.hdfs.client import CHUNK, CONNECT_TIMEOUT, READ_TIMEOUT, ChunkStream, Client

__all__ = ["WebHdfsClient"]


def _status(st: dict[str, Any]) -> dict[str, Any]:
    return {
        "length": int(st.get("length", 0)),
        "is_dir": st.get("type") == "DIRECTORY",
        "mtime": int(st.get("modificationTime", 0)) / 1000.0,
        "owner": st.get("owner", ""),
        "group": st.get("group", ""),
        "permission": int(str(st.get("permission", "0")), 8),
        "replication": int(st.get("replication", 0)),
        "block_size": int(st.get("blockSize", 0)),
    }


class WebHdfsClient(Client):
    """The ``hdfs`` package's ``InsecureClient`` for one NameNode HTTP address."""

    name = "webhdfs"

    def __init__(self, http_authority: str, user: str) -> None:
        import hdfs as hdfs_pkg  # noqa: PLC0415 - loaded with the first WebHDFS client

        self._pkg = hdfs_pkg
        self.client = hdfs_pkg.InsecureClient(
            f"http://{http_authority}", user=user, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT)
        )

    def status(self, path: str) -> dict[str, Any] | None:
        try:
            return _status(self.client.status(path, strict=True))
        except self._pkg.HdfsError as e:
            if getattr(e, "exception", None) == "FileNotFoundException":
                return None
            raise

    def list(self, path: str) -> list[tuple[str, dict[str, Any]]]:
        return [(name, _status(st)) for name, st in self.client.list(path, status=True)]

    def open_stream(self, handle: Any, offset: int, length: int) -> ChunkStream:
        cm = self.client.read(handle, offset=offset, length=length, chunk_size=CHUNK)
        it = cm.__enter__()
        return ChunkStream(iter(it), lambda: cm.__exit__(None, None, None))

    def create(self, path: str) -> Any:
        # WebHDFS's NameNode is asked only when the data reaches a DataNode, at close: refuse a
        # directory now, as the NameNode's own create does over RPC.
        st = self.status(path)
        if st is not None and st["is_dir"]:
            raise FileExistsError(f"{path} already exists as a directory")
        cm = self.client.write(path, overwrite=True)
        writer = cm.__enter__()
        return _WriteHandle(cm, writer)

    def mkdirs(self, path: str) -> None:
        self.client.makedirs(path)

    def delete(self, path: str, recursive: bool) -> bool:
        return bool(self.client.delete(path, recursive=recursive))

    def rename(self, src: str, dst: str) -> None:
        self.client.rename(src, dst)

    def replace(self, src: str, dst: str) -> None:
        # WebHDFS's RENAME with renameoptions=OVERWRITE: the package's rename() takes no
        # options, its raw endpoint does; a failure raises the package's HdfsError.
        raw_rename = self.client._rename  # noqa: SLF001 - the hdfs package's raw WebHDFS call
        raw_rename(src, destination=self.client.resolve(dst), renameoptions="OVERWRITE")


class _WriteHandle:
    """Adapts the ``hdfs`` package's streaming writer (a context manager) to write/close."""

    def __init__(self, cm: Any, writer: Any) -> None:
        self._cm = cm
        self._writer = writer

    def write(self, data: Any) -> int:
        self._writer.write(bytes(data))
        return len(data)

    def close(self) -> None:
        self._cm.__exit__(None, None, None)
