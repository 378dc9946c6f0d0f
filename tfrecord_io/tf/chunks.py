"""tfrecord-io's reader for TensorFlow: records of a piece as chunks that TensorFlow cuts up.

Used for byte ranges, ``on_corrupt="skip"``, ``reader="python"`` and HDFS files when the
TensorFlow plugin is missing. It reads ``chunk_bytes`` at a time in a background thread (from
HDFS through :mod:`tfrecord_io.fs`, which fails over to another replica when a DataNode
dies), walks the record framing, checks the length and data CRCs (as TensorFlow does), and
yields each chunk with the offsets and lengths of its records, which ``tf.strings.substr`` cuts
out in C++ -- no Python object per record. No TensorFlow import here.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Any

from tfrecord_io import compression as codec
from tfrecord_io import framing, fs
from tfrecord_io.compression import DECOMPRESSION_ERRORS
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.records import RecordReader
from tfrecord_io.sharding import Piece

__all__ = ["DEFAULT_CHUNK_BYTES", "read_chunks", "read_chunks_skipping"]

#: Default number of bytes tfrecord-io's reader reads and hands to TensorFlow at a time.
DEFAULT_CHUNK_BYTES = 1 << 20

# How long closing a piece's reader waits for a read of its read-ahead thread in progress.
_CLOSE_WAIT = 5.0


def _open_piece(piece: Piece, stack: contextlib.ExitStack) -> Any:
    """A binary stream of the piece's (decompressed) bytes, positioned at its start."""
    stream: Any = stack.enter_context(fs.open(piece.path, "rb"))
    if piece.start:
        stream.seek(piece.start)
    if piece.compression != codec.NONE:
        stream = codec.DecompressingReader(stream)
    return stream


