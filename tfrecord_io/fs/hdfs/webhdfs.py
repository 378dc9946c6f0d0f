"""The WebHDFS client (REST over HTTP, through the ``hdfs`` package): ``webhdfs://`` URLs, and
``hdfs://`` ones when ``TFRECORD_IO_HDFS_CLIENT=webhdfs``."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Any

from tfrecord_io.fs.hdfs.client import CHUNK, CONNECT_TIMEOUT, READ_TIMEOUT, ChunkStream, Client

__all__ = ["WebHdfsClient"]

# Writes (of about a mebibyte each: HdfsWriter gathers small ones) queued for the PUT at most.
_QUEUED = 8


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
        """*http_authority*: ``host:port``, or several joined by ``;`` (an HA nameservice's
        NameNodes, tried in turn while one is down or standby)."""
        import hdfs as hdfs_pkg  # noqa: PLC0415 - loaded with the first WebHDFS client

        self._pkg = hdfs_pkg
        urls = ";".join(f"http://{a}" for a in http_authority.split(";") if a)
        self.client = hdfs_pkg.InsecureClient(
            urls, user=user, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT)
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
        # The NameNode's CREATE answers with the DataNode to stream to; the bytes then go in
        # one chunked PUT, fed through a bounded queue (the hdfs package's own streaming writer
        # queues without bound: a file written faster than the network takes it, or after the
        # DataNode refused it, would be held in memory whole until close).
        create = self.client._create  # noqa: SLF001 - the hdfs package's raw WebHDFS call
        location = create(path, overwrite=True).headers["location"]
        return _WriteHandle(self, location)

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


def _response_error(pkg: Any, response: Any) -> Exception:
    """The ``hdfs`` package's HdfsError for a failed WebHDFS response (its Java exception class
    in ``exception``, as the package's own calls raise it)."""
    try:
        remote = response.json()["RemoteException"]
        return pkg.HdfsError(str(remote["message"]), exception=remote.get("exception"))
    except (ValueError, KeyError, TypeError):
        return pkg.HdfsError(f"HTTP {response.status_code}: {response.text[:200]}")


class _WriteHandle:
    """One file's bytes streamed to its DataNode in a chunked PUT, on a thread of its own, fed
    through a queue of at most :data:`_QUEUED` writes: a writer faster than the network waits,
    and a PUT that failed (DataNode gone, access denied) fails the next write rather than
    only the close."""

    def __init__(self, client: WebHdfsClient, location: str) -> None:
        self._client = client
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=_QUEUED)
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._put, args=(location,), name="webhdfs-write", daemon=True
        )
        self._thread.start()

    def _chunks(self) -> Iterator[bytes]:
        while True:
            chunk = self._queue.get()
            if chunk is None:
                return
            yield chunk

    def _put(self, location: str) -> None:
        try:
            res = self._client.client._request(  # noqa: SLF001 - with the client's session and timeouts
                method="PUT", url=location, data=self._chunks()
            )
            if not res:
                raise _response_error(self._client._pkg, res)  # noqa: SLF001 - our own client's
        except BaseException as e:  # noqa: BLE001 - handed to the writer's next call
            self._error = e
        finally:
            # Unblock a writer waiting for room, whatever ended the PUT.
            with contextlib.suppress(queue.Empty):
                while True:
                    self._queue.get_nowait()

    def _enqueue(self, item: bytes | None) -> None:
        while True:
            if self._error is not None:
                raise self._error
            if not self._thread.is_alive():
                if item is None:
                    return
                raise OSError("the WebHDFS upload ended before the file was complete")
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def write(self, data: Any) -> int:
        """Queues *data* for the PUT (waiting while the queue is full)."""
        chunk = bytes(data)
        if chunk:  # an empty chunk would end the chunked request
            self._enqueue(chunk)
        return len(chunk)

    def close(self) -> None:
        """Ends the PUT and waits for the DataNode's answer; raises its error."""
        self._enqueue(None)
        self._thread.join()
        if self._error is not None:
            raise self._error
