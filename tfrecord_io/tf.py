"""TensorFlow input pipelines over TFRecord files on local disk and on HDFS.

TensorFlow 2.21 has no ``hdfs://`` file system. :func:`dataset` reads TFRecord files from local
paths, globs, directories of ``part-*`` shards and ``hdfs://`` / ``webhdfs://`` URLs into a
``tf.data.Dataset`` of serialized records, and splits the input among several readers::

    from tfrecord_io import tf as tfr

    records = tfr.dataset("hdfs://namenode:8020/data/train")        # every part file
    examples = tfr.parse_examples(records, batch_size=256)          # dicts of tensors
    model.fit(examples.map(lambda f: (f["x"], f["y"])), epochs=3)

    # worker k of N (e.g. from tf.distribute's InputContext) reads its share only:
    records = tfr.dataset(url, num_shards=N, shard_index=k)

Inputs (:func:`list_files`)
---------------------------
A path/URL or a list of them. Each may be a file (taken as given, whatever its name), a
directory (all the files below it, recursively), or a glob (``*``, ``?``, ``[...]``; matches that
are directories are expanded too). Names starting with ``_`` or ``.`` are skipped inside
directories and in glob matches: ``_SUCCESS``, the ``_NAME.tfindex`` split indexes, Hadoop's
``.crc`` files, ``_temporary``. The files are sorted by path and duplicates dropped, so every
process lists the same input in the same order. A missing path, or a glob matching nothing,
raises :class:`InputNotFoundError` (for ``hdfs://`` paths the
:class:`~tfrecord_io.hdfs.HdfsFileNotFoundError` of :mod:`tfrecord_io.hdfs`); both are
``FileNotFoundError`` and :class:`~tfrecord_io.errors.TFRecordError`. An existing directory
holding no data files gives an empty dataset (and a warning).

Compression: ``None`` detects it per file from the name (``.gz`` GZIP; ``.deflate``, ``.zlib``,
``.zz`` ZLIB; else none), or ``"gzip"`` / ``"zlib"`` / ``"none"`` (any case, so TensorFlow's
``"GZIP"`` works) applies to every file.

Sharding (:func:`shard_plan`)
-----------------------------
With ``num_shards=N`` every record of the input is read by exactly one of the N readers. The
plan is computed from the listing alone, identically in every process, with no coordination:

* ``N == 1``: all files, whole.
* At least N files: whole files are dealt out, balanced by size: largest first, each to the
  shard with the fewest bytes so far (ties: lowest shard number). Files of equal size are
  therefore dealt round-robin. A shard reads its files in path order.
* Fewer files than N: uncompressed files with a valid split index (``_NAME.tfindex``, see
  ``docs/index-format.md``) are cut into byte ranges on record boundaries, so that N readers
  can share even a single big file. The N - #files extra pieces go one at a time to the file
  whose pieces are currently largest; each file is then cut into equal byte ranges
  (:func:`tfrecord_io.index.split_ranges`). Compressed files and files without a valid index
  cannot be cut and stay whole. Piece ``j`` (in path, then offset order) goes to shard ``j``.
  When there are fewer pieces than shards (few uncut files, or fewer records than shards) the
  last shards get nothing: their datasets are empty, and a warning is logged.

The listing must be the same for every reader: do not shard a directory that is still being
written to.

HDFS inside TensorFlow (:func:`register_filesystems`)
----------------------------------------------------
tfrecord-io ships a TensorFlow file system plugin (built at install time against the installed
TensorFlow) that teaches TensorFlow the ``hdfs://`` and ``webhdfs://`` URLs of
:mod:`tfrecord_io.hdfs`: same NameNode addresses, ``HADOOP_CONF_DIR``, user and DataNode failover,
served by the hdfs-native client with no JVM and no libhdfs. After
:func:`register_filesystems` (which :func:`dataset` calls for HDFS inputs) everything in
TensorFlow takes these URLs: ``tf.data.TFRecordDataset``, ``tf.io.gfile``, ``tf.io.TFRecordWriter``,
checkpoints, ``model.save``. Appending to an existing HDFS file is not supported.

Reading
-------
Whole files, local or on HDFS, are read by TensorFlow's own ``tf.data.TFRecordDataset`` (C++),
HDFS files through the plugin above, with TensorFlow's default 256 KiB buffer (larger buffers
measured slower: the buffer stops fitting in the CPU cache). Byte ranges,
``on_corrupt="skip"``, ``reader="python"``, and HDFS files when the plugin is missing are read
by tfrecord-io in a ``Dataset.from_generator``:
it reads ``chunk_bytes`` (1 MiB) at a time (from HDFS through :mod:`tfrecord_io.hdfs`, which
fails over to another replica when a DataNode dies), walks the record framing, checks the
length and data CRCs (as TensorFlow does), and hands TensorFlow the chunk with the offsets and
lengths of its records, which ``tf.strings.substr`` cuts out in C++ -- no Python object per
record. The elements are the same either way: scalar ``tf.string`` tensors, in file order (and
range order) within a shard, unless ``num_parallel_reads`` interleaves files.

Damaged data raises (TensorFlow's ``DataLossError`` for files read natively, a
``tf.errors.OpError`` carrying the :class:`~tfrecord_io.errors.CorruptRecordError` message for the
others), or with ``on_corrupt="skip"`` (our reader only, so it forces ``reader="python"``) is
skipped with a warning.

Cost: for 1 KB records on the 2-core development machine (``bench/tf_hdfs.py``), TensorFlow
reading local disk spends 1.65 CPU µs per record; reading ``hdfs://`` through the plugin 3.34
(of which 1.96 is the hdfs-native client and the DataNodes moving the bytes), tfrecord-io's Python
reader 3.81. Spare cores hide part of it (reading runs in background threads); to go faster,
shard the input over more reader processes (``num_shards``). Larger records cost less per byte.
``num_parallel_reads`` interleaves files through tf.data's parallel interleave, which costs more
per record than it saves unless records are large or reads are slow.

With ``tf.distribute``, pass ``num_shards=input_context.num_input_pipelines`` and
``shard_index=input_context.input_pipeline_id`` and turn tf.data's own auto-sharding off
(``tf.data.experimental.AutoShardPolicy.OFF``), since the dataset is already sharded.

Only this module imports TensorFlow, and only when a function that needs it is called:
:func:`list_files`, :func:`shard_plan` and :class:`Piece` work without it.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import heapq
import logging
import os
import posixpath
import queue
import re
import struct
import threading
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, Union

import crc32c

from tfrecord_io import _compression, _tf_filesystem
from tfrecord_io import index as _index
from tfrecord_io import records as _records
from tfrecord_io.errors import (
    CorruptRecordError,
    PluginNotBuiltError,
    SchemaError,
    TFRecordError,
)

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

__all__ = [
    "InputNotFoundError",
    "Piece",
    "list_files",
    "shard_plan",
    "dataset",
    "register_filesystems",
    "infer_features",
    "parse_examples",
]

log = logging.getLogger(__name__)

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]

#: Default number of bytes tfrecord-io's reader reads and hands to TensorFlow at a time.
DEFAULT_CHUNK_BYTES = 1 << 20
#: Default number of records :func:`parse_examples` looks at to infer a feature spec.
DEFAULT_SAMPLE = 1000

_GLOB_CHARS = re.compile(r"[*?\[]")
_HEADER = 12  # uint64 length + uint32 masked CRC of the length
_FRAMING = 16  # header + uint32 masked CRC of the data
_MASK_DELTA = 0xA282EAD8
_NO_END = 1 << 63
_unpack_header = struct.Struct("<QI").unpack_from
_crc = crc32c.crc32c
# Errors a damaged GZIP/ZLIB stream raises while being read.
_DECOMPRESSION_ERRORS = (zlib.error, EOFError)
_TF_COMPRESSION = {
    _compression.NONE: "",
    _compression.GZIP: "GZIP",
    _compression.ZLIB: "ZLIB",
}


class InputNotFoundError(TFRecordError, FileNotFoundError):
    """A local input path does not exist, or a glob matches no file."""


@dataclass(frozen=True)
class Piece:
    """One unit of reading: a whole file, or a byte range of an uncompressed indexed file.

    Attributes:
        path: local path or ``hdfs://`` / ``webhdfs://`` URL.
        compression: ``"none"``, ``"gzip"`` or ``"zlib"``.
        start: byte offset of the first record (0 for a whole file).
        end: end of the range (exclusive: the records starting in ``[start, end)``), or None for
            a whole file.
        size: bytes covered: the file's size for a whole file, ``end - start`` for a range.
    """

    path: str
    compression: str
    start: int = 0
    end: int | None = None
    size: int = 0

    @property
    def whole(self) -> bool:
        """Whether the piece is a whole file."""
        return self.start == 0 and self.end is None

    @property
    def remote(self) -> bool:
        """Whether the piece lives on HDFS."""
        return _records._classify(self.path)[0] == "hdfs"


@dataclass(frozen=True)
class _File:
    path: str
    size: int


# --------------------------------------------------------------------------------------------
# Listing


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _as_list(paths: Paths) -> list[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        items: Iterable[Any] = [paths]
    else:
        items = paths
    out = []
    for p in items:
        name = os.fspath(p)
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        if not name:
            raise ValueError("an input path is empty")
        out.append(name)
    if not out:
        raise ValueError("no input paths given")
    return out


def _local_walk(root: str) -> Iterator[_File]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
        for name in filenames:
            if not _hidden(name):
                path = os.path.join(dirpath, name)
                yield _File(path, os.path.getsize(path))


def _list_local(given: str, path: str) -> list[_File]:
    if _GLOB_CHARS.search(path):
        matches = [m for m in _glob.glob(path) if not _hidden(os.path.basename(m))]
        if not matches:
            raise InputNotFoundError(f"no file matches {given!r}")
        out: list[_File] = []
        for m in matches:
            if os.path.isdir(m):
                out.extend(_local_walk(m))
            else:
                out.append(_File(m, os.path.getsize(m)))
        return out
    if os.path.isdir(path):
        found = list(_local_walk(path))
        if not found:
            log.warning("%s holds no data files (names starting with _ or . are skipped)", given)
        return found
    try:
        return [_File(path, os.path.getsize(path))]
    except FileNotFoundError:
        raise InputNotFoundError(f"no such file or directory: {given!r}") from None


def _hdfs_walk(url: str) -> Iterator[_File]:
    from tfrecord_io import hdfs

    for st in hdfs.ls(url):
        if _hidden(posixpath.basename(st.url.rstrip("/"))):
            continue
        if st.is_dir:
            yield from _hdfs_walk(st.url)
        else:
            yield _File(st.url, st.length)


def _list_hdfs(url: str) -> list[_File]:
    from tfrecord_io import hdfs

    if _GLOB_CHARS.search(url.partition("://")[2].partition("/")[2]):
        matches = [m for m in hdfs.glob(url) if not _hidden(posixpath.basename(m))]
        if not matches:
            raise InputNotFoundError(f"no file matches {url!r}")
        # One listing per parent directory rather than one stat per match.
        statuses: dict[str, Any] = {}
        for parent in sorted({posixpath.dirname(m) for m in matches}):
            for st in hdfs.ls(parent):
                statuses[st.url] = st
        out: list[_File] = []
        for m in matches:
            st = statuses.get(m) or hdfs.stat(m)
            if st.is_dir:
                out.extend(_hdfs_walk(m))
            else:
                out.append(_File(m, st.length))
        return out
    st = hdfs.stat(url)  # HdfsFileNotFoundError if missing
    if st.is_dir:
        found = list(_hdfs_walk(url))
        if not found:
            log.warning("%s holds no data files (names starting with _ or . are skipped)", url)
        return found
    return [_File(url, st.length)]


def _list(paths: Paths) -> list[_File]:
    files: dict[str, _File] = {}
    for given in _as_list(paths):
        kind, resolved = _records._classify(given)
        found = _list_local(given, resolved) if kind == "local" else _list_hdfs(resolved)
        for f in found:
            files.setdefault(f.path, f)
    return [files[p] for p in sorted(files)]


def list_files(paths: Paths) -> list[str]:
    """The data files named by *paths*, sorted and without duplicates (see the module docs).

    Raises:
        InputNotFoundError: a local path does not exist, or a glob matches nothing.
        HdfsError: an HDFS path does not exist (``HdfsFileNotFoundError``) or cannot be listed.
        ValueError: an empty path, or a URL scheme other than file, hdfs and webhdfs.
    """
    return [f.path for f in _list(paths)]


# --------------------------------------------------------------------------------------------
# Sharding


def _check_shards(num_shards: Any, shard_index: Any = 0) -> None:
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
        raise ValueError(f"num_shards must be a positive int, not {num_shards!r}")
    if (
        isinstance(shard_index, bool)
        or not isinstance(shard_index, int)
        or not 0 <= shard_index < num_shards
    ):
        raise ValueError(
            f"shard_index must be an int in [0, {num_shards}) for num_shards={num_shards}, "
            f"not {shard_index!r}"
        )


def _balance(sizes: Sequence[int], num_shards: int) -> list[list[int]]:
    """Deal items (by index) to shards: largest first, to the least loaded shard."""
    loads = [(0, s) for s in range(num_shards)]
    shards: list[list[int]] = [[] for _ in range(num_shards)]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        load, s = heapq.heappop(loads)
        shards[s].append(i)
        heapq.heappush(loads, (load + sizes[i], s))
    for members in shards:
        members.sort()
    return shards


def _plan(files: Sequence[_File], compression: str | None, num_shards: int) -> list[list[Piece]]:
    kinds = [_compression.resolve(compression, f.path) for f in files]
    whole = [Piece(f.path, k, 0, None, f.size) for f, k in zip(files, kinds)]
    if num_shards == 1:
        return [whole]
    if len(files) >= num_shards:
        shards = _balance([f.size for f in files], num_shards)
        return [[whole[i] for i in members] for members in shards]

    # Fewer files than shards: cut the indexed ones.
    entries: list[list[tuple[int, int]] | None] = []
    for f, kind in zip(files, kinds):
        e = None
        if kind == _compression.NONE and f.size > 0:
            e = _index.load_index(f.path, f.size)
            if e is not None and len(e) < 2:
                e = None
            if e is None:
                log.info("%s cannot be cut into byte ranges: it has no valid index", f.path)
        entries.append(e)
    counts = [1] * len(files)
    for _ in range(num_shards - len(files)):
        best = -1
        for i, e in enumerate(entries):
            if e is None or counts[i] >= len(e):
                continue
            # the file whose pieces are largest: size_i / counts_i, compared exactly
            if best < 0 or files[i].size * counts[best] > files[best].size * counts[i]:
                best = i
        if best < 0:
            break
        counts[best] += 1
    pieces: list[Piece] = []
    for i, f in enumerate(files):
        e = entries[i]
        if e is None or counts[i] == 1:
            pieces.append(whole[i])
        else:
            pieces.extend(
                Piece(f.path, _compression.NONE, start, end, end - start)
                for start, end in _index.split_ranges(e, counts[i])
            )
    return [[pieces[j]] if j < len(pieces) else [] for j in range(num_shards)]


def shard_plan(
    paths: Paths, compression: str | None = None, num_shards: int = 1
) -> list[list[Piece]]:
    """What each of *num_shards* readers reads: one list of :class:`Piece` per shard.

    Deterministic: computed from the listing (and, when files are cut, their indexes) alone.
    Every record of the input is in exactly one piece of one shard. See the module docs for the
    rules. Arguments and errors are those of :func:`dataset`.
    """
    _check_shards(num_shards)
    _compression.normalize(compression)  # ValueError for a bad name, before any listing
    return _plan(_list(paths), compression, num_shards)


# --------------------------------------------------------------------------------------------
# Datasets


def _tf() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # noqa: PLC0415 - TensorFlow is imported only when needed

    return tf


_filesystems_lock = threading.Lock()
_filesystems_error: BaseException | None = None  # why the plugin could not be registered


def register_filesystems() -> None:
    """Makes ``hdfs://`` and ``webhdfs://`` URLs work everywhere in TensorFlow, in this process.

    Loads tfrecord-io's TensorFlow file system plugin (``tf.experimental.register_filesystem_plugin``)
    and connects it to :mod:`tfrecord_io.hdfs`. Afterwards ``tf.data.TFRecordDataset``,
    ``tf.io.gfile``, ``tf.io.TFRecordWriter``, checkpoints and ``model.save`` take the URLs that
    Spark uses. Safe to call more than once, from any thread.

    Raises:
        PluginNotBuiltError: the package was installed without TensorFlow present, so the plugin
            was not compiled (reinstall with TensorFlow installed).
        TFRecordError: TensorFlow refused the plugin (e.g. another plugin, such as
            tensorflow-io's, already serves ``hdfs://`` in this process).
    """
    with _filesystems_lock:
        if _tf_filesystem.installed():
            return
        path = _tf_filesystem.plugin_path()
        tf = _tf()
        try:
            tf.experimental.register_filesystem_plugin(str(path))
        except tf.errors.OpError as e:
            raise TFRecordError(
                f"TensorFlow did not accept tfrecord-io's hdfs:// file system plugin {path}: "
                f"{e.message}"
            ) from e
        _tf_filesystem.install(path)


def _hdfs_in_tensorflow() -> bool:
    """Whether TensorFlow can read hdfs:// itself (registering the plugin on first use)."""
    global _filesystems_error
    if _filesystems_error is None:
        try:
            register_filesystems()
        except (PluginNotBuiltError, TFRecordError) as e:
            _filesystems_error = e
            log.warning("reading HDFS with tfrecord-io's Python reader (slower): %s", e)
    return _filesystems_error is None


def _open_piece(piece: Piece, stack: contextlib.ExitStack) -> Any:
    """A binary stream of the piece's (decompressed) bytes, positioned at its start."""
    stream, _, _ = _records._open_location(piece.path, "rb", stack)
    if piece.start:
        stream.seek(piece.start)
    if piece.compression != _compression.NONE:
        stream = _compression.DecompressingReader(stream)
    return stream


def _frame(
    buf: bytes,
    base: int,
    end: int,
    verify: bool,
    max_len: int,
    good_headers: dict[int, int],
    path: str,
) -> tuple[int, array, bool]:
    """Walk the record framing of ``buf`` (whose byte 0 is at offset ``base`` of the file).

    Returns ``(pos, heads, done)``: the offsets in ``buf`` of the records complete in it (each
    ends where the next begins; the last one at ``pos``), ``pos`` where the first incomplete
    record begins, and whether a record starting at or after ``end`` was reached. Header
    checksums are checked here (once per distinct length, cached in ``good_headers``); data
    checksums are not.
    """
    n = len(buf)
    limit = end - base
    stop_at = min(n - _HEADER + 1, limit)  # a header must fit, and start before the end
    pos = 0
    heads = array("q")
    add = heads.append
    header_of = good_headers.get
    unpack = _unpack_header
    while pos < stop_at:
        length, stored = unpack(buf, pos)
        if header_of(length) != stored:
            if verify:
                if _records.masked_crc32c(buf[pos:pos + 8]) != stored:
                    raise CorruptRecordError(path, base + pos, "length checksum mismatch")
                if len(good_headers) >= 4096:
                    good_headers.clear()
            if length > max_len:
                raise CorruptRecordError(
                    path,
                    base + pos,
                    f"record length {length} exceeds the maximum of {max_len} bytes "
                    "(max_record_bytes)",
                )
            if verify:
                good_headers[length] = stored
        stop = pos + _FRAMING + length
        if stop > n:
            break
        add(pos)
        pos = stop
    return pos, heads, pos >= limit


_LE32 = None


def _check_data_crcs(buf: bytes, base: int, starts: Any, lengths: Any, path: str) -> None:
    """Raise CorruptRecordError for the first record of the batch whose data CRC is wrong."""
    import numpy as np  # noqa: PLC0415

    global _LE32
    if _LE32 is None:
        _LE32 = np.array([1, 1 << 8, 1 << 16, 1 << 24], dtype=np.uint64)
    stops = starts + lengths
    view = memoryview(buf)
    crcs = np.fromiter(
        map(_crc, map(view.__getitem__, map(slice, starts.tolist(), stops.tolist()))),
        dtype=np.uint64,
        count=len(starts),
    )
    masked = (((crcs >> 15) | (crcs << 17)) + _MASK_DELTA) & 0xFFFFFFFF
    raw = np.frombuffer(buf, dtype=np.uint8)
    stored = raw[stops[:, None] + np.arange(4)].astype(np.uint64) @ _LE32
    bad = np.flatnonzero(masked != stored)
    if len(bad):
        first = int(bad[0])
        raise CorruptRecordError(
            path, base + int(starts[first]) - _HEADER, "data checksum mismatch"
        )


class _ReadAhead:
    """Reads a stream in a background thread, up to ``depth`` chunks ahead of its consumer.

    HDFS clients, file reads and zlib release the GIL while they work, so reading (and
    decompressing) overlaps with the framing done by the consumer. The thread reads ``limit``
    bytes (None: to the end) in chunks of ``chunk`` bytes; anything past the limit is read on
    demand by the consumer itself, once the thread is done.
    """

    def __init__(self, piece: Piece, read: Any, limit: int | None, chunk: int, depth: int = 2):
        self._piece = piece
        self._read = read
        self._limit = limit
        self._chunk = chunk
        self._queue: queue.Queue[Any] = queue.Queue(depth)
        self._stop = threading.Event()
        self._produced = 0
        self._exhausted = False
        self._thread = threading.Thread(
            target=self._run, name="tfrecord-io-read-ahead", daemon=True
        )
        self._thread.start()

    def _read_chunk(self, size: int) -> bytes:
        try:
            data = self._read(size)
        except _DECOMPRESSION_ERRORS as exc:
            raise CorruptRecordError(
                self._piece.path,
                self._piece.start + self._produced,
                f"damaged {self._piece.compression} stream: {exc}",
            ) from exc
        self._produced += len(data)
        return data

    def _run(self) -> None:
        item: Any = None
        try:
            while not self._stop.is_set():
                size = self._chunk
                if self._limit is not None:
                    size = min(size, self._limit - self._produced)
                    if size <= 0:
                        break
                data = self._read_chunk(size)
                if not data:
                    break
                self._put(data)
        except BaseException as exc:  # handed to the consumer
            item = exc
        self._put(item)  # None: done

    def _put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def read_some(self, n: int) -> bytes:
        """At least ``n`` bytes (fewer only at the end of the stream): the next chunk(s)."""
        parts = []
        have = 0
        while have < max(n, 1):
            if not self._exhausted:
                item = self._queue.get()
                if item is None:
                    self._exhausted = True
                    self._thread.join()
                    continue
                if isinstance(item, BaseException):
                    self._exhausted = True
                    raise item
                data = item
            else:
                data = self._read_chunk(n - have)
            if not data:
                break
            parts.append(data)
            have += len(data)
        if len(parts) == 1:
            return parts[0]
        return b"".join(parts)

    def close(self) -> None:
        """Stop reading. Waits a little for a read in progress (a slow one is abandoned: the
        thread is a daemon and its result is dropped)."""
        self._stop.set()
        while True:  # unblock a pending put
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout=5.0)


