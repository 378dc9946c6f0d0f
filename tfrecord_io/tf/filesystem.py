"""The Python half of TensorFlow's ``hdfs://``, ``webhdfs://``, ``s3://`` and ``http(s)://`` file
systems.

``_native/tf_filesystem.cc`` is a TensorFlow modular file system plugin (a shared library that
setup.py builds against the installed TensorFlow). TensorFlow loads it with
``tf.experimental.register_filesystem_plugin`` (done by
:func:`tfrecord_io.tf.plugin.register_filesystems`); this module then hands it a table of ctypes
callbacks that serve each operation with :mod:`tfrecord_io.fs` alone, so TensorFlow sees every URL
exactly as the rest of tfrecord-io does (the same configuration, credentials, errors; on ``s3://``
the same atomic writes). TensorFlow asks for large reads, so this Python code runs once per chunk
(megabytes), while TensorFlow's C++ does the record framing.

No TensorFlow import here: :mod:`tfrecord_io.tf.runtime` owns that.
"""

from __future__ import annotations

import atexit
import ctypes
import itertools
import logging
import posixpath
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from tfrecord_io import fs
from tfrecord_io.errors import BucketNotFoundError, PluginNotBuiltError, TFRecordError

__all__ = ["plugin_path", "install", "installed"]

log = logging.getLogger(__name__)

#: File name of the plugin inside the package (``tfrecord_io/_native/``).
PLUGIN_NAME = "libtfrecord_io_tf_filesystem.so"

# TF_Code values (tensorflow/c/tf_status.h).
_UNKNOWN = 2
_NOT_FOUND = 5
_ALREADY_EXISTS = 6
_PERMISSION_DENIED = 7
_FAILED_PRECONDITION = 9
_UNAVAILABLE = 14


def plugin_path() -> Path:
    """The plugin's shared library; :class:`PluginNotBuiltError` if the build left it out."""
    path = Path(str(resources.files("tfrecord_io") / "_native" / PLUGIN_NAME))
    if not path.is_file():
        raise PluginNotBuiltError(
            f"{path} is missing: tfrecord-io was installed without TensorFlow present, so its "
            "TensorFlow file system plugin was not compiled. Install TensorFlow, then reinstall "
            "tfrecord-io (`pip install --no-build-isolation --force-reinstall tfrecord-io`), "
            "or run `python setup.py build_tf_plugin` in a source checkout."
        )
    return path


_c_int_p = ctypes.POINTER(ctypes.c_int)
_c_int64_p = ctypes.POINTER(ctypes.c_int64)
_STAT = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_char_p, _c_int64_p, _c_int64_p, _c_int_p, ctypes.c_void_p
)
_OPEN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, _c_int64_p, ctypes.c_void_p)
_READ = ctypes.CFUNCTYPE(
    ctypes.c_int64, ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p,
    ctypes.c_void_p,
)
_CLOSE_READ = ctypes.CFUNCTYPE(None, ctypes.c_int64)
_LIST = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p
)
_WRITE = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p
)
_HANDLE_OP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p)
_PATH_KIND_OP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p)
_RENAME = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)


class _Callbacks(ctypes.Structure):
    # Field order is the C struct TFRecordIOCallbacks in tf_filesystem.cc.
    _fields_ = [
        ("stat", _STAT),
        ("open_read", _OPEN),
        ("read", _READ),
        ("close_read", _CLOSE_READ),
        ("list", _LIST),
        ("open_write", _OPEN),
        ("write", _WRITE),
        ("flush", _HANDLE_OP),
        ("close_write", _HANDLE_OP),
        ("mkdir", _PATH_KIND_OP),
        ("remove", _PATH_KIND_OP),
        ("rename", _RENAME),
    ]


def _code(e: BaseException) -> int:
    if isinstance(e, FileNotFoundError):
        return _NOT_FOUND
    if isinstance(e, PermissionError):
        return _PERMISSION_DENIED
    if isinstance(e, FileExistsError):
        return _ALREADY_EXISTS
    if isinstance(e, (NotADirectoryError, IsADirectoryError, BucketNotFoundError)):
        return _FAILED_PRECONDITION  # a missing bucket is a configuration error, not "no file"
    text = str(e)
    if isinstance(e, (ConnectionError, TimeoutError)) or "cannot reach" in text or \
            "did not answer" in text:
        return _UNAVAILABLE
    return _UNKNOWN


