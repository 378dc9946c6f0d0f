"""HDFS from Python without a JVM: open, stat, list, glob, mkdir, delete, rename.

URLs:

* ``hdfs://namenode:port/path``: the NameNode RPC address, as Spark and Hadoop use. Served by
  ``hdfs-native`` (the NameNode and DataNode protocols, natively) unless
  ``TFRECORD_IO_HDFS_CLIENT=webhdfs``, which sends them over WebHDFS instead (the HTTP address
  then comes from ``dfs.namenode.http-address`` in ``$HADOOP_CONF_DIR/hdfs-site.xml``, else port
  9870).
* ``webhdfs://namenode:httpport/path``: WebHDFS (REST over HTTP), served by the ``hdfs`` package.
* ``hdfs:///path`` and bare ``/path``: no authority; the NameNode is ``fs.defaultFS`` from
  ``$HADOOP_CONF_DIR/core-site.xml`` (or ``$HADOOP_HOME/etc/hadoop``). ``hdfs://nameservice/path``
  (HA, no port) is resolved by hdfs-native from the same configuration.

The HDFS user is ``$HADOOP_USER_NAME`` if set, else the OS user (simple authentication, as
Hadoop's own clients do). One client is kept per (NameNode, user) and reused.

Every failure raises :class:`~tfrecord_io.errors.HdfsError` with the URL in the message: a
missing path raises :class:`HdfsFileNotFoundError` (also a ``FileNotFoundError``), a denied one
:class:`HdfsPermissionError` (also a ``PermissionError``, naming the user). An unreachable
NameNode fails within seconds, naming its address.

Example::

    from tfrecord_io import hdfs

    with hdfs.open("hdfs://127.0.0.1:8020/data/part-0.tfrecord") as f:
        header = f.read(12)
    for url in hdfs.glob("hdfs://127.0.0.1:8020/data/part-*.tfrecord"):
        print(hdfs.stat(url).length)
"""

from __future__ import annotations

import fnmatch
import io
import logging
import os
import posixpath
import pwd
import queue
import re
import socket
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Iterator

from tfrecord_io.errors import HdfsError

__all__ = [
    "FileStatus",
    "HdfsFileNotFoundError",
    "HdfsPermissionError",
    "HdfsFileExistsError",
    "HdfsReader",
    "HdfsWriter",
    "CLIENT_ENV",
    "open",
    "stat",
    "exists",
    "ls",
    "glob",
    "makedirs",
    "delete",
    "rename",
    "current_user",
    "default_fs",
    "clear_client_cache",
]

#: Environment variable choosing the client for ``hdfs://`` URLs: ``native`` (default) or
#: ``webhdfs``.
CLIENT_ENV = "TFRECORD_IO_HDFS_CLIENT"
#: The default client for hdfs:// URLs. hdfs-native streamed a 200 MB file at ~2x the rate of
#: WebHDFS on the mini cluster, and lists and small reads faster too (see bench/hdfs_clients.py).
DEFAULT_HDFS_CLIENT = "native"

_log = logging.getLogger(__name__)

_CONNECT_TIMEOUT = 5.0  # seconds to connect to a NameNode (and WebHDFS DataNodes)
_READ_TIMEOUT = 120.0  # seconds, WebHDFS response
# A read stream that breaks (a DataNode died, ...) is reopened at the same offset, up to this many
# times within this many seconds. WebHDFS needs the room: the NameNode keeps redirecting some
# reads to a dead DataNode until its heartbeats expire.
_READ_RETRIES = 10
_READ_RETRY_SECONDS = 30.0
_CHUNK = 64 * 1024  # WebHDFS streaming chunk (measured best; larger chunks were slower)
_WRITE_BUFFER = 1 << 20  # small writes are gathered up to this before going to the client
_GLOB_CHARS = re.compile(r"[*?\[]")
# hdfs-native settings that make an unreachable NameNode fail fast (its defaults retry for
# minutes). A conf dir that sets them wins.
_NATIVE_FAST_FAIL = {
    "dfs.client.failover.max.attempts": "2",
    "dfs.client.failover.sleep.base.millis": "100",
    "dfs.client.failover.sleep.max.millis": "500",
}


class HdfsFileNotFoundError(HdfsError, FileNotFoundError):
    """An HDFS path does not exist."""


class HdfsPermissionError(HdfsError, PermissionError):
    """HDFS denied access to a path for the current user."""


class HdfsFileExistsError(HdfsError, FileExistsError):
    """An HDFS path exists where it should not."""


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