def _truncation(path: str, base: int, tail: bytes) -> CorruptRecordError:
    if len(tail) < _HEADER:
        reason = f"truncated record: the file ends {len(tail)} bytes into its header"
    else:
        length = _unpack_header(tail, 0)[0]
        have = len(tail) - _HEADER
        reason = (
            f"truncated record: {length} data bytes announced, the file ends {have} bytes "
            "into them"
            if have < length
            else "truncated record: the file ends inside the data checksum"
        )
    return CorruptRecordError(path, base, reason)


def _chunks(
    piece: Piece, verify: bool, chunk_bytes: int
) -> Iterator[tuple[bytes, Any, Any]]:
    """The records of a piece as ``(buffer, starts, lengths)``: runs of whole records read
    together (about ``chunk_bytes`` at a time), with the offsets and lengths of their data in
    the buffer, as int64 arrays; TensorFlow cuts the records out with ``tf.strings.substr``.

    Raises CorruptRecordError (path, offset, reason) for damaged data, as
    :class:`tfrecord_io.records.RecordReader` does under ``on_corrupt="fail"``.
    """
    import numpy as np  # noqa: PLC0415

    end = _NO_END if piece.end is None else piece.end
    max_len = _records.DEFAULT_MAX_RECORD_BYTES
    good_headers: dict[int, int] = {}
    with contextlib.ExitStack() as stack:
        stream = _open_piece(piece, stack)
        limit = None if piece.end is None else piece.end - piece.start
        source = _ReadAhead(piece, stream.read, limit, chunk_bytes)
        stack.callback(source.close)  # before the stream is closed
        base = piece.start  # file offset of buf[0]
        tail = b""
        while True:
            need = 1
            if len(tail) >= _HEADER:  # enough to complete the record in progress
                need = min(_unpack_header(tail, 0)[0], max_len + 1) + _FRAMING - len(tail)
            elif tail:
                need = _HEADER - len(tail)
            data = source.read_some(need)
            buf = tail + data if tail else data
            pos, heads, done = _frame(buf, base, end, verify, max_len, good_headers, piece.path)
            if heads:
                h = np.frombuffer(heads, dtype=np.int64)
                lengths = np.empty_like(h)
                lengths[:-1] = h[1:] - h[:-1]
                lengths[-1] = pos - h[-1]
                lengths -= _FRAMING
                starts = h + _HEADER
                if verify:
                    _check_data_crcs(buf, base, starts, lengths, piece.path)
                yield buf, starts, lengths
            if done:
                return
            tail = buf[pos:]
            base += pos
            if not data:
                if tail:
                    raise _truncation(piece.path, base, tail)
                return


