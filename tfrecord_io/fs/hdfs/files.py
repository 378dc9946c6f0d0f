"""The file objects that :func:`tfrecord_io.fs.open` returns for HDFS URLs: :class:`HdfsReader`
(seekable, streaming, reopening a broken stream at the same offset) and :class:`HdfsWriter`
(buffered)."""

from __future__ import annotations

import contextlib
import io
import logging
import time
from typing import Any

from tfrecord_io.errors import HdfsError
from tfrecord_io.fs.backend import PROBE_SIZE
from tfrecord_io.fs.hdfs.client import CHUNK, ChunkStream, Client
from tfrecord_io.fs.hdfs.translation import first_line, translate
from tfrecord_io.fs.hdfs.urls import Location

__all__ = ["HdfsReader", "HdfsWriter"]

_log = logging.getLogger(__name__)

# A read stream that breaks (a DataNode died, ...) is reopened at the same offset, up to this many
# times within this many seconds. WebHDFS needs the room: the NameNode keeps redirecting some
# reads to a dead DataNode until its heartbeats expire.
_READ_RETRIES = 10
_READ_RETRY_SECONDS = 30.0
_WRITE_BUFFER = 1 << 20  # small writes are gathered up to this before going to the client


class HdfsReader(io.BufferedIOBase):
    """A seekable binary reader over one HDFS file (what :func:`tfrecord_io.fs.open` gives for
    ``"rb"``).

    A read from the start of the file streams to its end, so sequential reads of any size are
    cheap. A jump (a read away from the stream, or a file's first read away from byte 0) streams
    only the bytes that read asks for, at least :data:`~tfrecord_io.fs.backend.PROBE_SIZE`: a
    DataNode then sends about a mebibyte for a random read, not what its socket and the client's
    packet queue hold of the rest of the block. Reading on from the end of those bytes streams
    to the end of the file again. A stream broken by a failing DataNode is reopened at the same
    offset, for the rest of its range (other replicas serve it).
    """

    def __init__(self, loc: Location, client: Client, length: int, offset: int = 0) -> None:
        super().__init__()
        self._loc = loc
        self._client = client
        self._length = length
        self._pos = min(max(0, offset), length)
        self._buf = b""  # bytes at file offset _buf_start
        self._buf_start = self._pos
        self._stream: ChunkStream | None = None
        self._stream_pos = self._pos  # file offset of the next byte the stream yields
        # Where the stream's range ends: the file's end for a scan; None after a jump, until the
        # read that opens the stream sets it (see _plan_range).
        self._stream_end: int | None = length if self._pos == 0 else None
        self._want = 0  # bytes the read in progress still asks for
        self._handle: Any = None  # the client's reader handle, reused by successive streams

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
                        self._handle = self._client.reader(self._loc.path)
                    self._stream = self._client.open_stream(
                        self._handle, self._stream_pos, self._plan_range() - self._stream_pos
                    )
                chunk = next(self._stream)
            except StopIteration:
                self._drop_stream()
                if self._stream_pos == self._stream_end:
                    continue  # a jump's bytes are read: reading on streams to the end
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
                    raise translate(e, self.name, "read", self._loc) from e
                attempt += 1
                _log.warning(
                    "read of %s broke at byte %d (%s); reopening, attempt %d of %d",
                    self.name, self._stream_pos, first_line(e), attempt, _READ_RETRIES,
                )
                time.sleep(min(0.2 * 2**attempt, 2.0))
                continue
            if chunk:
                self._stream_pos += len(chunk)
                return bytes(chunk) if not isinstance(chunk, bytes) else chunk

    def _plan_range(self) -> int:
        """The end of the range of a stream to open at ``_stream_pos``: the rest of a broken
        stream's range; after a jump, what the read asks for (at least a probe); the file's end
        when reading on from the end of a jump's bytes, or scanning from the start."""
        if self._stream_end is None:
            self._stream_end = self._stream_pos + max(self._want, PROBE_SIZE)
        elif self._stream_pos >= self._stream_end:
            self._stream_end = self._length
        self._stream_end = min(self._stream_end, self._length)
        return self._stream_end

    def _position_stream(self) -> None:
        """Makes the stream (or the buffer) continue at ``_pos``."""
        buf_end = self._buf_start + len(self._buf)
        if self._buf_start <= self._pos <= buf_end and buf_end == self._stream_pos:
            return
        skip = self._pos - self._stream_pos
        in_range = self._stream_end is not None and self._pos < self._stream_end
        if self._stream is not None and in_range and 0 <= skip < CHUNK * 16:
            # Short forward skip: cheaper to read through than to open a new stream.
            self._buf, self._buf_start = b"", self._stream_pos
            while self._stream_pos < self._pos:
                chunk = self._next_chunk()
                if not chunk:
                    break
                self._buf, self._buf_start = chunk, self._stream_pos - len(chunk)
            return
        self._drop_stream()
        if self._pos != self._stream_end:
            self._stream_end = None  # a jump; reading on from a range's end keeps streaming
        self._buf, self._buf_start = b"", self._pos
        self._stream_pos = self._pos

    def _take_buffered(self, n: int) -> bytes:
        start = self._pos - self._buf_start
        if start < 0 or start >= len(self._buf):
            return b""
        piece = self._buf[start : start + n]
        self._pos += len(piece)
        return piece

    def start(self, size: int = 0) -> None:
        """Starts streaming at the current position before the first read, which then finds its
        bytes buffered: the first chunk, or the first *size* bytes when that is more (the size of
        the read to come). hdfs-native streams only once asked for a chunk, and ahead on its own
        after that, but its chunks still cross into Python one by one: reading *size* bytes here,
        on another thread, spares the first read of a file opened ahead that wait. A failure is
        left to the next read, which retries and reports it. Does nothing when the bytes at the
        current position are buffered already."""
        self._check_open()
        if 0 <= self._pos - self._buf_start < len(self._buf):
            return
        self._want = size
        self._position_stream()
        parts: list[bytes] = []
        got = 0
        try:
            while not parts or got < size:
                chunk = self._next_chunk()
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
        except Exception:  # noqa: BLE001 - the next read tries again and says why
            pass
        if parts:
            self._buf = parts[0] if len(parts) == 1 else b"".join(parts)
            self._buf_start = self._stream_pos - got

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
            self._want = n
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
            self._want = want - total
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

    def __init__(self, loc: Location, handle: Any) -> None:
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
            raise translate(e, self.name, "write", self._loc) from e

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
            try:
                self._flush_pending()
            except BaseException:
                # The client's file is closed all the same (its lease and connection released);
                # the failed write is what the caller hears of.
                with contextlib.suppress(Exception):
                    self._handle.close()
                raise
            try:
                self._handle.close()
            except Exception as e:
                raise translate(e, self.name, "close", self._loc) from e
        finally:
            super().close()

    def __repr__(self) -> str:
        return f"<HdfsWriter {self.name} written={self._written}>"