# ----------------------------------------------------------------------------------------------
# user and configuration


def current_user() -> str:
    """The HDFS user: ``$HADOOP_USER_NAME``, else the OS user (as Hadoop clients do)."""
    name = os.environ.get("HADOOP_USER_NAME")
    if name:
        return name
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        import getpass

        return getpass.getuser()


def _conf_dir() -> str | None:
    d = os.environ.get("HADOOP_CONF_DIR")
    if d:
        return d
    home = os.environ.get("HADOOP_HOME")
    if home:
        return os.path.join(home, "etc", "hadoop")
    return None


_conf_cache: dict[str, tuple[float, dict[str, str]]] = {}
_conf_lock = threading.Lock()


def _read_site(name: str) -> dict[str, str]:
    """Properties of ``$HADOOP_CONF_DIR/name``; empty if there is no such file."""
    d = _conf_dir()
    if not d:
        return {}
    path = os.path.join(d, name)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return {}
    with _conf_lock:
        cached = _conf_cache.get(path)
        if cached and cached[0] == mtime:
            return cached[1]
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise HdfsError(f"cannot parse Hadoop configuration {path}: {e}") from e
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        key, value = prop.findtext("name"), prop.findtext("value")
        if key is not None and value is not None:
            props[key.strip()] = value.strip()
    with _conf_lock:
        _conf_cache[path] = (mtime, props)
    return props


def default_fs() -> str:
    """``fs.defaultFS`` of ``$HADOOP_CONF_DIR/core-site.xml``; HdfsError if there is none."""
    value = _read_site("core-site.xml").get("fs.defaultFS") or _read_site("core-site.xml").get(
        "fs.default.name"
    )
    if not value:
        where = _conf_dir()
        raise HdfsError(
            "the URL names no NameNode and there is no fs.defaultFS to use: "
            + (
                f"{where}/core-site.xml does not set it"
                if where
                else "set HADOOP_CONF_DIR to a directory with a core-site.xml"
            )
        )
    return value


# ----------------------------------------------------------------------------------------------
# URLs


@dataclass(frozen=True)
class _Loc:
    scheme: str  # "hdfs" or "webhdfs": the protocol named (hdfs may still go over WebHDFS)
    authority: str  # host:port, or an HA nameservice
    path: str  # absolute and normalised
    prefix: str  # what precedes the path in URLs given back: "", "hdfs://", "hdfs://nn:8020"

    def url(self, path: str | None = None) -> str:
        return self.prefix + (self.path if path is None else path)


def _normpath(path: str, url: str) -> str:
    if not path.startswith("/"):
        raise HdfsError(f"not an absolute HDFS path: {url!r}")
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def _split_authority(rest: str) -> tuple[str, str]:
    slash = rest.find("/")
    if slash < 0:
        return rest, "/"
    return rest[:slash], rest[slash:]


def _resolve(url: str | os.PathLike[str]) -> _Loc:
    url = os.fspath(url)
    if not isinstance(url, str) or not url:
        raise HdfsError(f"not an HDFS URL: {url!r}")
    if url.startswith("/"):
        fs = default_fs()
        scheme, sep, rest = fs.partition("://")
        if scheme not in ("hdfs", "webhdfs") or not sep:
            raise HdfsError(f"fs.defaultFS is {fs!r}, not an hdfs:// or webhdfs:// URL")
        authority, _ = _split_authority(rest)
        return _Loc(scheme, authority, _normpath(url, url), "")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("hdfs", "webhdfs"):
        raise HdfsError(
            f"unsupported URL {url!r}: expected hdfs://namenode:port/path, "
            "webhdfs://namenode:httpport/path, hdfs:///path or /path"
        )
    authority, path = _split_authority(rest)
    if authority:
        return _Loc(scheme, authority, _normpath(path, url), f"{scheme}://{authority}")
    fs = default_fs()
    fs_scheme, fs_sep, fs_rest = fs.partition("://")
    if fs_scheme != scheme:
        raise HdfsError(
            f"{url!r} has no NameNode and fs.defaultFS ({fs!r}) is not a {scheme}:// URL"
        )
    fs_authority, _ = _split_authority(fs_rest)
    if not fs_authority:
        raise HdfsError(f"fs.defaultFS {fs!r} names no NameNode")
    return _Loc(scheme, fs_authority, _normpath(path, url), f"{scheme}://")


