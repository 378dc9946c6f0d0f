"""Read-ahead for remote files read from start to end: while the caller consumes one block,
background threads fetch the next ones.

A remote read (an object store's ranged ``GET``) costs a round trip and the transfer; a caller
that parses what it reads (TensorFlow's record reader through the plugin, tfrecord-io's Python
reader) otherwise waits for each block with nothing to do, and the store waits while it parses.
:class:`ReadAhead` overlaps the two, and with several fetchers also overlaps one block's round
trip with another's transfer, as a store that serves each connection at a bounded rate needs.

It is a raw, seekable reader. A read outside the blocks it fetched (a seek elsewhere), or a first
read away from the start of the file, is a jump: it drops what was fetched and fetches only what
that read asks for, at least ``probe_size`` bytes, in one request; once the caller reads on from
the end of those bytes, it is reading sequentially again and the blocks ahead are fetched as
before (a read further on is another jump). A jump (random access: an index's record, a
checkpoint's tensor, a footer) then costs one small request, not a window of blocks, and a
sequential read after it one round trip more. Memory is bounded: the blocks held, fetched or
being fetched, lie within ``depth + fetchers - 1`` blocks from the one the caller is in.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from tfrecord_io.errors import FileChangedError
from tfrecord_io.fs.backend import PROBE_SIZE, PositionedReader

__all__ = ["ReadAhead"]


class ReadAhead(PositionedReader):
    """A raw reader of *source* (a seekable raw reader of *size* bytes, which this one owns and
    closes) that fetches ``block_size`` bytes at a time ahead of the caller, in *fetchers*
    background threads started by the first read (or by :meth:`start`).

    The blocks held, fetched or being fetched, lie within ``depth + fetchers - 1`` blocks from
    the start of the block the caller is in. After a jump (a read outside what was fetched, or a
    first read away from byte 0), the first request is of the bytes that read asks for, at least
    *probe_size* (at most *block_size*), and none follows it until the caller reads on from
    their end. With one fetcher, *source* is read by ``seek`` and ``readinto``; with more, by
    ``source.read_at(offset, length)``, which must return a bytes-like object and be safe to call
    from several threads at once.

    Errors of a fetch are raised by the read that needs its bytes, as *source* raised them,
    once: nothing more is fetched until the caller reads again, and that read (a retry at the
    same position, or a read anywhere) fetches its bytes again, as after a jump.
    """

    def __init__(self, source: Any, size: int, *, block_size: int = 8 << 20, depth: int = 2,
                 fetchers: int = 1, probe_size: int = PROBE_SIZE,
                 name: str | None = None) -> None:
        if block_size <= 0 or depth <= 0 or fetchers <= 0 or probe_size <= 0:
            raise ValueError("block_size, depth, fetchers and probe_size must be positive, not "
                             f"{block_size}, {depth}, {fetchers}, {probe_size}")
        # No more fetchers than the file has blocks (a small file needs one thread, not four).
        fetchers = min(fetchers, max(1, -(-size // block_size)))
        if fetchers > 1 and not callable(getattr(source, "read_at", None)):
            raise ValueError(f"{fetchers} fetchers need a source with a thread-safe read_at")
        super().__init__(name if name is not None else getattr(source, "name", ""), size)
        self._source = source
        self._block = block_size
        self._probe = min(probe_size, block_size)
        self._window = (depth + fetchers - 1) * block_size
        self._fetchers = fetchers
        self._changed = threading.Condition()
        # Under _changed. A run of fetches starts at _origin (a jump starts another, _run + 1);
        # its first block is _first bytes long (block_size, or a jump's probe), the others
        # block_size. _blocks: the fetched ones by offset (an exception for a failed fetch, after
        # which the run claims no more; dropped when a read raises it, so that the next read
        # restarts the run there); _in_flight: those being fetched; _next: the next one to
        # claim. _probing: the run began at a jump, and no read has asked for bytes past its
        # first block yet, so that block is claimed alone.
        self._blocks: dict[int, Any] = {}
        self._in_flight: set[int] = set()
        self._origin = 0
        self._first = block_size
        self._probing = False
        self._next = 0
        self._run = 0
        self._failed = False
        self._done = False
        self._busy = 0  # fetchers inside a request (of any run)
        self._waiting = 0  # fetchers waiting for a block they may claim
        self._alive = 0  # fetchers not yet ended; the last one closes the source
        self._threads: list[threading.Thread] = []

    def readinto(self, buffer: Any) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        view = memoryview(buffer).cast("B")
        if not len(view) or self._pos >= self._size:
            return 0
        probe = max(len(view), self._probe)
        with self._changed:
            # A first read from the start is a scan's; from elsewhere, a jump's.
            self._start_fetchers(probe if self._pos else None)
            while True:
                if self._done:  # closed by another thread while this read waited
                    raise ValueError(f"{self.name} was closed during a read")
                head = self._head()
                if self._probing and head > self._origin:
                    if self._pos > self._origin + self._first:
                        self._restart_at(self._pos, probe)  # a jump on, past the probe
                        continue
                    self._probing = False  # reading on from the probe's end: a scan again
                    self._changed.notify_all()
                self._drop_before(head)  # blocks wholly behind the caller (it seeked forward)
                data = self._blocks.get(head) if self._pos >= self._origin else None
                if isinstance(data, BaseException):
                    # Raised once: the run stays stopped (nothing more is fetched), and the
                    # next read fetches these bytes again, so that a caller's retry can succeed
                    # once the source has recovered.
                    del self._blocks[head]
                    raise data
                if data is not None:
                    start = self._pos - head
                    n = min(len(view), len(data) - start)
                    view[:n] = memoryview(data).cast("B")[start:start + n]
                    self._pos += n
                    if start + n == len(data):
                        del self._blocks[head]
                        self._changed.notify_all()
                    return n
                if (self._pos < self._origin or head > self._next
                        or (head not in self._in_flight and (head < self._next or self._failed))):
                    # A jump back, or beyond what is coming: fetch what this read asks for.
                    self._restart_at(self._pos, probe)
                self._changed.wait()

    def start(self, size: int = 0) -> None:
        """Starts fetching from the current position now, before the first read, which then
        finds its bytes fetched or on the way. Does nothing once fetching has started. *size*,
        the size of the read to come, changes nothing: the fetchers claim blocks ahead of
        every read, the first one too."""
        if self.closed:
            raise ValueError("I/O operation on closed file")
        with self._changed:
            self._start_fetchers(None)

    def wait_until_idle(self, timeout: float = 10.0) -> bool:
        """Waits until no fetch is under way and none may start before the caller reads on or
        seeks (the blocks ahead are fetched, a jump's first bytes await reading on from their
        end, or the file is fetched to its end): what this reader has asked its source for is
        then all it asks until the caller moves. Whether that came within *timeout* seconds.
        For tests and benchmarks that count requests."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._busy or self._waiting < self._alive or (
                    self._alive and not self._done and self._may_claim()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.01))
        return True

    @property
    def fetchers(self) -> int:
        """How many blocks are fetched at once (the background threads): as many as asked
        for, or as the file has blocks if that is fewer."""
        return self._fetchers

    @property
    def fetched_to_end(self) -> bool:
        """Whether every block from the caller's position to the end of the file has been asked
        for (the last ones may still be on their way): the store has nothing more to send this
        reader unless it seeks elsewhere."""
        with self._changed:
            return (bool(self._threads) and not self._failed and self._next >= self._size
                    and self._pos >= self._origin)

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
            threads, busy = list(self._threads), self._busy
        if not threads:
            with contextlib.suppress(OSError):
                self._source.close()
        elif not busy:
            for thread in threads:
                thread.join()  # idle: they end at once, the last closing the source
        # else the last fetcher closes the source when its request returns
        super().close()

    # -- the fetchers ------------------------------------------------------------------------------

    def _head(self) -> int:
        """(Under the lock.) Where the block holding the caller's position starts, in the
        current run's grid (the position itself when it is before the run)."""
        if self._pos < self._origin:
            return self._pos
        second = self._origin + self._first
        if self._pos < second:
            return self._origin
        return second + (self._pos - second) // self._block * self._block

    def _drop_before(self, head: int) -> None:
        """(Under the lock.) Drops the fetched blocks that start before *head*."""
        behind = [offset for offset in self._blocks if offset < head]
        for offset in behind:
            del self._blocks[offset]
        if behind:
            self._changed.notify_all()

    def _start_fetchers(self, probe: int | None) -> None:
        """(Under the lock.) Starts the fetchers at the current position, once: block by block,
        or *probe* bytes first, as after a jump."""
        if not self._threads:
            self._restart_at(self._pos, probe)
            self._alive = self._fetchers
            for i in range(self._fetchers):
                suffix = f" #{i + 1}" if self._fetchers > 1 else ""
                thread = threading.Thread(target=self._fetch, daemon=True,
                                          name=f"tfrecord-io-read-ahead {self.name}{suffix}")
                self._threads.append(thread)
                thread.start()

    def _restart_at(self, pos: int, probe: int | None) -> None:
        """(Under the lock.) Drops what was fetched; the fetchers go on from *pos*: block by
        block, or after a jump (*probe* given) first *probe* bytes alone (at most a block)."""
        self._blocks.clear()
        self._in_flight.clear()
        self._origin = self._next = pos
        self._probing = probe is not None
        self._first = min(probe, self._block) if probe is not None else self._block
        self._run += 1
        self._failed = False
        self._changed.notify_all()

    def _may_claim(self) -> bool:
        """(Under the lock.) Whether the next block is wanted now."""
        if self._probing and self._next > self._origin:
            return False  # after a jump: nothing more until a read from the probe's end
        head = self._head()
        return (not self._failed and self._next < self._size
                and head <= self._next < head + self._window)

    def _fetch(self) -> None:
        try:
            while True:
                with self._changed:
                    while not self._done and not self._may_claim():
                        self._waiting += 1
                        try:
                            self._changed.wait()
                        finally:
                            self._waiting -= 1
                    if self._done:
                        return
                    run, offset = self._run, self._next
                    length = min(self._first if offset == self._origin else self._block,
                                 self._size - offset)
                    self._next = offset + length
                    self._in_flight.add(offset)
                    self._busy += 1
                try:
                    data: Any = self._read_block(offset, length)
                except BaseException as e:  # noqa: BLE001 - handed to the reader that needs it
                    data = e
                with self._changed:
                    self._busy -= 1
                    if self._done:
                        return
                    if run != self._run:
                        continue  # the caller jumped meanwhile
                    self._in_flight.discard(offset)
                    self._blocks[offset] = data
                    self._failed = self._failed or isinstance(data, BaseException)
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._alive -= 1
                last = self._alive == 0
            if last:
                with contextlib.suppress(OSError):
                    self._source.close()

    def _read_block(self, offset: int, length: int) -> Any:
        if self._fetchers > 1:
            data = self._source.read_at(offset, length)
            done = len(memoryview(data).cast("B"))
        else:
            data = bytearray(length)
            view = memoryview(data)
            self._source.seek(offset)
            done = 0
            while done < length:
                n = self._source.readinto(view[done:])
                if not n:
                    break
                done += n
        if done < length:
            raise FileChangedError(f"{self.name} ended at byte {offset + done}, before the "
                                   f"{self._size} bytes it had when opened: it changed while "
                                   "being read")
        return data