class _Provider:
    """Serves the plugin's callbacks with tfrecord_io.fs; one per process."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        lib.tfrecord_io_set_status.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]
        lib.tfrecord_io_set_status.restype = None
        lib.tfrecord_io_add_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.tfrecord_io_add_name.restype = ctypes.c_int
        lib.tfrecord_io_set_callbacks.argtypes = [ctypes.c_void_p]
        lib.tfrecord_io_set_callbacks.restype = None
        self._ids = itertools.count(1)
        self._readers: dict[int, tuple[Any, threading.Lock]] = {}
        self._writers: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.table = _Callbacks(
            _STAT(self._guard(self._stat)),
            _OPEN(self._guard(self._open_read)),
            _READ(self._guard(self._read)),
            _CLOSE_READ(self._close_read),
            _LIST(self._guard(self._list)),
            _OPEN(self._guard(self._open_write)),
            _WRITE(self._guard(self._write)),
            _HANDLE_OP(self._guard(self._flush)),
            _HANDLE_OP(self._guard(self._close_write)),
            _PATH_KIND_OP(self._guard(self._mkdir)),
            _PATH_KIND_OP(self._guard(self._remove)),
            _RENAME(self._guard(self._rename)),
        )

    def _guard(self, fn: Callable[..., int]) -> Callable[..., int]:
        """Runs ``fn``; an exception becomes a TensorFlow status and -1 (never escapes to C)."""
        set_status = self._lib.tfrecord_io_set_status

        def call(*args: Any) -> int:
            try:
                return fn(*args)
            except BaseException as e:  # noqa: BLE001 - must not unwind into C
                status = args[-1]
                message = str(e) or type(e).__name__
                if not isinstance(e, TFRecordError):
                    message = f"{type(e).__name__}: {message}"
                set_status(status, _code(e), message.encode("utf-8", "replace"))
                return -1

        return call

    def _new_id(self) -> int:
        with self._lock:
            return next(self._ids)

    # -- reading

    def _stat(self, uri: bytes, length: Any, mtime: Any, is_dir: Any, status: Any) -> int:
        st = fs.stat(uri.decode())
        length[0] = st.size
        mtime[0] = int(st.mtime * 1e9)
        is_dir[0] = int(st.is_dir)
        return 0

    def _open_read(self, uri: bytes, handle: Any, status: Any) -> int:
        # No read-ahead thread of ours: hdfs-native already streams up to 100 packets ahead in
        # its own tasks, and a second thread only added GIL hand-offs (bench/tf_hdfs.py measured
        # reading faster without it); s3:// fetches large ranged GETs ahead on its own.
        f = fs.open(uri.decode(), "rb")
        key = self._new_id()
        self._readers[key] = (f, threading.Lock())
        handle[0] = key
        return 0

    def _read(self, handle: int, offset: int, n: int, buffer: int, status: Any) -> int:
        f, lock = self._readers[handle]
        if n == 0:
            return 0
        view = memoryview((ctypes.c_ubyte * n).from_address(buffer)).cast("B")
        with lock:
            f.seek(offset)
            return f.readinto(view)

    def _close_read(self, handle: int) -> None:
        entry = self._readers.pop(handle, None)
        if entry is not None:
            try:
                entry[0].close()
            except Exception:
                log.debug("closing a reader failed", exc_info=True)

    def _list(self, uri: bytes, kind: int, names: Any, status: Any) -> int:
        url = uri.decode()
        if kind == 0:
            st = fs.stat(url)
            if not st.is_dir:
                raise NotADirectoryError(f"not a directory: {url}")
            found = [posixpath.basename(u.rstrip("/")) for u in fs.ls(url)]
        else:
            found = fs.glob(url)
        add = self._lib.tfrecord_io_add_name
        for name in found:
            if add(names, name.encode()) != 0:
                raise MemoryError("out of memory listing " + url)
        return 0

    # -- writing

    def _open_write(self, uri: bytes, handle: Any, status: Any) -> int:
        url = uri.decode()
        if _is_dir(url):
            raise IsADirectoryError(f"is a directory: {url}")
        f = fs.open(url, "wb")  # HDFS makes the parents; s3:// uploads when it is closed
        key = self._new_id()
        self._writers[key] = f
        handle[0] = key
        return 0

    def _write(self, handle: int, data: int, n: int, status: Any) -> int:
        if n:
            self._writers[handle].write(ctypes.string_at(data, n))
        return 0

    def _flush(self, handle: int, status: Any) -> int:
        self._writers[handle].flush()
        return 0

    def _close_write(self, handle: int, status: Any) -> int:
        self._writers.pop(handle).close()
        return 0

    # -- the namespace

    def _mkdir(self, uri: bytes, kind: int, status: Any) -> int:
        url = uri.decode()
        if kind == 0:
            if fs.exists(url):
                raise FileExistsError(f"already exists: {url}")
            parent = fs.stat(fs.split(url.rstrip("/"))[0])  # missing: NOT_FOUND
            if not parent.is_dir:
                raise NotADirectoryError(f"parent is not a directory: {parent.url}")
        fs.makedirs(url)
        return 0

    def _remove(self, uri: bytes, kind: int, status: Any) -> int:
        url = uri.decode()
        st = fs.stat(url)
        if kind == 0 and st.is_dir:
            raise IsADirectoryError(f"is a directory, not a file: {url}")
        if kind == 1 and not st.is_dir:
            raise NotADirectoryError(f"not a directory: {url}")
        fs.delete(url, recursive=kind == 2)
        return 0

    def _rename(self, src: bytes, dst: bytes, status: Any) -> int:
        s, d = src.decode(), dst.decode()
        target_is_dir = _is_dir(d)  # None: no target
        if fs.stat(s).is_dir:
            # Moving a whole directory (some of TensorFlow's savers do) onto nothing: HDFS
            # renames it, s3:// copies it object by object.
            if target_is_dir is not None:
                raise FileExistsError(f"rename of directory {s} onto an existing path: {d}")
            fs.rename(s, d)
        elif target_is_dir:
            raise IsADirectoryError(f"rename target is a directory: {d}")
        else:
            # TensorFlow's rename replaces the target (checkpoints rely on it): on HDFS the old
            # file is deleted first; on s3:// a server-side copy replaces it at once.
            fs.replace(s, d)
        return 0

    def close_all(self) -> None:
        for key in list(self._readers):
            self._close_read(key)
        for key in list(self._writers):
            try:
                self._writers.pop(key).close()
            except Exception:
                log.warning("closing a file at exit failed", exc_info=True)


def _is_dir(url: str) -> bool | None:
    """Whether ``url`` is a directory; None if nothing is there (one stat)."""
    try:
        return fs.stat(url).is_dir
    except FileNotFoundError:
        return None


_provider: _Provider | None = None
_install_lock = threading.Lock()


def install(path: Path) -> None:
    """Hands the callbacks to the plugin at ``path`` (already loaded by TensorFlow). Idempotent."""
    global _provider
    with _install_lock:
        if _provider is not None:
            return
        # dlopen of the same file returns the library TensorFlow loaded: one set of globals.
        lib = ctypes.CDLL(str(path))
        provider = _Provider(lib)
        lib.tfrecord_io_set_callbacks(ctypes.addressof(provider.table))
        _provider = provider
        atexit.register(_withdraw)


def _withdraw() -> None:
    """At interpreter exit: TensorFlow threads must not call into a finalizing interpreter."""
    provider = _provider
    if provider is not None:
        provider._lib.tfrecord_io_set_callbacks(None)  # noqa: SLF001 - this module's own class
        provider.close_all()


def installed() -> bool:
    """Whether this process has handed the callbacks to the plugin."""
    return _provider is not None