def _skipping_chunks(
    piece: Piece, verify: bool, chunk_bytes: int
) -> Iterator[tuple[bytes, Any, Any]]:
    """Like :func:`_chunks`, through RecordReader with ``on_corrupt="skip"``."""
    import numpy as np  # noqa: PLC0415

    with _records.RecordReader(
        piece.path,
        piece.compression,
        verify,
        start=piece.start,
        end=piece.end,
        on_corrupt="skip",
    ) as reader:
        it = iter(reader)
        while True:
            batch: list[bytes] = []
            size = 0
            for record in it:
                batch.append(record)
                size += len(record)
                if size >= chunk_bytes:
                    break
            if not batch:
                return
            lengths = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
            starts = np.cumsum(lengths) - lengths
            yield b"".join(batch), starts, lengths


def _native_dataset(
    tf: Any, pieces: Sequence[Piece], parallel: int, buffer_size: int | None
) -> Any:
    names = [_records._classify(p.path)[1] for p in pieces]
    types = [_TF_COMPRESSION[p.compression] for p in pieces]
    if len(set(types)) == 1:
        return tf.data.TFRecordDataset(
            names,
            compression_type=types[0],
            buffer_size=buffer_size,
            num_parallel_reads=parallel if parallel > 1 else None,
        )
    files = tf.data.Dataset.from_tensor_slices((names, types))

    def read(name: Any, kind: Any) -> Any:
        return tf.data.TFRecordDataset(name, kind, buffer_size)

    if parallel == 1:
        return files.flat_map(read)
    return files.interleave(
        read,
        cycle_length=parallel,
        block_length=1,
        num_parallel_calls=parallel,
        deterministic=True,
    )


