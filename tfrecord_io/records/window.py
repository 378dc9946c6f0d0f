"""A window over a byte stream, grown only as far as the record being framed needs: what
:class:`tfrecord_io.records.RecordReader` scans. Also the two stream helpers it opens files
with (:func:`bytes_left`, :func:`skip_to`)."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable
from typing import Any

from tfrecord_io import compression as codec

__all__ = ["StreamWindow", "bytes_left", "skip_to"]

_MAX_READ = 16 << 20  # the most asked of the stream in one read() call
_SKIP_CHUNK = 1 << 20  # bytes read and dropped at a time when a stream cannot seek


class StreamWindow:
    """The next bytes of a stream, in a buffer read a chunk at a time.

    ``buf[pos:]`` are the next unconsumed bytes and ``buf[0]`` is at byte offset ``base`` of
    the (uncompressed) stream; the reader advances ``pos`` as it consumes records and calls
    :meth:`fill` when a record does not fit. A gzip/zlib stream that cannot be decompressed
    further ends the data there, with the cause kept in ``error``.

    Args:
        read: the stream's ``read``.
        base: the stream offset of the first byte *read* returns.
        left: how many bytes the stream holds, if known (a regular file), else None.
        chunk_size: how much to read at a time.
    """

    __slots__ = ("buf", "pos", "base", "error", "_read", "_chunk", "_next", "_next_pos",
                 "_eof", "_left")

    def __init__(self, read: Callable[[int], bytes], *, base: int = 0, left: int | None = None,
                 chunk_size: int = 1 << 20) -> None:
        self.buf = b""
        self.pos = 0
        self.base = base
        self.error: BaseException | None = None
        self._read = read
        self._chunk = chunk_size
        # self._next[self._next_pos:], if any, are the bytes that follow self.buf (the rest of
        # a chunk whose head was joined to the tail of the previous one).
        self._next: bytes | None = None
        self._next_pos = 0
        self._eof = False
        self._left = left  # bytes the stream still holds after what was read

    def following(self) -> tuple[bool, int | None]:
        """Whether no bytes follow ``buf``, and how many can (None: unknown)."""
        pending = 0 if self._next is None else len(self._next) - self._next_pos
        if self._eof:
            return pending == 0, pending
        if self._left is None:
            return False, None
        return False, self._left + pending

    def _read_chunk(self, size: int) -> bytes:
        """Up to *size* bytes from the stream; b"" at its end or where it is damaged."""
        if self._eof:
            return b""
        try:
            chunk = self._read(size)
        except codec.DECOMPRESSION_ERRORS as exc:
            self.error = exc
            chunk = b""
        if chunk is None:  # a non-blocking stream with no data yet: not its end
            raise OSError(
                "the stream returned no data yet (None: it is in non-blocking mode); records "
                "are read from a blocking stream only: make it blocking, or read from its path"
            )
        if not chunk:
            self._eof = True
            return b""
        if self._left is not None:
            self._left = max(self._left - len(chunk), 0)
        return chunk

    def fill(self, n: int) -> None:
        """Make ``self.buf[self.pos:]`` at least *n* bytes long, unless the data ends first.

        Never copies more than the bytes before the end of the record being completed: the rest
        of a chunk read for it is kept aside (``self._next``) and becomes the buffer itself
        once the joined part is consumed.
        """
        buf, pos = self.buf, self.pos
        have = len(buf) - pos
        if have >= n:
            return
        nxt = self._next
        if have == 0:
            if nxt is not None:  # continue in the chunk kept aside, without a copy
                self.base += len(buf) - self._next_pos
                self.buf, self.pos, self._next = nxt, self._next_pos, None
                if len(nxt) - self._next_pos >= n:
                    return
                buf, pos, nxt = self.buf, self.pos, None
                have = len(buf) - pos
            else:
                chunk = self._read_chunk(max(self._chunk, min(n, _MAX_READ)))
                self.base += len(buf)
                self.buf, self.pos = chunk, 0
                if len(chunk) >= n or not chunk:
                    return
                buf, pos, have = chunk, 0, len(chunk)
        parts = [buf[pos:]]
        while have < n:
            if nxt is not None:
                piece = nxt[self._next_pos:self._next_pos + n - have]
                self._next_pos += len(piece)
                if self._next_pos >= len(nxt):
                    nxt = None
            else:
                chunk = self._read_chunk(max(self._chunk, min(n - have, _MAX_READ)))
                if not chunk:
                    break
                if len(chunk) > n - have:
                    piece = chunk[:n - have]
                    nxt, self._next_pos = chunk, n - have
                else:
                    piece = chunk
            parts.append(piece)
            have += len(piece)
        self._next = nxt
        self.base += pos
        self.buf, self.pos = b"".join(parts), 0


def bytes_left(stream: Any) -> int | None:
    """How many bytes a regular file still holds after the stream's position, else None.

    Known only for a stream whose bytes are the file's own (``open(path, "rb")``, buffered or
    not): a stream that decodes a file (``gzip.open``, ``bz2.open``, ``lzma.open``) has the
    file's descriptor too, but holds other bytes, often more than the file's size.
    """
    if not isinstance(stream, io.FileIO) and not isinstance(getattr(stream, "raw", None),
                                                            io.FileIO):
        return None
    try:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        return max(info.st_size - stream.tell(), 0)
    except (AttributeError, OSError, ValueError):
        return None


def skip_to(stream: Any, offset: int, *, relative: bool) -> None:
    """Advance a stream by *offset* bytes: seek if it can (to *offset* from its current position
    if *relative*, else to absolute *offset*), otherwise read and discard."""
    seekable = getattr(stream, "seekable", None)
    if seekable() if seekable is not None else hasattr(stream, "seek"):
        if relative:
            stream.seek(offset, os.SEEK_CUR)
        else:
            stream.seek(offset)
        return
    remaining = offset
    while remaining:
        chunk = stream.read(min(remaining, _SKIP_CHUNK))
        if not chunk:
            return  # the range starts past the end: nothing to read
        remaining -= len(chunk)
