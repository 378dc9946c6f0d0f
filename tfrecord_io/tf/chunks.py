"""tfrecord-io's reader for TensorFlow: records of a piece as chunks that TensorFlow cuts up.

Used for byte ranges, ``on_corrupt="skip"``, ``reader="python"`` and HDFS files when the
TensorFlow plugin is missing. It reads ``chunk_bytes`` at a time in a background thread (from
HDFS through :mod:`tfrecord_io.hdfs`, which fails over to another replica when a DataNode
dies), walks the record framing, checks the length and data CRCs (as TensorFlow does), and
yields each chunk with the offsets and lengths of its records, which ``tf.strings.substr`` cuts
out in C++ -- no Python object per record. No TensorFlow import here.
"""

from __future__ import annotations

import contextlib
import queue
import struct
import threading
import zlib
from array import array
from collections.abc import Iterator
from typing import Any

import crc32c

from tfrecord_io import _compression, fs
from tfrecord_io import records as _records
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.sharding import Piece

__all__ = ["DEFAULT_CHUNK_BYTES", "read_chunks", "read_chunks_skipping"]

#: Default number of bytes tfrecord-io's reader reads and hands to TensorFlow at a time.
DEFAULT_CHUNK_BYTES = 1 << 20

_HEADER = 12  # uint64 length + uint32 masked CRC of the length
_FRAMING = 16  # header + uint32 masked CRC of the data
_MASK_DELTA = 0xA282EAD8
_NO_END = 1 << 63
_unpack_header = struct.Struct("<QI").unpack_from
_crc = crc32c.crc32c
# Errors a damaged GZIP/ZLIB stream raises while being read.
_DECOMPRESSION_ERRORS = (zlib.error, EOFError)


def _open_piece(piece: Piece, stack: contextlib.ExitStack) -> Any:
    """A binary stream of the piece's (decompressed) bytes, positioned at its start."""
    stream: Any = stack.enter_context(fs.open(piece.path, "rb"))
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


def read_chunks(
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


def read_chunks_skipping(
    piece: Piece, verify: bool, chunk_bytes: int
) -> Iterator[tuple[bytes, Any, Any]]:
    """Like :func:`read_chunks`, through RecordReader with ``on_corrupt="skip"``."""
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