def _host_port(authority: str) -> tuple[str, int | None]:
    if authority.startswith("["):  # [ipv6]:port
        host, _, port = authority[1:].partition("]")
        return host, int(port[1:]) if port.startswith(":") else None
    host, sep, port = authority.rpartition(":")
    if sep and port.isdigit():
        return host, int(port)
    return authority, None


def _webhdfs_address_for_rpc(authority: str) -> str:
    """The NameNode HTTP address for an RPC authority, from hdfs-site.xml (else port 9870)."""
    site = _read_site("hdfs-site.xml")
    host, _ = _host_port(authority)
    http = site.get("dfs.namenode.http-address")
    rpc = site.get("dfs.namenode.rpc-address")
    core_fs = _read_site("core-site.xml").get("fs.defaultFS", "")
    if http and (rpc == authority or core_fs.endswith("://" + authority) or rpc is None):
        http_host, http_port = _host_port(http)
        if http_host in ("0.0.0.0", ""):
            http_host = host
        return f"{http_host}:{http_port}"
    return f"{host}:9870"


# ----------------------------------------------------------------------------------------------
# errors


def _first_line(e: BaseException) -> str:
    """A one-line reason from a client exception (no Java stack trace, no urllib3 noise)."""
    text = str(e.args[0]) if getattr(e, "args", None) else str(e)
    m = re.match(r'RPCError\("([^"]+)", "(.*)', text, re.S)
    if m:  # hdfs-native: RPCError("java.class", "message\n\tat ...")
        msg = m.group(2).split("\\n")[0].split("\n")[0].replace('\\"', '"')
        return f"{m.group(1).rsplit('.', 1)[-1]}: {msg}"
    m = re.search(r"\[Errno -?\d+\] [^'\")]+", text)
    if m:  # requests/urllib3: keep the OS reason only
        return m.group(0).strip()
    m = re.search(r"connect timeout=([\d.]+)", text)
    if m:
        return f"connect timed out after {float(m.group(1)):g} s"
    text = text.strip()
    return text.splitlines()[0] if text else type(e).__name__


def _exception_class(e: BaseException) -> str:
    """The Java exception class behind a client error, if it says."""
    cls = getattr(e, "exception", None)  # hdfs (WebHDFS) package
    if cls:
        return str(cls)
    m = re.match(r'RPCError\("([^"]+)"', str(e.args[0]) if e.args else "")
    return m.group(1).rsplit(".", 1)[-1] if m else ""


