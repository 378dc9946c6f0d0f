"""The Python half of TensorFlow's ``hdfs://``, ``webhdfs://``, ``s3://`` and ``http(s)://`` file
systems.

``_native/tf_filesystem.cc`` is a TensorFlow modular file system plugin (a shared library that
setup.py builds against the installed TensorFlow). TensorFlow loads it with
``tf.experimental.register_filesystem_plugin`` (done by
:func:`tfrecord_io.tf.plugin.register_filesystems`); this module then hands it a table of ctypes
callbacks that serve each operation with :mod:`tfrecord_io.fs` alone, so TensorFlow sees every URL
exactly as the rest of tfrecord-io does (the same configuration, credentials, errors; on ``s3://``
the same atomic writes). TensorFlow asks for large reads, so this Python code runs once per chunk
(megabytes), while TensorFlow's C++ does the record framing. A reader that does not fetch ahead
on its own (HDFS, HTTP) is read ahead by the plugin: :meth:`_Provider._open_read` asks for it,
and a C++ thread calls the read callback for the next chunk while TensorFlow parses. When the
order of the files is known (:func:`expect_reads`, which :func:`tfrecord_io.tf.dataset` calls),
the next file is opened while TensorFlow reads one, and its first blocks fetched once the
current file's are in, so that the store does not wait between files.

No TensorFlow import here: :mod:`tfrecord_io.tf.runtime` owns that.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import dataclasses
import io
import itertools
import logging
import os
import posixpath
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

from tfrecord_io import fs
from tfrecord_io.errors import (
    BucketNotFoundError,
    InheritedFileError,
    PluginNotBuiltError,
    TFRecordError,
)

__all__ = ["plugin_path", "install", "installed", "expect_reads"]

log = logging.getLogger(__name__)

#: File name of the plugin inside the package (``tfrecord_io/_native/``).
PLUGIN_NAME = "libtfrecord_io_tf_filesystem.so"

# TF_Code values (tensorflow/c/tf_status.h).
_UNKNOWN = 2
_NOT_FOUND = 5
_ALREADY_EXISTS = 6
_PERMISSION_DENIED = 7
_FAILED_PRECONDITION = 9
_UNIMPLEMENTED = 12
_UNAVAILABLE = 14

# Of the read order given by expect_reads: how many successors are remembered, and how many
# files may be open ahead (each holds its first blocks) before the oldest is dropped.
_SUCCESSORS_KEPT = 4096
_OPEN_AHEAD = 2
#: A file opened ahead is handed to TensorFlow only for the open that moves a reader on from
#: the file before: made by the thread that closed that file, read to its end, within this many
#: seconds. Any other open of it (another dataset, ``gfile``, later) opens it afresh, and the
#: one opened ahead is closed unread: the file may have been rewritten or removed since.
_AHEAD_GRACE = 1.0


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
_CLOSE_READ = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int)
_ABORT_WRITE = ctypes.CFUNCTYPE(None, ctypes.c_int64)
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
        ("abort_write", _ABORT_WRITE),
        ("mkdir", _PATH_KIND_OP),
        ("remove", _PATH_KIND_OP),
        ("rename", _RENAME),
        # PyGILState_Check, PyEval_SaveThread, PyEval_RestoreThread: the plugin's read-ahead
        # threads call Python, so a thread that waits for one releases the GIL if it holds it.
        ("gil_held", ctypes.c_void_p),
        ("release_gil", ctypes.c_void_p),
        ("restore_gil", ctypes.c_void_p),
    ]


def _code(e: BaseException) -> int:
    if isinstance(e, io.UnsupportedOperation):  # e.g. a write, a listing on http(s)://
        return _UNIMPLEMENTED
    if isinstance(e, FileNotFoundError):
        return _NOT_FOUND
    if isinstance(e, PermissionError):
        return _PERMISSION_DENIED
    if isinstance(e, FileExistsError):
        return _ALREADY_EXISTS
    if isinstance(e, (NotADirectoryError, IsADirectoryError, BucketNotFoundError,
                      InheritedFileError)):
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
        lib.tfrecord_io_max_read_ahead.argtypes = []
        lib.tfrecord_io_max_read_ahead.restype = ctypes.c_uint64
        # The most a file opened ahead fetches for TensorFlow's first read of it: as much as
        # the plugin's read-ahead fetches for any later read.
        self._start_ahead_max: int = lib.tfrecord_io_max_read_ahead()
        self._ids = itertools.count(1)
        self._readers: dict[int, _Open] = {}
        self._writers: dict[int, Any] = {}
        self._inherited: list[Any] = []  # a forked child's copies of its parent's files, kept
        self._inherited_names: dict[int, str] = {}  # their handles, and what they name
        self._lock = threading.Lock()
        # Under _lock: the file read after each (expect_reads), and the files opened ahead.
        self._successors: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._ahead: collections.OrderedDict[str, _Ahead] = collections.OrderedDict()
        self._opener: ThreadPoolExecutor | None = None
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
            _ABORT_WRITE(self._abort_write),
            _PATH_KIND_OP(self._guard(self._mkdir)),
            _PATH_KIND_OP(self._guard(self._remove)),
            _RENAME(self._guard(self._rename)),
            _c_function(ctypes.pythonapi.PyGILState_Check),
            _c_function(ctypes.pythonapi.PyEval_SaveThread),
            _c_function(ctypes.pythonapi.PyEval_RestoreThread),
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
        # 1 asks the plugin to read ahead (in C++, while TensorFlow parses): a reader that
        # fetches ahead itself (s3://, az://) needs no second read-ahead.
        url = uri.decode()
        f = self._opened_ahead(url)
        if f is None:  # not "or": an empty file's reader is false (it has a length)
            f = fs.open(url, "rb")
        key = self._new_id()
        self._readers[key] = _Open(f, url)
        handle[0] = key
        self._open_ahead(url)
        return 0 if _reads_ahead(url) else 1

    def _parents(self, handle: int) -> InheritedFileError:
        """The error of a handle that this forked child has no file of (the parent's)."""
        name = self._inherited_names.get(handle, f"file handle {handle}")
        return InheritedFileError(f"{name} was opened before os.fork() by the parent process: "
                                  "this process has no file of its own for it; open it again "
                                  "here")

    def _read(self, handle: int, offset: int, n: int, buffer: int, status: Any) -> int:
        entry = self._readers.get(handle)
        if entry is None:
            raise self._parents(handle)
        f, url = entry.file, entry.url
        if n == 0:
            return 0
        view = memoryview((ctypes.c_ubyte * n).from_address(buffer)).cast("B")
        with entry.lock:
            f.seek(offset)
            got = 0
            while got < n:  # a raw reader may return fewer bytes; fewer than n means the end
                more = f.readinto(view[got:])
                if not more:
                    break
                got += more
        if got < n or _fetched_to_end(f):  # the next file's fetches may begin
            self._start_ahead(url, n)
        return got

    def _close_read(self, handle: int, read_to_end: int = 0) -> None:
        """Closes a reader; *read_to_end*: whether TensorFlow read it to its end (then the
        next file opened ahead is TensorFlow's next open, see :meth:`_opened_ahead`)."""
        entry = self._readers.pop(handle, None)
        if entry is None:
            return
        with self._lock:
            after = self._successors.get(entry.url)
            ahead = self._ahead.get(after) if after is not None else None
            if ahead is not None:
                if read_to_end:  # TensorFlow moves on to the next file now, in this thread
                    ahead.deadline = time.monotonic() + _AHEAD_GRACE
                    ahead.closer = threading.get_ident()
                else:  # left before its end: the next file may never be read
                    del self._ahead[after]
        if ahead is not None and not read_to_end:
            ahead.opened.add_done_callback(_close_result)
        _close_quietly(entry.file)

    # -- opening the next file of a known order ahead of TensorFlow

    def expect_reads(self, urls: Sequence[str]) -> None:
        with self._lock:
            for before, after in itertools.pairwise(urls):
                self._successors.pop(before, None)
                self._successors[before] = after
            while len(self._successors) > _SUCCESSORS_KEPT:
                self._successors.popitem(last=False)

    def _open_ahead(self, url: str) -> None:
        """Opens the file read after *url* in the background, if one is known (its first
        request, a ``HEAD`` on an object store, then costs TensorFlow nothing)."""
        self._drop_ahead(lambda u, entry: entry.expired())
        with self._lock:
            after = self._successors.get(url)
            if after is None or after in self._ahead:
                return
            if self._opener is None:
                self._opener = ThreadPoolExecutor(1, thread_name_prefix="tfrecord-io-open-ahead")
            self._ahead[after] = _Ahead(self._opener.submit(fs.open, after, "rb"))
            dropped = []
            while len(self._ahead) > _OPEN_AHEAD:
                dropped.append(self._ahead.popitem(last=False)[1].opened)
        for future in dropped:
            future.add_done_callback(_close_result)

    def _start_ahead(self, url: str, size: int) -> None:
        """Starts fetching the first blocks of the file opened ahead after *url*, once (now that
        every block of *url* has been asked for, or TensorFlow read to its end: the two files'
        fetches then overlap only by the last blocks of *url* still on their way). *size*:
        the size of TensorFlow's reads of *url*, which its first read of the next file asks
        for too."""
        with self._lock:
            after = self._successors.get(url)
            entry = self._ahead.get(after) if after is not None else None
            if entry is None or self._opener is None or entry.started:
                return
            # TensorFlow's open waits for this one: never two threads in one reader.
            entry.opened = self._opener.submit(
                _started, entry.opened, min(size, self._start_ahead_max))
            entry.started = True

    def _opened_ahead(self, url: str) -> Any:
        """The reader of *url* opened ahead, if this open is the one it was opened for (see
        :data:`_AHEAD_GRACE`); None otherwise, or if opening it failed (the caller's own open
        then raises the error)."""
        with self._lock:
            entry = self._ahead.pop(url, None)
        if entry is None:
            return None
        if entry.closer != threading.get_ident() or entry.expired():
            entry.opened.add_done_callback(_close_result)
            return None
        try:
            return entry.opened.result()
        except Exception:  # noqa: BLE001 - opened again by the caller, which reports it
            return None

    def _drop_ahead(self, which: Callable[[str, _Ahead], bool]) -> None:
        """Closes the files opened ahead for which ``which(url, entry)`` holds."""
        with self._lock:
            dropped = [u for u, entry in self._ahead.items() if which(u, entry)]
            futures = [self._ahead.pop(u).opened for u in dropped]
        for future in futures:
            future.add_done_callback(_close_result)

    def _changing(self, url: str) -> None:
        """*url* (or a tree under it) is written, removed or renamed: a reader of it opened
        ahead would read what it was."""
        tree = url.rstrip("/") + "/"
        self._drop_ahead(lambda u, entry: u == url or u.startswith(tree))

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
        self._changing(url)
        f = fs.open(url, "wb")  # HDFS makes the parents; s3:// uploads when it is closed
        key = self._new_id()
        self._writers[key] = f
        handle[0] = key
        return 0

    def _writer(self, handle: int) -> Any:
        f = self._writers.get(handle)
        if f is None:
            raise self._parents(handle)
        return f

    def _write(self, handle: int, data: int, n: int, status: Any) -> int:
        if n:
            self._writer(handle).write(ctypes.string_at(data, n))
        return 0

    def _flush(self, handle: int, status: Any) -> int:
        self._writer(handle).flush()
        return 0

    def _close_write(self, handle: int, status: Any) -> int:
        f = self._writer(handle)
        del self._writers[handle]
        f.close()  # WebHDFS creates the file only when its data is sent, at close
        return 0

    def _abort_write(self, handle: int) -> None:
        """A writer TensorFlow dropped without closing it: on an object store nothing is
        uploaded; a file system that writes in place (HDFS, local) keeps what was written, as
        TensorFlow's own file systems do."""
        f = self._writers.pop(handle, None)
        if f is None:
            return
        try:
            abort = getattr(f, "abort", None)
            (abort or f.close)()
        except Exception:  # called from C, where nothing can be raised
            log.warning("discarding an abandoned write failed", exc_info=True)

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
        self._changing(url)
        fs.delete(url, recursive=kind == 2)
        return 0

    def _rename(self, src: bytes, dst: bytes, status: Any) -> int:
        s, d = src.decode(), dst.decode()
        self._changing(s)
        self._changing(d)
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
            # TensorFlow's rename replaces the target (checkpoints rely on it): on hdfs:// in
            # one NameNode call, on s3:// by a server-side copy; on webhdfs:// the old file is
            # deleted first.
            fs.replace(s, d)
        return 0

    def after_fork_in_child(self) -> None:
        """Forgets, in a forked child, what belongs to the parent: its open files (closing a
        copy here would complete or remove the parent's writes), the files it opened ahead and
        the thread that opened them, which the child does not have."""
        self._lock = threading.Lock()
        self._inherited.extend([*self._readers.values(), *self._writers.values()])
        self._inherited_names.update({key: entry.url for key, entry in self._readers.items()})
        self._inherited_names.update({key: str(getattr(f, "name", f"file handle {key}"))
                                      for key, f in self._writers.items()})
        self._readers, self._writers = {}, {}
        self._ahead.clear()
        self._opener = None

    def close_all(self) -> None:
        with self._lock:
            ahead = [entry.opened for entry in self._ahead.values()]
            self._ahead.clear()
        for future in ahead:
            future.add_done_callback(_close_result)
        for key in list(self._readers):
            self._close_read(key)
        for key in list(self._writers):
            try:
                self._writers.pop(key).close()
            except Exception:
                log.warning("closing a file at exit failed", exc_info=True)


def _reads_ahead(url: str) -> bool:
    """Whether the file system of *url* fetches ahead of its readers (False if none serves it:
    TensorFlow's own open then says so)."""
    try:
        return fs.filesystem(url)[0].reads_ahead
    except Exception:  # noqa: BLE001 - an unknown scheme is reported by the open itself
        return False


def _c_function(function: Any) -> int:
    """The address of a C function of ``ctypes.pythonapi``."""
    return ctypes.cast(function, ctypes.c_void_p).value or 0


@dataclasses.dataclass(slots=True)
class _Open:
    """A file TensorFlow reads: its reader, its URL, and the lock its reads take."""

    file: Any
    url: str
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


@dataclasses.dataclass(slots=True)
class _Ahead:
    """A file opened ahead of TensorFlow: *opened* gives its reader; *started*: whether its
    first blocks' fetches were started (then *opened* gives the reader once they are);
    *deadline*, *closer*: once the file before was read to its end and closed, until when
    (monotonic time) and to which thread (the closer's) TensorFlow may be handed it."""

    opened: Future[Any]
    started: bool = False
    deadline: float | None = None
    closer: int | None = None

    def expired(self) -> bool:
        """Whether the time to hand it to TensorFlow has passed."""
        return self.deadline is not None and time.monotonic() > self.deadline


def _fetched_to_end(reader: Any) -> bool:
    """Whether *reader* (or its raw reader) has asked its store for every byte to its end
    (``fetched_to_end``, which an object store's read-ahead has)."""
    raw = getattr(reader, "raw", reader)
    return bool(getattr(raw, "fetched_to_end", False))


def _started(opened: Future[Any], size: int) -> Any:
    """The reader that *opened* gives, once its fetches for a first read of *size* bytes are
    started (``start(size)``, which an object store's read-ahead and an HDFS reader have)."""
    reader = opened.result()
    start = getattr(reader, "start", None) or getattr(getattr(reader, "raw", None), "start", None)
    if start is not None:
        with contextlib.suppress(ValueError):  # closed meanwhile
            start(size)
    return reader


def _close_result(future: Future[Any]) -> None:
    """Closes the reader a future opened, if it opened one."""
    if future.exception() is None:
        _close_quietly(future.result())


def _close_quietly(f: Any) -> None:
    try:
        f.close()
    except Exception:
        log.debug("closing a reader failed", exc_info=True)


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
        os.register_at_fork(after_in_child=provider.after_fork_in_child)


def _withdraw() -> None:
    """At interpreter exit: TensorFlow threads must not call into a finalizing interpreter."""
    provider = _provider
    if provider is not None:
        provider._lib.tfrecord_io_set_callbacks(None)  # noqa: SLF001 - this module's own class
        provider.close_all()


def expect_reads(urls: Sequence[str]) -> None:
    """Tells the plugin that TensorFlow will read *urls* one after the other, each to its end
    (a ``tf.data.TFRecordDataset`` of them read sequentially does).

    When TensorFlow opens one of them, the plugin opens the next in the background; when
    TensorFlow has read the first to its end, the next one's first blocks are fetched while
    TensorFlow parses what it read last (an HDFS reader's stream is started), so that the
    store is not idle between files. At most two files are open ahead; a file opened ahead
    that TensorFlow never opens is closed when a later one is opened ahead. Does nothing
    before :func:`install`.
    """
    provider = _provider
    if provider is not None:
        provider.expect_reads(urls)


def installed() -> bool:
    """Whether this process has handed the callbacks to the plugin."""
    return _provider is not None

