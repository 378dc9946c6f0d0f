"""The ``hdfs-native`` client: the NameNode and DataNode protocols spoken natively (no JVM, no
libhdfs). The default for ``hdfs://`` URLs."""

from __future__ import annotations

import posixpath
import socket
from typing import Any

from tfrecord_io.fs.hdfs.client import CONNECT_TIMEOUT, ChunkStream, Client
from tfrecord_io.fs.hdfs.config import read_site
from tfrecord_io.fs.hdfs.urls import host_port

__all__ = ["NativeClient"]

# hdfs-native settings that make an unreachable NameNode fail fast (its defaults retry for
# minutes). A conf dir that sets them wins.
_FAST_FAIL = {
    "dfs.client.failover.max.attempts": "2",
    "dfs.client.failover.sleep.base.millis": "100",
    "dfs.client.failover.sleep.max.millis": "500",
}


def _status(st: Any) -> dict[str, Any]:
    return {
        "length": int(st.length),
        "is_dir": bool(st.isdir),
        "mtime": st.modification_time / 1000.0,
        "owner": st.owner,
        "group": st.group,
        "permission": int(st.permission),
        "replication": int(st.replication or 0),
        "block_size": int(st.blocksize or 0),
        "path": st.path,
    }


class NativeClient(Client):
    """hdfs-native's ``Client`` for one NameNode (RPC address or HA nameservice)."""

    name = "native"

    def __init__(self, authority: str, user: str) -> None:
        import hdfs_native  # noqa: PLC0415 - loaded with the first native client

        self._hn = hdfs_native
        host, port = host_port(authority)
        if port is not None:
            # hdfs-native's TCP connect has no timeout of its own (a silent host would take the
            # OS's ~2 minutes): probe the NameNode first, with one.
            try:
                socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
            except OSError as e:
                reason = e.strerror or str(e) or type(e).__name__
                raise ConnectionError(f"{reason} (connect timeout {CONNECT_TIMEOUT:g} s)") from e
        # hdfs-native reads the same site files but takes their values as written: hand it
        # them with ``${var}`` substituted (an HA nameservice's addresses often use them).
        site = {**read_site("core-site.xml"), **read_site("hdfs-site.xml")}
        config = {key: value for key, value in site.items() if "${" not in value}
        for key, value in _FAST_FAIL.items():
            if key not in site:
                config[key] = value
        self.client = hdfs_native.Client(f"hdfs://{authority}", config)
        # hdfs-native picks the user ($HADOOP_USER_NAME, else the OS user) when it connects:
        # connect now, so this client is bound to the user it is cached under.
        self.client.get_file_info("/")

    def status(self, path: str) -> dict[str, Any] | None:
        try:
            return _status(self.client.get_file_info(path))
        except FileNotFoundError:
            return None

    def list(self, path: str) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for st in self.client.list_status(path, False):
            out.append((posixpath.basename(st.path.rstrip("/")), _status(st)))
        return out

    def reader(self, path: str) -> Any:
        return self.client.read(path)

    def open_stream(self, handle: Any, offset: int, length: int) -> ChunkStream:
        return ChunkStream(iter(handle.read_range_stream(offset, length)))

    def create(self, path: str) -> Any:
        return self.client.create(path, self._hn.WriteOptions(overwrite=True))

    def mkdirs(self, path: str) -> None:
        self.client.mkdirs(path, 0o755, True)

    def delete(self, path: str, recursive: bool) -> bool:
        return bool(self.client.delete(path, recursive))

    def rename(self, src: str, dst: str) -> None:
        self.client.rename(src, dst, False)

    def replace(self, src: str, dst: str) -> None:
        self.client.rename(src, dst, True)  # overwrite