class _ReadAhead:
    """Reads a stream in a background thread, up to ``depth`` chunks ahead of its consumer.

    HDFS clients, file reads and zlib release the GIL while they work, so reading (and
    decompressing) overlaps with the framing done by the consumer. The thread reads ``limit``
    bytes (None: to the end) in chunks of ``chunk`` bytes; anything past the limit is read on
    demand by the consumer itself, once the thread is done.
    """

    def __init__(self, read: Any, limit: int | None, chunk: int, depth: int = 2):
        self._read = read
        self._limit = limit
        self._chunk = chunk
        self._queue: queue.Queue[Any] = queue.Queue(depth)
        self._stop = threading.Event()
        self._produced = 0
        self._exhausted = False
        self._error: BaseException | None = None
        # Under _lock: whether the thread may still read, and what to call once it stops (set
        # by close when it could not wait for a slow read: the stream's own closing).
        self._lock = threading.Lock()
        self._reading = True
        self._release: Any = None
        self._thread = threading.Thread(
            target=self._run, name="tfrecord-io-read-ahead", daemon=True
        )
        self._thread.start()

    def _read_chunk(self, size: int) -> bytes:
        data = self._read(size)
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
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            item = exc
        self._put(item)  # None: done
        with self._lock:
            self._reading = False
            release, self._release = self._release, None
        if release is not None:
            release()

    def _put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def read_some(self, n: int) -> bytes:
        """At least ``n`` bytes (fewer only at the end of the stream): the next chunk(s)."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
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
                    if not parts:
                        raise item
                    self._error = item  # the bytes read before it come first
                    break
                data = item
            else:  # a chunk at a time: a record's announced length is not trusted for memory
                data = self._read_chunk(min(n - have, self._chunk))
            if not data:
                break
            parts.append(data)
            have += len(data)
        if len(parts) == 1:
            return parts[0]
        return b"".join(parts)

    def close(self, release: Any = None) -> None:
        """Stop reading, then call *release* (which closes the stream) once no read of the
        thread is in progress. Waits a little for a read in progress; a slow one is abandoned
        (the thread is a daemon, its result dropped), and the thread calls *release* when that
        read returns: a stream is never closed under a read of another thread."""
        self._stop.set()
        while True:  # unblock a pending put
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout=_CLOSE_WAIT)
        with self._lock:
            if self._reading:
                self._release = release
                return
        if release is not None:
            release()


def _name_the_read(exc: OSError, path: str, offset: int) -> None:
    """Add to a read error (whose message, from the OS or a client library, may name neither)
    a note naming the file and the first record not read: the note is part of the message
    TensorFlow gives for an error in a ``from_generator`` dataset, and of any traceback."""
    add_note = getattr(exc, "add_note", None)  # Python 3.11 on; 3.10 raises the error as it is
    if add_note is not None:
        add_note(
            f"while reading {path}: the record at byte offset {offset} and those after it "
            "could not be read (every record before it was)"
        )


def read_chunks(
    piece: Piece, verify: bool, chunk_bytes: int
) -> Iterator[tuple[bytes, Any, Any]]:
    """The records of a piece as ``(buffer, starts, lengths)``: runs of whole records read
    together (about ``chunk_bytes`` at a time), with the offsets and lengths of their data in
    the buffer, as int64 arrays; TensorFlow cuts the records out with ``tf.strings.substr``.
    Each buffer is framed by :func:`tfrecord_io.framing.scan`.

    Raises CorruptRecordError (path, offset, reason) for damaged data, as
    :class:`tfrecord_io.records.RecordReader` does under ``on_corrupt="fail"``: every record
    before the damage comes first; in a damaged gzip/zlib stream, the error names the first
    record that could not be decompressed whole. An error reading the file (an ``OSError``)
    is raised as it is, after the records before it, with a note naming the file and the
    byte offset of the first record not read.
    """
    with contextlib.ExitStack() as stack:
        stream = _open_piece(piece, stack)
        limit = None if piece.end is None else piece.end - piece.start
        source = _ReadAhead(stream.read, limit, chunk_bytes)
        # The stream is closed once the thread's read is over (by the thread, if it is slow).
        stack.callback(lambda: source.close(stack.pop_all().close))
        base = piece.start  # stream offset of buf[0]
        tail = b""
        need = 1
        while True:
            try:
                data = source.read_some(max(need - len(tail), 1))
            except DECOMPRESSION_ERRORS as exc:
                reason = framing.damaged_stream(piece.compression, exc, len(tail))
                raise CorruptRecordError(piece.path, base, reason) from exc
            except OSError as exc:
                _name_the_read(exc, piece.path, base)
                raise
            buf = tail + data if tail else data
            frames = framing.scan(buf, base, end=piece.end, verify=verify, final=not data)
            if len(frames):
                yield buf, frames.starts, frames.lengths
            if frames.status is framing.Stop.DAMAGED:
                raise frames.error(piece.path, piece.start)
            if frames.status is framing.Stop.END:
                return
            tail = buf[frames.stop:]
            base += frames.stop
            need = frames.need


def read_chunks_skipping(
    piece: Piece, verify: bool, chunk_bytes: int
) -> Iterator[tuple[bytes, Any, Any]]:
    """Like :func:`read_chunks`, with ``on_corrupt="skip"``: the chunks of
    :meth:`tfrecord_io.records.RecordReader.chunks`, which skips damaged stretches. A read
    error gets the same note as in :func:`read_chunks`."""
    following = piece.start  # stream offset just after the last record handed out
    with RecordReader(
        piece.path,
        piece.compression,
        verify,
        start=piece.start,
        end=piece.end,
        on_corrupt="skip",
        buffer_size=chunk_bytes,
    ) as reader:
        chunks = reader.chunks()
        while True:
            try:
                chunk = next(chunks, None)
            except OSError as exc:
                _name_the_read(exc, piece.path, following)
                raise
            if chunk is None:
                return
            if len(chunk.offsets):
                following = int(chunk.offsets[-1]) + framing.FRAMING_BYTES + int(chunk.lengths[-1])
            yield chunk.buffer, chunk.starts, chunk.lengths
