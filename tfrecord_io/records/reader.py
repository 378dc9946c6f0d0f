"""Reading TFRecord files: :class:`RecordReader` (one file, framed by
:func:`tfrecord_io.framing.scan`, damage reported or skipped) and :func:`read`."""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import IO, Any, BinaryIO, NamedTuple, Union

from tfrecord_io import compression as codec
from tfrecord_io import framing, fs
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.framing import DEFAULT_MAX_RECORD_BYTES
from tfrecord_io.records.window import StreamWindow, bytes_left, skip_to

__all__ = ["DEFAULT_BUFFER_SIZE", "Source", "Chunk", "RecordReader", "read", "require_binary"]

log = logging.getLogger("tfrecord_io.records")

#: Default read buffer size.
DEFAULT_BUFFER_SIZE = 1 << 20

#: What the readers and writers take: a path or URL (see :func:`tfrecord_io.fs.open`), or a
#: binary file object.
Source = Union[str, "os.PathLike[str]", BinaryIO, IO[bytes]]


def require_binary(stream: Any, mode: str) -> None:
    """Refuse a text-mode file object given as a source or target (*mode*: ``"rb"`` or
    ``"wb"``, what it should have been opened with): its str data would fail deep inside, with
    a decoding error or a wrong type, not saying why.

    Raises:
        TypeError: *stream* is a text stream (:class:`io.TextIOBase`).
    """
    if isinstance(stream, io.TextIOBase):
        raise TypeError(
            f"{fs.name(stream)} is a text-mode file object: TFRecord files are binary; open "
            f"it with mode {mode!r} (or pass its path)"
        )


# --------------------------------------------------------------------------------------------
# Reading


class Chunk(NamedTuple):
    """Whole, valid records of one buffer: record ``i`` is ``buffer[starts[i]:starts[i] +
    lengths[i]]`` (int64 arrays); ``offsets[i]`` is where its frame starts in the stream."""

    buffer: bytes
    starts: Any
    lengths: Any
    offsets: Any


class _Records(itertools.chain):
    """The records of a reader, one list per scanned buffer, chained in C (no Python frame
    runs per record); ``close()`` closes the underlying generator."""

    __slots__ = ("_lists", "_current")

    def close(self) -> None:
        self._lists.close()
        for _ in self._current[0]:  # what is left of the list being returned
            pass


def _chained(make_lists: Callable[[list[Iterator[bytes]]], Iterator[Iterator[bytes]]]
             ) -> _Records:
    """Chain the lists of *make_lists*, which keeps the one being returned in its argument."""
    current: list[Iterator[bytes]] = [iter(())]
    lists = make_lists(current)
    records = _Records.from_iterable(lists)
    records._lists = lists  # type: ignore[attr-defined]
    records._current = current  # type: ignore[attr-defined]
    return records