def _is_connect_error(e: BaseException) -> bool:
    try:
        import requests

        if isinstance(e, requests.exceptions.ConnectionError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(e, (ConnectionError, TimeoutError)) or (
        isinstance(e, OSError)
        and not isinstance(e, (FileNotFoundError, PermissionError, FileExistsError))
        and any(s in str(e) for s in ("Connection refused", "timed out", "unreachable", "os error"))
    )


def _translate(e: BaseException, url: str, op: str, loc: _Loc | None = None) -> HdfsError:
    if isinstance(e, HdfsError):  # ours (the hdfs package's HdfsError is another class)
        return e
    cls = _exception_class(e)
    detail = _first_line(e)
    if isinstance(e, FileNotFoundError) or cls == "FileNotFoundException":
        return HdfsFileNotFoundError(f"no such file or directory: {url} ({detail})")
    if isinstance(e, PermissionError) or cls == "AccessControlException":
        return HdfsPermissionError(
            f"permission denied for HDFS user {current_user()!r} on {url} ({op}): {detail}"
        )
    if isinstance(e, FileExistsError) or cls in (
        "FileAlreadyExistsException",
        "AlreadyBeingCreatedException",
    ):
        return HdfsFileExistsError(f"already exists: {url} ({detail})")
    if cls == "PathIsNotEmptyDirectoryException":
        return HdfsError(f"directory not empty: {url} (use recursive=True)")
    if _is_connect_error(e) and loc is not None:
        return HdfsError(f"cannot reach HDFS at {loc.authority} to {op} {url}: {detail}")
    return HdfsError(f"HDFS {op} failed for {url}: {detail}")


# ----------------------------------------------------------------------------------------------
# backends


class _Backend:
    """One client for one (NameNode, user)."""

    name = "?"

    def status(self, path: str) -> dict[str, Any] | None:
        """Raw status, or None if missing."""
        raise NotImplementedError

    def list(self, path: str) -> list[tuple[str, dict[str, Any]]]:
        raise NotImplementedError

    def reader(self, path: str) -> Any:
        """A handle for :meth:`open_stream` (block locations are fetched once per handle)."""
        return path

    def open_stream(self, handle: Any, offset: int, length: int) -> _Stream:
        raise NotImplementedError

    def create(self, path: str) -> Any:
        raise NotImplementedError

    def mkdirs(self, path: str) -> None:
        raise NotImplementedError

    def delete(self, path: str, recursive: bool) -> bool:
        raise NotImplementedError

    def rename(self, src: str, dst: str) -> None:
        raise NotImplementedError


class _Stream:
    """An iterator of byte chunks from an offset, with close()."""

    def __init__(self, it: Iterator[bytes], close: Callable[[], None] = lambda: None) -> None:
        self._it = it
        self._close = close

    def __next__(self) -> bytes:
        return next(self._it)

    def close(self) -> None:
        try:
            self._close()
        except Exception:
            pass


class _PrefetchedStream(_Stream):
    """A stream read by a background thread, up to ``limit`` bytes ahead of its consumer.

    The clients release the GIL while they wait for the network, so the next chunks arrive
    while the consumer (TensorFlow, say) works on the last ones. An error of the underlying
    stream is raised by ``__next__`` in its turn, so the caller's retry logic sees it as usual.
    """

    _DONE = object()

    def __init__(self, inner: _Stream, limit: int) -> None:
        super().__init__(iter(()))
        self._inner = inner
        self._room = threading.Semaphore(max(1, limit // _CHUNK))
        self._items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="tfrecord-io-hdfs-read-ahead", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                while not self._room.acquire(timeout=0.1):
                    if self._stop.is_set():
                        return
                try:
                    chunk = next(self._inner)
                except StopIteration:
                    self._items.put(self._DONE)
                    return
                self._items.put(chunk)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            self._items.put(e)

    def __next__(self) -> bytes:
        item = self._items.get()
        if item is self._DONE:
            self._items.put(item)
            raise StopIteration
        if isinstance(item, BaseException):
            self._items.put(item)
            raise item
        self._room.release()
        return item

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self._inner.close()


def _native_status(st: Any) -> dict[str, Any]:
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


class _NativeBackend(_Backend):
    name = "native"

    def __init__(self, authority: str, user: str) -> None:
        import hdfs_native

        self._hn = hdfs_native
        host, port = _host_port(authority)
        if port is not None:
            # hdfs-native's TCP connect has no timeout of its own (a silent host would take the
            # OS's ~2 minutes): probe the NameNode first, with one.
            try:
                socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT).close()
            except OSError as e:
                reason = e.strerror or str(e) or type(e).__name__
                raise ConnectionError(f"{reason} (connect timeout {_CONNECT_TIMEOUT:g} s)") from e
        config = {}
        site = {**_read_site("core-site.xml"), **_read_site("hdfs-site.xml")}
        for key, value in _NATIVE_FAST_FAIL.items():
            if key not in site:
                config[key] = value
        self.client = hdfs_native.Client(f"hdfs://{authority}", config)
        # hdfs-native picks the user ($HADOOP_USER_NAME, else the OS user) when it connects:
        # connect now, so this client is bound to the user it is cached under.
        self.client.get_file_info("/")

    def status(self, path: str) -> dict[str, Any] | None:
        try:
            return _native_status(self.client.get_file_info(path))
        except FileNotFoundError:
            return None

    def list(self, path: str) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for st in self.client.list_status(path, False):
            d = _native_status(st)
            out.append((posixpath.basename(st.path.rstrip("/")), d))
        return out

    def reader(self, path: str) -> Any:
        return self.client.read(path)

    def open_stream(self, handle: Any, offset: int, length: int) -> _Stream:
        return _Stream(iter(handle.read_range_stream(offset, length)))

    def create(self, path: str) -> Any:
        return self.client.create(path, self._hn.WriteOptions(overwrite=True))

    def mkdirs(self, path: str) -> None:
        self.client.mkdirs(path, 0o755, True)

    def delete(self, path: str, recursive: bool) -> bool:
        return bool(self.client.delete(path, recursive))

    def rename(self, src: str, dst: str) -> None:
        self.client.rename(src, dst, False)


def _webhdfs_status(st: dict[str, Any]) -> dict[str, Any]:
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


class _WebHdfsBackend(_Backend):
    name = "webhdfs"

    def __init__(self, http_authority: str, user: str) -> None:
        import hdfs as hdfs_pkg

        self._pkg = hdfs_pkg
        self.client = hdfs_pkg.InsecureClient(
            f"http://{http_authority}", user=user, timeout=(_CONNECT_TIMEOUT, _READ_TIMEOUT)
        )

    def status(self, path: str) -> dict[str, Any] | None:
        try:
            return _webhdfs_status(self.client.status(path, strict=True))
        except self._pkg.HdfsError as e:
            if getattr(e, "exception", None) == "FileNotFoundException":
                return None
            raise

    def list(self, path: str) -> list[tuple[str, dict[str, Any]]]:
        return [(name, _webhdfs_status(st)) for name, st in self.client.list(path, status=True)]

    def open_stream(self, handle: Any, offset: int, length: int) -> _Stream:
        cm = self.client.read(handle, offset=offset, length=length, chunk_size=_CHUNK)
        it = cm.__enter__()
        return _Stream(iter(it), lambda: cm.__exit__(None, None, None))

    def create(self, path: str) -> Any:
        cm = self.client.write(path, overwrite=True)
        writer = cm.__enter__()
        return _WebHdfsWriteHandle(cm, writer)

    def mkdirs(self, path: str) -> None:
        self.client.makedirs(path)

    def delete(self, path: str, recursive: bool) -> bool:
        return bool(self.client.delete(path, recursive=recursive))

    def rename(self, src: str, dst: str) -> None:
        self.client.rename(src, dst)


class _WebHdfsWriteHandle:
    def __init__(self, cm: Any, writer: Any) -> None:
        self._cm = cm
        self._writer = writer

    def write(self, data: Any) -> int:
        self._writer.write(bytes(data))
        return len(data)

    def close(self) -> None:
        self._cm.__exit__(None, None, None)



_clients: dict[tuple[str, str, str], _Backend] = {}
_clients_lock = threading.Lock()


def _hdfs_client_choice() -> str:
    choice = os.environ.get(CLIENT_ENV, DEFAULT_HDFS_CLIENT).strip().lower() or DEFAULT_HDFS_CLIENT
    if choice not in ("native", "webhdfs"):
        raise HdfsError(f"{CLIENT_ENV}={choice!r}: expected 'native' or 'webhdfs'")
    return choice


def _backend(loc: _Loc, op: str) -> _Backend:
    user = current_user()
    if loc.scheme == "webhdfs":
        kind, address = "webhdfs", loc.authority
    elif _hdfs_client_choice() == "webhdfs":
        kind, address = "webhdfs", _webhdfs_address_for_rpc(loc.authority)
    else:
        kind, address = "native", loc.authority
    key = (kind, address, user)
    with _clients_lock:
        client = _clients.get(key)
    if client is not None:
        return client
    try:
        maker = _NativeBackend if kind == "native" else _WebHdfsBackend
        client = maker(address, user)
    except HdfsError:
        raise
    except ImportError as e:
        raise HdfsError(f"the {kind} HDFS client is not installed: {e}") from e
    except Exception as e:
        if _is_connect_error(e) or isinstance(e, OSError):
            raise HdfsError(
                f"cannot reach the NameNode at {address} for {loc.url()}: {_first_line(e)}"
            ) from e
        raise _translate(e, loc.url(), op, loc) from e
    with _clients_lock:
        return _clients.setdefault(key, client)


def clear_client_cache() -> None:
    """Forgets every cached client (they are made again on next use)."""
    with _clients_lock:
        _clients.clear()


def _call(loc: _Loc, op: str, fn: Callable[[_Backend], Any], url: str | None = None) -> Any:
    backend = _backend(loc, op)
    try:
        return fn(backend)
    except Exception as e:
        raise _translate(e, url or loc.url(), op, loc) from e


# ----------------------------------------------------------------------------------------------
# file objects


class HdfsReader(io.BufferedIOBase):
    """A seekable binary reader over one HDFS file (what :func:`open` returns for ``"rb"``).

    Data is streamed from the current position to the end of the file, so sequential reads of
    any size are cheap; a seek outside the buffered window starts a new stream. A stream broken
    by a failing DataNode is reopened at the same offset (other replicas serve it).
    """

    def __init__(
        self, loc: _Loc, backend: _Backend, length: int, offset: int = 0, read_ahead: int = 0
    ) -> None:
        super().__init__()
        self._read_ahead = read_ahead
        self._loc = loc
        self._backend = backend
        self._length = length
        self._pos = min(max(0, offset), length)
        self._buf = b""  # bytes at file offset _buf_start
        self._buf_start = self._pos
        self._stream: _Stream | None = None
        self._stream_pos = self._pos  # file offset of the next byte the stream yields
        self._handle: Any = None  # backend's reader handle, reused by successive streams

    @property
    def name(self) -> str:
        return self._loc.url()

    @property
    def mode(self) -> str:
        return "rb"

    def __len__(self) -> int:
        return self._length

    @property
    def size(self) -> int:
        """The file's length in bytes (when opened)."""
        return self._length

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._length + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise HdfsError(f"negative seek position {pos} in {self.name}")
        self._pos = pos
        return pos

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed HDFS file")

    def _drop_stream(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _next_chunk(self) -> bytes:
        """The next chunk at ``_stream_pos``, (re)opening the stream as needed; b"" at EOF."""
        attempt = 0
        first_failure = 0.0
        while True:
            if self._stream_pos >= self._length:
                return b""
            try:
                if self._stream is None:
                    if self._handle is None:
                        self._handle = self._backend.reader(self._loc.path)
                    stream = self._backend.open_stream(
                        self._handle, self._stream_pos, self._length - self._stream_pos
                    )
                    if self._read_ahead > 0:
                        stream = _PrefetchedStream(stream, self._read_ahead)
                    self._stream = stream
                chunk = next(self._stream)
            except StopIteration:
                self._drop_stream()
                return b""  # file shorter than when opened
            except Exception as e:
                self._drop_stream()
                self._handle = None  # fetch block locations afresh
                now = time.monotonic()
                first_failure = first_failure or now
                if (
                    isinstance(e, (FileNotFoundError, PermissionError))
                    or attempt >= _READ_RETRIES
                    or now - first_failure > _READ_RETRY_SECONDS
                ):
                    raise _translate(e, self.name, "read", self._loc) from e
                attempt += 1
                _log.warning(
                    "read of %s broke at byte %d (%s); reopening, attempt %d of %d",
                    self.name, self._stream_pos, _first_line(e), attempt, _READ_RETRIES,
                )
                time.sleep(min(0.2 * 2**attempt, 2.0))
                continue
            if chunk:
                self._stream_pos += len(chunk)
                return bytes(chunk) if not isinstance(chunk, bytes) else chunk

    def _position_stream(self) -> None:
        """Makes the stream (or the buffer) continue at ``_pos``."""
        buf_end = self._buf_start + len(self._buf)
        if self._buf_start <= self._pos <= buf_end and buf_end == self._stream_pos:
            return
        skip = self._pos - self._stream_pos
        if self._stream is not None and 0 <= skip < _CHUNK * 16:
            # Short forward skip: cheaper to read through than to open a new stream.
            self._buf, self._buf_start = b"", self._stream_pos
            while self._stream_pos < self._pos:
                chunk = self._next_chunk()
                if not chunk:
                    break
                self._buf, self._buf_start = chunk, self._stream_pos - len(chunk)
            return
        self._drop_stream()
        self._buf, self._buf_start = b"", self._pos
        self._stream_pos = self._pos

    def _take_buffered(self, n: int) -> bytes:
        start = self._pos - self._buf_start
        if start < 0 or start >= len(self._buf):
            return b""
        piece = self._buf[start : start + n]
        self._pos += len(piece)
        return piece

    def read(self, size: int | None = -1) -> bytes:
        """Reads ``size`` bytes (fewer only at end of file); all the rest if negative/None."""
        self._check_open()
        remaining = self._length - self._pos
        n = remaining if size is None or size < 0 else min(size, remaining)
        if n <= 0:
            return b""
        parts = []
        got = self._take_buffered(n)
        if got:
            parts.append(got)
            n -= len(got)
        if n > 0:
            self._position_stream()
            got = self._take_buffered(n)
            if got:
                parts.append(got)
                n -= len(got)
        while n > 0:
            chunk = self._next_chunk()
            if not chunk:
                break
            self._buf, self._buf_start = chunk, self._stream_pos - len(chunk)
            got = self._take_buffered(n)
            parts.append(got)
            n -= len(got)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readinto(self, b: Any) -> int:
        """Fills ``b`` (fewer bytes only at end of file); returns the count."""
        self._check_open()
        view = memoryview(b).cast("B")
        total = 0
        want = len(view)
        while total < want:
            if self._pos >= self._length:
                break
            start = self._pos - self._buf_start
            if 0 <= start < len(self._buf):
                k = min(want - total, len(self._buf) - start)
                view[total : total + k] = memoryview(self._buf)[start : start + k]
                total += k
                self._pos += k
                continue
            self._position_stream()
            start = self._pos - self._buf_start
            if 0 <= start < len(self._buf):
                continue
            chunk = self._next_chunk()
            if not chunk:
                break
            self._buf, self._buf_start = chunk, self._stream_pos - len(chunk)
        return total

    def readinto1(self, b: Any) -> int:
        return self.readinto(b)

    def readall(self) -> bytes:
        return self.read(-1)

    def peek(self, size: int = 0) -> bytes:
        pos = self._pos
        data = self.read(max(size, 1))
        self._pos = pos
        return data

    def close(self) -> None:
        if not self.closed:
            self._drop_stream()
            self._handle = None
            self._buf = b""
        super().close()

    def __repr__(self) -> str:
        return f"<HdfsReader {self.name} pos={self._pos} length={self._length}>"


class HdfsWriter(io.BufferedIOBase):
    """A binary writer creating (or overwriting) one HDFS file; the file is complete on close.

    Closing after an exception inside a ``with`` block still closes the file (what was written
    stays), as Python files do.
    """

    def __init__(self, loc: _Loc, handle: Any) -> None:
        super().__init__()
        self._loc = loc
        self._handle = handle
        self._pending = bytearray()
        self._written = 0

    @property
    def name(self) -> str:
        return self._loc.url()

    @property
    def mode(self) -> str:
        return "wb"

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._written

    def write(self, data: Any) -> int:
        if self.closed:
            raise ValueError("write to closed HDFS file")
        if isinstance(data, bytes):
            n = len(data)
            big = data
        else:
            view = memoryview(data).cast("B")
            n = len(view)
            big = None
        if n == 0:
            return 0
        if len(self._pending) + n < _WRITE_BUFFER:
            self._pending += data if big is not None else view
        else:
            self._flush_pending()
            if n >= _WRITE_BUFFER:
                # Clients get bytes: hdfs-native takes a memoryview several times slower.
                self._send(big if big is not None else view.tobytes())
            else:
                self._pending += data if big is not None else view
        self._written += n
        return n

    def _send(self, data: Any) -> None:
        try:
            self._handle.write(data)
        except Exception as e:
            raise _translate(e, self.name, "write", self._loc) from e

    def _flush_pending(self) -> None:
        if self._pending:
            data, self._pending = bytes(self._pending), bytearray()
            self._send(data)

    def flush(self) -> None:
        """Hands buffered bytes to the client (it does not make them durable: close does)."""
        if not self.closed:
            self._flush_pending()

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._flush_pending()
            try:
                self._handle.close()
            except Exception as e:
                raise _translate(e, self.name, "close", self._loc) from e
        finally:
            super().close()

    def __repr__(self) -> str:
        return f"<HdfsWriter {self.name} written={self._written}>"


# ----------------------------------------------------------------------------------------------
# public functions


def _to_status(loc: _Loc, d: dict[str, Any], path: str | None = None) -> FileStatus:
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
        read_ahead: for ``"rb"``, bytes a background thread may read ahead of the caller
            (0: none). For a consumer that works on each chunk (parsing, training) while
            the next ones arrive; a seek outside what was read ahead drops it.

    Raises:
        HdfsFileNotFoundError: reading a file that does not exist.
        HdfsPermissionError: access denied for :func:`current_user`.
        HdfsError: anything else, e.g. opening a directory or an unreachable NameNode.
    """
    loc = _resolve(url)
    if mode == "rb":
        d = _call(loc, "open", lambda b: b.status(loc.path))
        if d is None:
            raise HdfsFileNotFoundError(f"no such file: {loc.url()}")
        if d["is_dir"]:
            raise HdfsError(f"is a directory, not a file: {loc.url()}")
        if offset < 0:
            raise HdfsError(f"negative offset {offset} for {loc.url()}")
        return HdfsReader(loc, _backend(loc, "open"), d["length"], offset, read_ahead)
    if mode == "wb":
        if offset:
            raise HdfsError("offset is only for reading")
        handle = _call(loc, "create", lambda b: b.create(loc.path))
        return HdfsWriter(loc, handle)
    raise ValueError(f"unsupported mode {mode!r}: use 'rb' or 'wb'")


def stat(url: str | os.PathLike[str]) -> FileStatus:
    """The :class:`FileStatus` of a file or directory; HdfsFileNotFoundError if missing."""
    loc = _resolve(url)
    d = _call(loc, "stat", lambda b: b.status(loc.path))
    if d is None:
        raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")
    return _to_status(loc, d)


def exists(url: str | os.PathLike[str]) -> bool:
    """Whether a file or directory exists (errors other than "missing" still raise)."""
    loc = _resolve(url)
    return _call(loc, "stat", lambda b: b.status(loc.path)) is not None


def ls(url: str | os.PathLike[str]) -> list[FileStatus]:
    """The entries of a directory, sorted by name; for a file, its own status alone."""
    loc = _resolve(url)
    d = _call(loc, "list", lambda b: b.status(loc.path))
    if d is None:
        raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")
    if not d["is_dir"]:
        return [_to_status(loc, d)]
    entries = _call(loc, "list", lambda b: b.list(loc.path))
    out = [_to_status(loc, st, posixpath.join(loc.path, name)) for name, st in entries]
    out.sort(key=lambda s: s.url)
    return out


def glob(pattern: str | os.PathLike[str]) -> list[str]:
    """URLs matching ``pattern``, sorted; ``*``, ``?`` and ``[...]`` (fnmatch, case-sensitive)
    may appear in any path component after the NameNode. A pattern without wildcards gives
    ``[url]`` if it exists, else ``[]``. A missing directory matches nothing."""
    loc = _resolve(pattern)
    parts = [p for p in loc.path.split("/") if p]
    first = next((i for i, p in enumerate(parts) if _GLOB_CHARS.search(p)), None)
    if first is None:
        return [loc.url()] if exists(loc.url()) else []
    base0 = "/" + "/".join(parts[:first])
    st0 = _call(loc, "glob", lambda b: b.status(base0), loc.url(base0))
    if st0 is None or not st0["is_dir"]:
        return []
    bases = [base0]
    for i in range(first, len(parts)):
        comp = parts[i]
        last = i == len(parts) - 1
        nxt: list[str] = []
        for base in bases:
            if _GLOB_CHARS.search(comp):
                try:
                    entries = _call(loc, "glob", lambda b, base=base: b.list(base), loc.url(base))
                except HdfsFileNotFoundError:
                    continue  # deleted meanwhile
                for name, st in entries:
                    if fnmatch.fnmatchcase(name, comp) and (last or st["is_dir"]):
                        nxt.append(posixpath.join(base, name))
            else:
                candidate = posixpath.join(base, comp)
                st = _call(loc, "glob", lambda b, c=candidate: b.status(c), loc.url(candidate))
                if st is not None and (last or st["is_dir"]):
                    nxt.append(candidate)
        bases = nxt
        if not bases:
            break
    return sorted(loc.url(p) for p in bases)


def makedirs(url: str | os.PathLike[str]) -> None:
    """Creates a directory and its missing parents; fine if it already exists as a directory."""
    loc = _resolve(url)
    d = _call(loc, "mkdir", lambda b: b.status(loc.path))
    if d is not None:
        if d["is_dir"]:
            return
        raise HdfsFileExistsError(f"a file exists where a directory should be: {loc.url()}")
    _call(loc, "mkdir", lambda b: b.mkdirs(loc.path))


def delete(url: str | os.PathLike[str], recursive: bool = False) -> None:
    """Deletes a file or directory (a non-empty directory only with ``recursive``).

    Raises HdfsFileNotFoundError if it does not exist.
    """
    loc = _resolve(url)
    if loc.path == "/":
        raise HdfsError(f"refusing to delete the root directory: {loc.url()}")
    if not _call(loc, "delete", lambda b: b.delete(loc.path, recursive)):
        raise HdfsFileNotFoundError(f"no such file or directory: {loc.url()}")


def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Renames (moves) ``src`` to ``dst`` on the same HDFS.

    ``dst`` must not exist, and its parent directory must; both raise HdfsError otherwise
    (``HdfsFileNotFoundError`` when ``src`` or ``dst``'s parent is missing).
    """
    s, d = _resolve(src), _resolve(dst)
    if (s.scheme, s.authority) != (d.scheme, d.authority):
        raise HdfsError(f"cannot rename across file systems: {s.url()} -> {d.url()}")
    if _call(s, "rename", lambda b: b.status(s.path)) is None:
        raise HdfsFileNotFoundError(f"no such file or directory: {s.url()}")
    if _call(d, "rename", lambda b: b.status(d.path)) is not None:
        raise HdfsFileExistsError(f"rename destination exists: {d.url()}")
    parent = posixpath.dirname(d.path)
    pst = _call(d, "rename", lambda b: b.status(parent), d.url(parent))
    if pst is None or not pst["is_dir"]:
        raise HdfsFileNotFoundError(
            f"rename destination's parent is not a directory: {d.url(parent)}"
        )
    _call(s, "rename", lambda b: b.rename(s.path, d.path), f"{s.url()} -> {d.url()}")