def _python_dataset(
    tf: Any,
    pieces: Sequence[Piece],
    parallel: int,
    verify: bool,
    on_corrupt: str,
    chunk_bytes: int,
) -> Any:
    pieces = list(pieces)
    make_chunks = _skipping_chunks if on_corrupt == "skip" else _chunks
    signature = (
        tf.TensorSpec(shape=[], dtype=tf.string),
        tf.TensorSpec(shape=[None], dtype=tf.int64),
        tf.TensorSpec(shape=[None], dtype=tf.int64),
    )

    def generate(i: Any) -> Iterator[tuple[bytes, Any, Any]]:
        return make_chunks(pieces[int(i)], verify, chunk_bytes)

    def one(i: Any) -> Any:
        return tf.data.Dataset.from_generator(generate, args=(i,), output_signature=signature)

    if len(pieces) == 1:
        chunks = one(0)
    else:
        ids = tf.data.Dataset.range(len(pieces))
        if parallel > 1:
            chunks = ids.interleave(
                one,
                cycle_length=parallel,
                block_length=1,
                num_parallel_calls=parallel,
                deterministic=True,
            )
        else:
            chunks = ids.flat_map(one)
    # The generator runs ahead in a tf.data thread; records are cut out of each chunk in C++.
    return (
        chunks.prefetch(2)
        .map(lambda buf, starts, lengths: tf.strings.substr(buf, starts, lengths))
        .unbatch()
    )


