"""Read-ahead for remote files read from start to end: while the caller consumes one block, a
background thread fetches the next ones.

A remote read (an object store's ranged ``GET``) costs a round trip and the transfer; a caller
that parses what it reads (TensorFlow's record reader through the plugin, tfrecord-io's Python
reader) otherwise waits for each block with nothing to do, and the store waits while it parses.
:class:`ReadAhead` overlaps the two. It is a raw, seekable reader: a read outside the blocks it
fetched (a seek elsewhere) drops them and starts fetching there, so random access still works,
at one block's cost per jump. Memory is bounded: at most ``depth`` blocks wait, plus the one in
flight.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from typing import Any

from tfrecord_io.fs.backend import PositionedReader

__all__ = ["ReadAhead"]


class ReadAhead(PositionedReader):
    """A raw reader of *source* (a seekable raw reader of *size* bytes, which this one owns and
    closes) that fetches ``block_size`` bytes at a time, up to *depth* blocks ahead of the
    caller, in one background thread started by the first read (or by :meth:`start`).

    Errors of a fetch are raised by the read that needs its bytes, as *source* raised them.
    """

    def __init__(self, source: Any, size: int, *, block_size: int = 8 << 20, depth: int = 2,
                 name: str | None = None) -> None:
        if block_size <= 0 or depth <= 0:
            raise ValueError(f"block_size and depth must be positive, not {block_size}, {depth}")
        super().__init__(name if name is not None else getattr(source, "name", ""), size)
        self._source = source
        self._block = block_size
        self._depth = depth
        self._changed = threading.Condition()
        # Under _changed: the fetched blocks, in order, as (offset, bytes); where the next one
        # the caller is given starts; where the fetcher goes on; which run of fetches is
        # current (a jump starts another); the current run's error; whether the reader closed.
        self._blocks: collections.deque[tuple[int, bytearray]] = collections.deque()
        self._expect = 0
        self._next = 0
        self._run = 0
        self._error: BaseException | None = None
        self._done = False
        self._in_flight = False
        self._fetcher: threading.Thread | None = None


    def readinto(self, buffer: Any) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        view = memoryview(buffer).cast("B")
        if not len(view) or self._pos >= self._size:
            return 0
        with self._changed:
            self._start_fetcher()
            while True:
                # Blocks wholly behind the caller (it seeked forward) are dropped.
                while self._blocks and sum(_span(self._blocks[0])) <= self._pos:
                    self._blocks.popleft()
                    self._changed.notify_all()
                if self._blocks:
                    offset, data = self._blocks[0]
                    if offset <= self._pos:
                        start = self._pos - offset
                        n = min(len(view), len(data) - start)
                        view[:n] = memoryview(data)[start:start + n]
                        self._pos += n
                        if start + n == len(data):
                            self._blocks.popleft()
                            self._changed.notify_all()
                        return n
                    self._restart_at(self._pos)  # a jump back
                elif not self._expect <= self._pos < self._expect + self._block:
                    self._restart_at(self._pos)  # a jump beyond what is being fetched
                elif self._error is not None:
                    raise self._error
                self._changed.wait()

    def start(self) -> None:
        """Starts fetching from the current position now, before the first read, which then
        finds its bytes fetched or on the way. Does nothing once fetching has started."""
        if self.closed:
            raise ValueError("I/O operation on closed file")
        with self._changed:
            self._start_fetcher()

    def readall(self) -> bytes:
        """The rest of the file (one allocation, not a join of small reads)."""
        out = bytearray(max(0, self._size - self._pos))
        view = memoryview(out)
        done = 0
        while done < len(out):
            n = self.readinto(view[done:])
            if n == 0:
                break
            done += n
        return bytes(out[:done])

    def close(self) -> None:
        if self.closed:
            return
        with self._changed:
            self._done = True
            self._blocks.clear()
            self._changed.notify_all()
            fetcher, in_flight = self._fetcher, self._in_flight
        if fetcher is None:
            with contextlib.suppress(OSError):
                self._source.close()
        elif not in_flight:
            fetcher.join()  # idle: it ends at once, closing the source
        # else the fetcher closes the source when its request returns
        super().close()

    # -- the background thread -----------------------------------------------------------------

    def _start_fetcher(self) -> None:
        """(Under the lock.) Starts the background thread at the current position, once."""
        if self._fetcher is None:
            self._restart_at(self._pos)
            self._fetcher = threading.Thread(
                target=self._fetch, name=f"tfrecord-io-read-ahead {self.name}", daemon=True
            )
            self._fetcher.start()

    def _restart_at(self, pos: int) -> None:
        """(Under the lock.) Drops what was fetched; the fetcher goes on from *pos*."""
        self._blocks.clear()
        self._expect = self._next = pos
        self._run += 1
        self._error = None
        self._changed.notify_all()

    def _fetch(self) -> None:
        try:
            while True:
                with self._changed:
                    while not self._done and (
                        len(self._blocks) >= self._depth or self._next >= self._size
                        or self._error is not None
                    ):
                        self._changed.wait()
                    if self._done:
                        return
                    run, offset = self._run, self._next
                    self._next = offset + min(self._block, self._size - offset)
                    self._in_flight = True
                try:
                    data, error = self._read_block(offset, self._next - offset), None
                except BaseException as e:  # noqa: BLE001 - handed to the reader that needs it
                    data, error = bytearray(), e
                with self._changed:
                    self._in_flight = False
                    if self._done:
                        return
                    if run != self._run:
                        continue  # the caller jumped meanwhile
                    if error is not None:
                        self._error = error
                    else:
                        self._blocks.append((offset, data))
                        self._expect = offset + len(data)
                    self._changed.notify_all()
        finally:
            with contextlib.suppress(OSError):
                self._source.close()

    def _read_block(self, offset: int, length: int) -> bytearray:
        out = bytearray(length)
        view = memoryview(out)
        self._source.seek(offset)
        done = 0
        while done < length:
            n = self._source.readinto(view[done:])
            if not n:
                raise EOFError(f"{self.name} ended at byte {offset + done}, before its "
                               f"{self._size} bytes")
            done += n
        return out


def _span(block: tuple[int, bytearray]) -> tuple[int, int]:
    """A block's offset and length."""
    return block[0], len(block[1])