class RecordReader:
    """Iterates over the records of one TFRecord file, checking their framing.

    Use it as a context manager (it closes what it opened) and iterate over it::

        with RecordReader("data.tfrecord", on_corrupt="skip") as reader:
            for record in reader:
                ...
        print(reader.skipped_records, reader.skipped_bytes)

    Reading is done in large chunks (*buffer_size* bytes), each framed in one call of
    :func:`tfrecord_io.framing.scan`; records larger than the buffer are read whole. Every
    length is checked against *max_record_bytes*, and, for an uncompressed file of known size,
    against the bytes the file still holds, before anything is allocated for it.

    Damage -- a CRC mismatch, a length over the maximum, a record cut short by the end of the
    file, a gzip/zlib stream that cannot be decompressed further -- raises
    :class:`~tfrecord_io.errors.CorruptRecordError` naming the file and the byte offset of the
    damaged record, after every record before it has been returned. Offsets count bytes of the
    uncompressed stream: in a compressed file, the offset is where the damaged record starts
    once decompressed; for a broken stream, that of the first record that could not be
    decompressed whole (every record before it is returned).

    With ``on_corrupt="skip"`` the reader instead reports the damage once (to *on_skip* if
    given, else as a logged warning) and scans forward, from the damaged offset + 1, to the
    next position holding a whole record whose two CRCs match, and continues from there
    (resynchronisation takes time linear in the bytes scanned); each such damaged stretch
    counts as one skipped record in :attr:`skipped_records` and its bytes in
    :attr:`skipped_bytes`. A compressed stream that breaks ends the file there, after every
    record decompressed whole before the break.

    Args:
        source: local path, ``file://`` URL, ``hdfs://``/``webhdfs://``/``s3://`` URL, or a
            binary file object. A file object is not closed by the reader; it is read from its
            current position, which counts as byte offset 0.
        compression: None to detect from the file name (``.gz`` gzip; ``.deflate``, ``.zlib``,
            ``.zz`` zlib; otherwise none -- and none for file objects), or ``"gzip"``,
            ``"zlib"``, ``"none"``/``""`` in any letter case.
        verify: check the data CRC of every record. With False only lengths and their CRCs
            are checked (faster; a damaged length is still found at its record; resync
            scanning under ``on_corrupt="skip"`` still uses both CRCs).
        start: byte offset of the first record to read; must be a record boundary (e.g. from
            the file's index). Uncompressed input only.
        end: read exactly the records whose start offsets lie in ``[start, end)``; None for
            the end of the file. Uncompressed input only. The last record may extend past end.
        on_corrupt: ``"fail"`` (default) or ``"skip"``.
        on_skip: under ``on_corrupt="skip"``, called with a
            :class:`~tfrecord_io.errors.CorruptRecordError` (path, offset, reason) for each
            damaged stretch, once, before it is skipped, e.g. to list every corruption of a
            file. When given, it replaces the logged warning.
        max_record_bytes: the largest data length accepted for one record.
        buffer_size: size of the chunks read from the source.

    Attributes:
        path: the source's name (path, URL, or the file object's ``name``), used in errors.
        offset: byte offset of the record most recently returned; None before the first.
        skipped_records: damaged stretches skipped under ``on_corrupt="skip"``.
        skipped_bytes: bytes skipped under ``on_corrupt="skip"``.
        compression: the effective compression, ``"none"``, ``"gzip"`` or ``"zlib"``.
        verify: whether the data CRC of every record is checked (lengths' always are).

    Raises:
        ValueError: bad arguments, including a byte range on compressed input.
        TypeError: a text-mode file object as *source*.
        CorruptRecordError: damaged data, under ``on_corrupt="fail"``.
        OSError: the source cannot be opened or read.
    """

    def __init__(
        self,
        source: Source,
        compression: str | None = None,
        verify: bool = True,
        *,
        start: int = 0,
        end: int | None = None,
        on_corrupt: str = "fail",
        on_skip: Callable[[CorruptRecordError], None] | None = None,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
    ) -> None:
        policy = on_corrupt.lower() if isinstance(on_corrupt, str) else on_corrupt
        if policy not in ("fail", "skip"):
            raise ValueError(f"on_corrupt must be 'fail' or 'skip', not {on_corrupt!r}")
        if not isinstance(max_record_bytes, int) or max_record_bytes < 0:
            raise ValueError(
                f"max_record_bytes must be a non-negative int, not {max_record_bytes!r}"
            )
        if not isinstance(start, int) or start < 0:
            raise ValueError(f"start must be a non-negative int, not {start!r}")
        if end is not None and (not isinstance(end, int) or end < start):
            raise ValueError(f"end must be None or an int >= start ({start}), not {end!r}")
        is_location = fs.is_location(source)
        if not is_location:
            require_binary(source, "rb")
        kind = codec.resolve(compression, source if is_location else None)
        if kind != codec.NONE and (start != 0 or end is not None):
            raise ValueError(
                f"a byte range (start={start}, end={end}) needs uncompressed input, but "
                f"{fs.name(source)} is read as {kind}; compressed files cannot be split"
            )

        self.path: str = fs.name(source)
        self.compression: str = kind
        self.skipped_records: int = 0
        self.skipped_bytes: int = 0
        self.verify = bool(verify)
        self._skip = policy == "skip"
        self._on_skip = on_skip
        self._max = max_record_bytes
        self._bufsize = max(int(buffer_size), 64)
        self._start = start
        self._end = end
        self._stack = contextlib.ExitStack()
        self._iterator: _Records | None = None
        self._stream_error_reported = False  # the window's stream error has been reported

        # What the offset property needs: the scan whose records are being returned, the
        # iterator over them, and the offset of the last record of the scan before.
        self._frames: framing.Frames | None = None
        self._current: Iterator[bytes] | None = None
        self._previous_offset: int | None = None

        try:
            if is_location:
                stream = self._stack.enter_context(fs.open(source, "rb"))
            else:
                stream = source  # type: ignore[assignment]
            if start:
                skip_to(stream, start, relative=not is_location)
            left = None
            if kind != codec.NONE:
                stream = codec.DecompressingReader(stream)
            else:
                left = bytes_left(stream)
            self._window = StreamWindow(stream.read, base=start, left=left,
                                        chunk_size=self._bufsize)
        except BaseException:
            self._stack.close()
            raise

    # -- public protocol ----------------------------------------------------------------------

    def __enter__(self) -> RecordReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __iter__(self) -> Iterator[bytes]:
        # The records come from a C-level chain over one list per scanned buffer; returning it
        # directly (rather than self) spares a Python-level __next__ call per record. It shares
        # this reader's state, so iter(reader) is still "the" iterator of this reader.
        if self._iterator is None:
            self._iterator = _chained(self._record_lists)
        return self._iterator

    def __next__(self) -> bytes:
        return next(iter(self))

    @property
    def offset(self) -> int | None:
        """Byte offset of the record most recently returned; None before the first."""
        current, frames = self._current, self._frames
        if current is None or frames is None:
            return self._previous_offset
        taken = len(frames.starts) - current.__length_hint__()  # type: ignore[attr-defined]
        if taken == 0:
            return self._previous_offset
        return frames.base + int(frames.starts[taken - 1]) - framing.HEADER_BYTES

    def chunks(self) -> Iterator[Chunk]:
        """The records as :class:`Chunk` s, one per scanned buffer, without a ``bytes`` object
        per record (for vectorised consumers: Arrow, TensorFlow). Data CRCs are checked as
        for iteration, and damage is handled by the same policy. Use either this or
        iteration on a reader, not both."""
        for frames in self.scans(cut=False):
            yield Chunk(frames.buffer, frames.starts, frames.lengths, frames.offsets())

    def close(self) -> None:
        """Close the source if the reader opened it. Idempotent."""
        if self._iterator is not None:
            self._iterator.close()
        self._stack.close()

    # -- internals ----------------------------------------------------------------------------

    def _record_lists(self, current: list[Iterator[bytes]] | None = None
                      ) -> Iterator[Iterator[bytes]]:
        """The records, one iterator per scanned buffer (kept in ``current[0]`` if given)."""
        for frames in self.scans(cut=True):
            if self._frames is not None and len(self._frames.starts):
                previous = self._frames
                self._previous_offset = (
                    previous.base + int(previous.starts[-1]) - framing.HEADER_BYTES
                )
            self._frames = frames
            self._current = iterator = iter(frames.records)  # type: ignore[arg-type]
            if current is not None:
                current[0] = iterator
            yield iterator

    def scans(self, cut: bool = False) -> Iterator[framing.Frames]:
        """The :class:`tfrecord_io.framing.Frames` of each scanned buffer that holds records
        (with each record cut as ``bytes`` if *cut*), damage handled by the reader's policy;
        the building block of iteration, :meth:`chunks` and
        :func:`tfrecord_io.records.read_batches`. Closes the source when done. Use one way of
        reading per reader."""
        verify, max_len, end = self.verify, self._max, self._end
        scan = framing.scan
        try:
            while True:
                final, remaining = self._window.following()
                frames = scan(
                    self._window.buf,
                    self._window.base,
                    pos=self._window.pos,
                    end=end,
                    verify=verify,
                    max_record_bytes=max_len,
                    final=final,
                    remaining=remaining,
                    cut=cut,
                )
                self._window.pos = frames.stop
                if len(frames.starts):
                    yield frames
                status = frames.status
                if status is framing.Stop.MORE:
                    self._window.fill(frames.need)
                    continue
                if status is framing.Stop.END:
                    self._stream_break(0)
                    return
                reason = frames.reason
                if frames.truncated and self._window.error is not None:
                    reason = self._stream_reason(frames.have)
                    self._stream_error_reported = True
                if not self._damaged(self._window.base + self._window.pos, reason):  # type: ignore[arg-type]
                    self._stream_break(0)
                    return
        finally:
            self._stack.close()

    def _stream_reason(self, have: int) -> str:
        assert self._window.error is not None
        return framing.damaged_stream(self.compression, self._window.error, have)

    def _stream_break(self, have: int) -> None:
        """At the end of the data: report a compressed stream that broke there, if not yet."""
        if self._window.error is None or self._stream_error_reported:
            return
        self._stream_error_reported = True
        offset = self._window.base + self._window.pos
        error = CorruptRecordError(self.path, offset, self._stream_reason(have))
        if not self._skip:
            raise error from self._window.error
        self.skipped_records += 1
        self._report(error)

    def _report(self, error: CorruptRecordError) -> None:
        if self._on_skip is not None:
            self._on_skip(error)
        else:
            log.warning("Skipping damaged data in %s at byte offset %d: %s", error.path,
                        error.offset, error.reason)

    def _damaged(self, offset: int, reason: str) -> bool:
        """Handle damage to the record at *offset* (which is
        ``self._window.base + self._window.pos``).

        Raises under the fail policy. Under the skip policy, reports and counts the damage,
        scans forward to the next valid record and returns whether one was found before the
        end.
        """
        error = framing.damage_error(self.path, offset, reason, self._start)
        if not self._skip:
            if self._window.error is not None and self._stream_error_reported:
                raise error from self._window.error
            raise error
        self.skipped_records += 1
        self._report(error)
        # Step over the damaged record's first byte. Damage can be known before that byte is
        # in the window (a header cut short by the end of a file of known size, found where
        # the window ends): it is read first, so the window never points past its buffer.
        self._window.fill(1)
        self._window.pos += 1
        found = self._resync(offset)
        self.skipped_bytes += self._window.base + self._window.pos - offset
        if not found and self._window.error is not None:
            self._stream_error_reported = True  # this stretch runs into the break: one report
        return found

    def _resync(self, damaged: int) -> bool:
        """Move to the next offset that holds a whole, CRC-valid record after the damage at
        *damaged*; False if there is none (everything up to the end of the data or range is
        then consumed).

        Raises:
            CorruptRecordError: whatever the policy, when the checksums of records that look
                valid but are not cost more than :class:`framing.CrcBudget` allows (a crafted
                file: resynchronising past it would take time quadratic in its size).
        """
        budget = framing.CrcBudget.for_records(self._max)
        allowed = budget.left
        while True:
            final, remaining = self._window.following()
            status, pos, need = framing.resync(
                self._window.buf,
                self._window.base,
                pos=self._window.pos,
                end=self._end,
                max_record_bytes=self._max,
                final=final,
                remaining=remaining,
                budget=budget,
            )
            self._window.pos = pos
            if status is framing.Stop.FOUND:
                return True
            if status is framing.Stop.DAMAGED:
                raise CorruptRecordError(
                    self.path, self._window.base + pos,  # pos counts from the window's start
                    f"after the damage at byte offset {damaged}, so many record "
                    "headers look valid but hold damaged data that resynchronising was given "
                    f"up (more than {allowed >> 20} MiB "
                    "of checksums): the file is crafted or damaged beyond skipping; the records "
                    f"before byte offset {damaged} were read",
                    advice="Rewrite the file from its source, or leave it out.")
            if status is framing.Stop.END:
                return False
            self._window.fill(max(need, self._bufsize))  # a window at a time, not a byte at a time


def read(
    source: Source,
    compression: str | None = None,
    verify: bool = True,
    *,
    start: int = 0,
    end: int | None = None,
    on_corrupt: str = "fail",
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> Iterator[bytes]:
    """Return an iterator over the data of each record of a TFRecord file, in order.

    A thin iterator over :class:`RecordReader` (see it for the arguments and errors); the
    source is opened when iteration starts and closed when it ends (or by the iterator's
    ``close()``). Use :class:`RecordReader` directly to see the skip counters or the current
    offset, and :func:`read_batches` to get the records a batch at a time (faster).

    Example::

        for record in read("hdfs://nn:8020/data/part-r-00000.tfrecord"):
            example = tf.train.Example.FromString(record)
    """
    options = dict(start=start, end=end, on_corrupt=on_corrupt,
                   max_record_bytes=max_record_bytes)
    return _chained(lambda current: _lists_of(source, compression, verify, options, current))


def _lists_of(source: Source, compression: str | None, verify: bool, options: dict[str, Any],
              current: list[Iterator[bytes]]) -> Iterator[Iterator[bytes]]:
    with RecordReader(source, compression, verify, **options) as reader:
        yield from reader._record_lists(current)