def dataset(
    paths: Paths,
    compression: str | None = None,
    num_shards: int = 1,
    shard_index: int = 0,
    *,
    num_parallel_reads: int | None = None,
    verify: bool = True,
    on_corrupt: str = "fail",
    reader: str = "auto",
    buffer_size: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of the serialized records (scalar ``tf.string``) of TFRecord files.

    Args:
        paths: a local path, ``file://``, ``hdfs://`` or ``webhdfs://`` URL, glob or directory,
            or a list of them (see the module docs).
        compression: None to detect per file from its name, or ``"gzip"``, ``"zlib"``,
            ``"none"`` (any letter case) for every file.
        num_shards: how many readers share the input.
        shard_index: which of them this is, in ``[0, num_shards)``.
        num_parallel_reads: read this many pieces at once, interleaving their records (in
            blocks of one record for files TensorFlow reads, of one chunk for the others).
            None or 1: one piece after the other, in order.
        verify: check the CRCs of records read by tfrecord-io's reader (TensorFlow's reader
            always checks them).
        on_corrupt: ``"fail"`` or ``"skip"`` (skip damaged records with a warning; forces
            ``reader="python"``).
        reader: ``"auto"`` (TensorFlow's reader for whole files, local or on HDFS;
            tfrecord-io's for byte ranges) or ``"python"`` (tfrecord-io's for everything).
        buffer_size: read buffer, in bytes, of ``tf.data.TFRecordDataset`` (None: its default,
            256 KiB, local or HDFS).
        chunk_bytes: how many bytes tfrecord-io's reader reads and hands to TensorFlow at a
            time (a record larger than this is read whole).

    Returns:
        The dataset of this shard's records. An empty one if the shard has nothing to read.

    Raises:
        InputNotFoundError, HdfsError: a path is missing or cannot be listed (at once, not when
            the dataset is iterated).
        ValueError: bad arguments.
    """
    _check_shards(num_shards, shard_index)
    if on_corrupt not in ("fail", "skip"):
        raise ValueError(f"on_corrupt must be 'fail' or 'skip', not {on_corrupt!r}")
    if reader not in ("auto", "python"):
        raise ValueError(f"reader must be 'auto' or 'python', not {reader!r}")
    if num_parallel_reads is not None and (
        not isinstance(num_parallel_reads, int) or num_parallel_reads < 1
    ):
        raise ValueError(
            f"num_parallel_reads must be None or a positive int, not {num_parallel_reads!r}"
        )
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int) or chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be a positive int, not {chunk_bytes!r}")
    parallel = num_parallel_reads or 1

    plan = shard_plan(paths, compression, num_shards)
    pieces = plan[shard_index]
    tf = _tf()
    if not pieces:
        filled = sum(1 for shard in plan if shard)
        if filled:
            log.warning(
                "shard %d of %d gets no data: the input only makes %d piece(s) (compressed "
                "files and files without a split index cannot be cut)",
                shard_index,
                num_shards,
                filled,
            )
        return tf.data.Dataset.from_tensor_slices(tf.constant([], dtype=tf.string))

    native_ok = reader == "auto" and on_corrupt == "fail"
    native_remote = native_ok and any(p.remote and p.whole for p in pieces) and _hdfs_in_tensorflow()

    def is_native(p: Piece) -> bool:
        return native_ok and p.whole and (native_remote or not p.remote)

    # Consecutive pieces read the same way make one dataset; the datasets are concatenated.
    parts = []
    run: list[Piece] = []
    for p in pieces:
        if run and is_native(run[0]) != is_native(p):
            parts.append(run)
            run = []
        run.append(p)
    parts.append(run)
    result = None
    for run in parts:
        if is_native(run[0]):
            ds = _native_dataset(tf, run, parallel, buffer_size)
        else:
            ds = _python_dataset(
                tf, run, parallel, verify, on_corrupt, chunk_bytes
            )
        result = ds if result is None else result.concatenate(ds)
    return result


# --------------------------------------------------------------------------------------------
# Examples


def _sample_records(records: Any, sample: int) -> list[bytes]:
    tf = _tf()
    if isinstance(records, tf.data.Dataset):
        spec = records.element_spec
        scalar_strings = (
            isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string and spec.shape.rank == 0
        )
        if not scalar_strings:
            raise ValueError(
                f"expected a dataset of scalar tf.string records, not elements {spec}"
            )
        return [r.numpy() for r in records.take(sample)]
    out = []
    for r in islice(records, sample):
        out.append(r.numpy() if hasattr(r, "numpy") else bytes(r))
    return out


def infer_features(records: Any, sample: int = DEFAULT_SAMPLE) -> dict[str, Any]:
    """Infer a ``tf.io`` feature spec from the first *sample* serialized ``tf.train.Example``s.

    The types are :func:`tfrecord_io.example.infer_schema`'s: ``int64_list`` -> ``tf.int64``,
    ``float_list`` -> ``tf.float32``, ``bytes_list`` -> ``tf.string``. The shapes:

    * present with the same number of values L in every sampled record:
      ``FixedLenFeature([], dtype)`` for L = 1, ``FixedLenFeature([L], dtype)`` for L > 1;
    * otherwise (lengths vary, absent from some records, or no values):
      ``RaggedFeature(dtype, row_splits_dtype=tf.int64)`` (an absent feature reads as empty).

    A feature that never has a value kind in the sample is left out (with a warning): its type
    is unknown. A record later in the data that breaks the inferred spec (a fixed-length feature
    with another length, or missing) fails parsing: pass an explicit spec when the sample is not
    representative.

    Args:
        records: a dataset of scalar ``tf.string`` records, or an iterable of bytes.
        sample: how many records to look at.

    Raises:
        SchemaError: no records, a record that is not an Example, or a feature whose value
            kind differs between records.
    """
    from tfrecord_io import example as _example

    tf = _tf()
    if not isinstance(sample, int) or sample < 1:
        raise ValueError(f"sample must be a positive int, not {sample!r}")
    recs = _sample_records(records, sample)
    if not recs:
        raise SchemaError("no records to infer a feature spec from: pass `features`")
    schema = _example.infer_schema(recs, "Example")
    lengths: dict[str, set[int]] = {name: set() for name in schema.names}
    present = dict.fromkeys(schema.names, 0)
    for r in recs:
        for name, values in _example.decode_example(r).items():
            lengths[name].add(len(values))
            present[name] += 1
    features: dict[str, Any] = {}
    for field in schema:
        name, t = field.name, field.type
        leaf = t.value_type if hasattr(t, "value_type") else t
        if leaf == _pa().null():
            log.warning("feature %r has no values in the sampled records: left out", name)
            continue
        if leaf == _pa().int64():
            dtype = tf.int64
        elif leaf == _pa().float32():
            dtype = tf.float32
        else:
            dtype = tf.string
        sizes = lengths[name]
        if present[name] == len(recs) and len(sizes) == 1 and next(iter(sizes)) > 0:
            n = next(iter(sizes))
            features[name] = tf.io.FixedLenFeature([] if n == 1 else [n], dtype)
        else:
            features[name] = tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)
    return features


def _pa() -> Any:
    import pyarrow  # noqa: PLC0415

    return pyarrow


def parse_examples(
    dataset: tf.data.Dataset,
    features: Mapping[str, Any] | None = None,
    *,
    batch_size: int | None = None,
    drop_remainder: bool = False,
    sample: int = DEFAULT_SAMPLE,
    num_parallel_calls: int | None = None,
) -> tf.data.Dataset:
    """Parse a dataset of serialized ``tf.train.Example``s into dicts of tensors.

    Args:
        dataset: scalar ``tf.string`` records, e.g. from :func:`dataset`.
        features: a ``tf.io`` feature spec (``{name: FixedLenFeature | VarLenFeature |
            RaggedFeature | ...}``); None to infer one from the first *sample* records with
            :func:`infer_features` (which reads them once, eagerly).
        batch_size: None: one dict per record (``tf.io.parse_single_example``). A number:
            batch first and parse each batch at once (``tf.io.parse_example``, much faster);
            the dicts then hold batched tensors (ragged for ragged features).
        drop_remainder: with *batch_size*, drop a last smaller batch.
        sample: records to look at when inferring the spec.
        num_parallel_calls: parallelism of the parsing map (None: ``tf.data.AUTOTUNE``). The
            order of the elements is kept.

    Returns:
        A dataset of ``{name: tensor}`` dicts.
    """
    tf = _tf()
    spec = dict(features) if features is not None else infer_features(dataset, sample)
    if not spec:
        raise SchemaError("the feature spec is empty: nothing to parse")
    calls = tf.data.AUTOTUNE if num_parallel_calls is None else num_parallel_calls
    if batch_size is None:
        return dataset.map(
            lambda s: tf.io.parse_single_example(s, spec),
            num_parallel_calls=calls,
            deterministic=True,
        )
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be None or a positive int, not {batch_size!r}")
    return dataset.batch(batch_size, drop_remainder=drop_remainder).map(
        lambda s: tf.io.parse_example(s, spec),
        num_parallel_calls=calls,
        deterministic=True,
    )
