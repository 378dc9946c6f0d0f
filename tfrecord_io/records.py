"""Pure-Python TFRecord framing: fast reading and writing of TFRecord files.

A TFRecord file is a sequence of records, each framed as::

    uint64 length          (little-endian)
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

where ``masked_crc32c(b) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32)`` with
``c = crc32c(b)``. Files may be wrapped whole in a GZIP or ZLIB stream, as TensorFlow's
``compression_type`` does.

Sources and targets can be binary file objects or any path or URL that :func:`tfrecord_io.fs.open`
opens: local paths (``str``, :class:`os.PathLike` or ``file://`` URLs), ``hdfs://`` /
``webhdfs://`` URLs, and ``http(s)://`` URLs for reading. This module never imports TensorFlow.

Main entry points: :func:`read` / :class:`RecordReader` and :func:`write` / :class:`RecordWriter`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from types import TracebackType
from typing import IO, Any, BinaryIO, Union

import crc32c as _crc32c

from tfrecord_io import _compression, fs
from tfrecord_io.errors import CorruptRecordError

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "RecordReader",
    "RecordWriter",
    "masked_crc32c",
    "read",
    "write",
]

log = logging.getLogger(__name__)

#: Default upper bound on the data length of one record: 256 MiB.
DEFAULT_MAX_RECORD_BYTES = 256 * 1024 * 1024
#: Default read buffer size.
DEFAULT_BUFFER_SIZE = 1 << 20

Source = Union[str, "os.PathLike[str]", BinaryIO, IO[bytes]]

_HEADER = 12  # uint64 length + uint32 masked CRC of the length
_FRAMING = 16  # header + uint32 masked CRC of the data
_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_NO_END = 1 << 63
_FLUSH_BYTES = 1 << 20
_HEADER_CACHE_LIMIT = 4096

_unpack_header = struct.Struct("<QI").unpack_from
_unpack_u32 = struct.Struct("<I").unpack_from
_pack_u64 = struct.Struct("<Q").pack
_pack_u32 = struct.Struct("<I").pack
_crc = _crc32c.crc32c

# Errors a damaged GZIP/ZLIB stream raises while being read.
_DECOMPRESSION_ERRORS = (zlib.error, EOFError)


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """Return the masked CRC-32C of *data*, as stored in TFRecord framing."""
    c = _crc(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32


# --------------------------------------------------------------------------------------------
# Reading


class RecordReader:
    """Iterates over the records of one TFRecord file, checking their framing.

    Use it as a context manager (it closes what it opened) and iterate over it::

        with RecordReader("data.tfrecord", on_corrupt="skip") as reader:
            for record in reader:
                ...
        print(reader.skipped_records, reader.skipped_bytes)

    Reading is done in large chunks (*buffer_size* bytes); records larger than the buffer are
    read whole. Every length is checked against *max_record_bytes* before anything is allocated
    for it.

    Damage -- a CRC mismatch, a length over the maximum, a record cut short by the end of the
    file -- raises :class:`~tfrecord_io.errors.CorruptRecordError` naming the file and the byte
    offset (in the uncompressed stream) of the damaged record. With ``on_corrupt="skip"`` the
    reader instead logs a warning and scans forward, byte by byte from the damaged offset + 1, to
    the next position holding a whole record whose two CRCs match, and continues from there;
    each such damaged stretch counts as one skipped record in :attr:`skipped_records` and its
    bytes in :attr:`skipped_bytes`. An *on_skip* callback sees each of them as it is found.

    Args:
        source: local path, ``file://`` URL, ``hdfs://``/``webhdfs://`` URL, or a binary file
            object. A file object is not closed by the reader; it is read from its current
            position, which counts as byte offset 0.
        compression: None to detect from the file name (``.gz`` gzip; ``.deflate``, ``.zlib``,
            ``.zz`` zlib; otherwise none -- and none for file objects), or ``"gzip"``,
            ``"zlib"``, ``"none"``/``""`` in any letter case.
        verify: check the CRCs of every record. With False only lengths are checked (faster;
            resync scanning under ``on_corrupt="skip"`` still uses CRCs).
        start: byte offset of the first record to read; must be a record boundary (e.g. from
            the file's index). Uncompressed input only.
        end: read exactly the records whose start offsets lie in ``[start, end)``; None for
            the end of the file. Uncompressed input only. The last record may extend past end.
        on_corrupt: ``"fail"`` (default) or ``"skip"``.
        on_skip: under ``on_corrupt="skip"``, called with a
            :class:`~tfrecord_io.errors.CorruptRecordError` (path, offset, reason) for each
            damaged stretch before it is skipped, e.g. to list every corruption of a file.
        max_record_bytes: the largest data length accepted for one record.
        buffer_size: size of the chunks read from the source.

    Attributes:
        path: the source's name (path, URL, or the file object's ``name``), used in errors.
        offset: byte offset of the record most recently returned; None before the first.
        skipped_records: damaged stretches skipped under ``on_corrupt="skip"``.
        skipped_bytes: bytes skipped under ``on_corrupt="skip"``.
        compression: the effective compression, ``"none"``, ``"gzip"`` or ``"zlib"``.

    Raises:
        ValueError: bad arguments, including a byte range on compressed input.
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
        kind = _compression.resolve(compression, source if is_location else None)
        if kind != _compression.NONE and (start != 0 or end is not None):
            raise ValueError(
                f"a byte range (start={start}, end={end}) needs uncompressed input, but "
                f"{fs.name(source)} is read as {kind}; compressed files cannot be split"
            )

        self.path: str = fs.name(source)
        self.compression: str = kind
        self.offset: int | None = None
        self.skipped_records: int = 0
        self.skipped_bytes: int = 0
        self._verify = bool(verify)
        self._skip = policy == "skip"
        self._on_skip = on_skip
        self._max = max_record_bytes
        self._bufsize = max(int(buffer_size), 64)
        self._end = _NO_END if end is None else end
        self._stack = contextlib.ExitStack()
        self._iterator: Iterator[bytes] | None = None

        # Buffer state, shared between the generator (which caches it in locals) and the slow
        # paths: self._buf[self._pos:] are the next unconsumed bytes, self._buf[0] is at byte
        # offset self._base of the (uncompressed) stream.
        self._buf = b""
        self._pos = 0
        self._base = start
        self._eof = False

        try:
            if is_location:
                stream = self._stack.enter_context(fs.open(source, "rb"))
            else:
                stream = source  # type: ignore[assignment]
            if start:
                _skip_to(stream, start, relative=not is_location)
            if kind != _compression.NONE:
                stream = _compression.DecompressingReader(stream)
            self._read = stream.read
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
        # The records come from one generator; returning it directly (rather than self) spares
        # a Python-level __next__ call per record in ``for`` loops. It shares this reader's
        # state, so iter(reader) is still "the" iterator of this reader.
        if self._iterator is None:
            self._iterator = self._records()
        return self._iterator

    def __next__(self) -> bytes:
        return next(iter(self))

    def close(self) -> None:
        """Close the source if the reader opened it. Idempotent."""
        if self._iterator is not None:
            self._iterator.close()
        self._stack.close()

    # -- internals ----------------------------------------------------------------------------

    def _fill(self, n: int) -> None:
        """Make ``self._buf[self._pos:]`` at least *n* bytes long, unless the stream ends first.

        Rebases the buffer so that ``self._pos`` becomes 0.
        """
        buf, pos = self._buf, self._pos
        tail = buf[pos:] if pos else buf
        self._base += pos
        self._buf, self._pos = tail, 0
        have = len(tail)
        if have >= n or self._eof:
            return
        parts = [tail] if have else []
        read = self._read
        while have < n and not self._eof:
            try:
                chunk = read(max(self._bufsize, n - have))
            except _DECOMPRESSION_ERRORS as exc:
                self._stream_damaged(exc)
                break
            if not chunk:
                self._eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        if parts:
            self._buf = parts[0] if len(parts) == 1 else b"".join(parts)

    def _stream_damaged(self, exc: BaseException) -> None:
        """A compressed stream could not be decompressed any further."""
        offset = self._base + self._pos
        reason = f"damaged {self.compression} stream: {exc}"
        if not self._skip:
            raise CorruptRecordError(self.path, offset, reason) from exc
        log.warning("Cannot read %s past byte offset %d: %s", self.path, offset, reason)
        if self._on_skip is not None:
            self._on_skip(CorruptRecordError(self.path, offset, reason))
        self._eof = True  # whatever was decompressed is still read; a partial tail is skipped

    def _damaged(self, offset: int, reason: str) -> bool:
        """Handle damage to the record at *offset* (which is ``self._base + self._pos``).

        Raises under the fail policy. Under the skip policy, counts the damage, scans forward
        to the next valid record and returns whether one was found before the end.
        """
        if not self._skip:
            raise CorruptRecordError(self.path, offset, reason)
        self.skipped_records += 1
        log.warning("Skipping damaged data in %s at byte offset %d: %s", self.path, offset, reason)
        if self._on_skip is not None:
            self._on_skip(CorruptRecordError(self.path, offset, reason))
        self._pos += 1
        found = self._resync()
        self.skipped_bytes += self._base + self._pos - offset
        return found

    def _resync(self) -> bool:
        """Advance byte by byte to the next offset that holds a whole, CRC-valid record.

        Returns False, with everything up to the end (of the stream or range) consumed, if
        there is none.
        """
        max_len = self._max
        while True:
            if self._base + self._pos >= self._end:
                return False
            if len(self._buf) - self._pos < _HEADER:
                self._fill(_HEADER)
                if len(self._buf) < _HEADER:
                    self._pos = len(self._buf)
                    return False
            buf, pos = self._buf, self._pos
            length, stored = _unpack_header(buf, pos)
            if length <= max_len and masked_crc32c(buf[pos:pos + 8]) == stored:
                if len(buf) - pos < length + _FRAMING:
                    self._fill(length + _FRAMING)
                    buf, pos = self._buf, self._pos
                if len(buf) - pos >= length + _FRAMING:
                    data_end = pos + _HEADER + length
                    if masked_crc32c(buf[pos + _HEADER:data_end]) == _unpack_u32(buf, data_end)[0]:
                        return True
            self._pos = pos + 1

    def _records(self) -> Iterator[bytes]:
        """The record generator; closes the source when exhausted.

        The hot loop keeps all state in locals; slow paths (refill, damage) store it back into
        ``self``, call a method, and reload it.
        """
        unpack_header = _unpack_header
        unpack_u32 = _unpack_u32
        crc = _crc
        delta = _MASK_DELTA
        u32 = _U32
        verify = self._verify
        max_len = self._max
        end = self._end
        # Masked CRC of the header, per length: the header CRC depends only on the length, and
        # files mostly hold few distinct lengths, so this saves a CRC per record.
        header_crcs: dict[int, int] = {}
        header_crc_of = header_crcs.get

        try:
            buf, pos, base = self._buf, self._pos, self._base
            blen = len(buf)
            while True:
                if pos + _HEADER > blen:
                    self._buf, self._pos = buf, pos
                    self._fill(_HEADER)
                    buf, pos, base = self._buf, 0, self._base
                    blen = len(buf)
                    if blen < _HEADER:
                        if blen == 0 or base >= end:
                            return
                        if not self._damaged(
                            base,
                            f"truncated record header: the file ends {blen} bytes into the "
                            f"{_HEADER}-byte header",
                        ):
                            return
                        buf, pos, base = self._buf, self._pos, self._base
                        blen = len(buf)
                        continue
                off = base + pos
                if off >= end:
                    return
                length, stored = unpack_header(buf, pos)
                if header_crc_of(length) != stored:
                    reason = None
                    if verify:
                        c = crc(buf[pos:pos + 8])
                        if (((c >> 15) | (c << 17)) + delta) & u32 != stored:
                            reason = "length checksum mismatch"
                    if reason is None and length > max_len:
                        reason = (
                            f"record length {length} exceeds the maximum of {max_len} bytes "
                            "(max_record_bytes)"
                        )
                    if reason is not None:
                        self._buf, self._pos = buf, pos
                        if not self._damaged(off, reason):
                            return
                        buf, pos, base = self._buf, self._pos, self._base
                        blen = len(buf)
                        continue
                    if verify:
                        if len(header_crcs) >= _HEADER_CACHE_LIMIT:
                            header_crcs.clear()
                        header_crcs[length] = stored
                data_start = pos + _HEADER
                data_end = data_start + length
                if data_end + 4 > blen:
                    self._buf, self._pos = buf, pos
                    self._fill(length + _FRAMING)
                    buf, pos, base = self._buf, 0, self._base
                    blen = len(buf)
                    data_start = _HEADER
                    data_end = _HEADER + length
                    if data_end + 4 > blen:
                        have = blen - _HEADER
                        if have < length:
                            reason = (
                                f"truncated record: {length} data bytes announced, the file "
                                f"ends {have} bytes into them"
                            )
                        else:
                            reason = "truncated record: the file ends inside the data checksum"
                        if not self._damaged(off, reason):
                            return
                        buf, pos, base = self._buf, self._pos, self._base
                        blen = len(buf)
                        continue
                data = buf[data_start:data_end]
                if verify:
                    c = crc(data)
                    if (((c >> 15) | (c << 17)) + delta) & u32 != unpack_u32(buf, data_end)[0]:
                        self._buf, self._pos = buf, pos
                        if not self._damaged(off, "data checksum mismatch"):
                            return
                        buf, pos, base = self._buf, self._pos, self._base
                        blen = len(buf)
                        continue
                pos = data_end + 4
                self.offset = off
                yield data
        finally:
            self._stack.close()


def _skip_to(stream: Any, offset: int, *, relative: bool) -> None:
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
        chunk = stream.read(min(remaining, DEFAULT_BUFFER_SIZE))
        if not chunk:
            return  # the range starts past the end: nothing to read
        remaining -= len(chunk)


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
    """Yield the data of each record of a TFRecord file, in order.

    A thin generator over :class:`RecordReader` (see it for the arguments and errors); the
    source is opened when iteration starts and closed when it ends. Use :class:`RecordReader`
    directly to see the skip counters or the current offset.

    Example::

        for record in read("hdfs://nn:8020/data/part-r-00000.tfrecord"):
            example = tf.train.Example.FromString(record)
    """
    with RecordReader(
        source,
        compression,
        verify,
        start=start,
        end=end,
        on_corrupt=on_corrupt,
        max_record_bytes=max_record_bytes,
    ) as reader:
        yield from reader


# --------------------------------------------------------------------------------------------
# Writing


class RecordWriter:
    """Writes records to a TFRecord file, optionally compressed, optionally with its index.

    Use it as a context manager: on a clean exit it closes the file and writes the sidecar index
    (see ``docs/index-format.md``); if the block raises, the file is closed but no index is
    written. Uncompressed output is byte-identical to ``tf.io.TFRecordWriter``'s.

    Args:
        target: local path, ``file://`` URL, ``hdfs://``/``webhdfs://`` URL, or a binary file
            object (written at its current position, not closed by the writer).
        compression: None to detect from the file name (``.gz`` gzip; ``.deflate``, ``.zlib``,
            ``.zz`` zlib; otherwise none -- and none for file objects), or ``"gzip"``,
            ``"zlib"``, ``"none"``/``""`` in any letter case.
        index: None: write the sidecar index ``DIR/_NAME.tfindex`` when the target is an
            uncompressed local path. False: never. True: always, also to an hdfs URL; raises
            ValueError where impossible (compressed output, file object).

    When the target is a local path, an existing sidecar index of that path is removed as the
    file is opened (it describes the file being overwritten), and the new one, if any, is
    written atomically once all the data is written, so an index never describes other data.

    Attributes:
        path: the target's name (path, URL, or the file object's ``name``).
        compression: the effective compression, ``"none"``, ``"gzip"`` or ``"zlib"``.
        count: records written so far.
        bytes_written: framed bytes written so far, before compression (the offset at which
            the next record starts in the uncompressed stream).
        index_path: where the index is written, or None if it is not.
    """

    def __init__(
        self,
        target: Source,
        compression: str | None = None,
        *,
        index: bool | None = None,
    ) -> None:
        if index not in (None, True, False):
            raise ValueError(f"index must be None, True or False, not {index!r}")
        is_location = fs.is_location(target)
        kind = _compression.resolve(compression, target if is_location else None)
        self.path: str = fs.name(target)
        self.compression: str = kind
        self.count: int = 0
        self.bytes_written: int = 0
        self.index_path: str | None = None
        self._lengths: array | None = None
        self._pending = bytearray()
        self._header_cache: dict[int, bytes] = {}
        self._closed = False
        self._stack = contextlib.ExitStack()
        self._target: Any = None
        self._owns_target = is_location

        location_kind = None
        if is_location:
            location_kind = "local" if fs.is_local(target) else "remote"  # type: ignore[arg-type]
        if index is True:
            if kind != _compression.NONE:
                raise ValueError(
                    f"cannot index {self.path}: it is {kind}-compressed, and compressed files "
                    "are not splittable"
                )
            if location_kind is None:
                raise ValueError(
                    "cannot write an index for a file object target: give a path or URL"
                )
        want_index = index is True or (
            index is None and location_kind == "local" and kind == _compression.NONE
        )

        try:
            if is_location:
                from tfrecord_io.index import index_path  # noqa: PLC0415 (index imports us)

                sidecar = index_path(target)  # type: ignore[arg-type]
                if location_kind == "local":
                    with contextlib.suppress(FileNotFoundError):
                        fs.delete(sidecar)
                        log.debug("Removed the index %s of the file being overwritten", sidecar)
                if want_index:
                    self.index_path = sidecar
                    self._lengths = array("Q")
                stream = self._stack.enter_context(fs.open(target, "wb"))
            else:
                stream = target  # type: ignore[assignment]
            self._target = stream
            if kind != _compression.NONE:
                compressor = _compression.CompressingWriter(stream, kind)
                self._stack.callback(compressor.close)
                self._sink = compressor
            else:
                self._sink = stream
        except BaseException:
            self._stack.close()
            raise

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self._abort()

    def write(self, record: bytes | bytearray | memoryview) -> None:
        """Append one record (any bytes-like object)."""
        if self._closed:
            raise ValueError(f"write to a closed RecordWriter ({self.path})")
        if type(record) is not bytes:
            record = _as_bytes(record)
        n = len(record)
        header = self._header_cache.get(n)
        if header is None:
            header = self._header(n)
        pending = self._pending
        pending += header
        pending += record
        pending += _pack_u32(masked_crc32c(record))
        self.count += 1
        self.bytes_written += n + _FRAMING
        if self._lengths is not None:
            self._lengths.append(n)
        if len(pending) >= _FLUSH_BYTES:
            self._flush()

    def _header(self, n: int) -> bytes:
        """The 12 header bytes of a record of *n* data bytes (cached per length)."""
        length_bytes = _pack_u64(n)
        header = length_bytes + _pack_u32(masked_crc32c(length_bytes))
        if len(self._header_cache) >= _HEADER_CACHE_LIMIT:
            self._header_cache.clear()
        self._header_cache[n] = header
        return header

    def _write_many(self, records: Iterable[bytes | bytearray | memoryview]) -> int:
        """Append every record of *records*; returns how many. The hot loop of writing."""
        if self._closed:
            raise ValueError(f"write to a closed RecordWriter ({self.path})")
        crc = _crc
        pack_u32 = _pack_u32
        delta = _MASK_DELTA
        u32 = _U32
        header_of = self._header_cache.get
        lengths = self._lengths
        add_length = lengths.append if lengths is not None else None
        pending = self._pending
        written = self.bytes_written
        count = 0
        try:
            for record in records:
                if type(record) is not bytes:
                    record = _as_bytes(record)
                n = len(record)
                header = header_of(n)
                if header is None:
                    header = self._header(n)
                c = crc(record)
                pending += header
                pending += record
                pending += pack_u32((((c >> 15) | (c << 17)) + delta) & u32)
                count += 1
                written += n + _FRAMING
                if add_length is not None:
                    add_length(n)
                if len(pending) >= _FLUSH_BYTES:
                    self._flush()
        finally:
            self.count += count
            self.bytes_written = written
        return count

    def _flush(self) -> None:
        if self._pending:
            _compression.write_fully(self._sink, self._pending)
            del self._pending[:]

    def close(self) -> None:
        """Flush and close the file (if the writer opened it), then write the index. Idempotent.

        A file object target is flushed (if it can be) but left open.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self._flush()
        except BaseException:
            self._stack.close()
            raise
        self._stack.close()  # finishes compression, closes the file if the writer opened it
        if not self._owns_target:
            flush = getattr(self._target, "flush", None)
            if flush is not None:
                flush()
        if self.index_path is not None:
            self._write_index()

    def _abort(self) -> None:
        """Close after a failure: keep what was written, write no index."""
        if self._closed:
            return
        self._closed = True
        try:
            self._flush()
        finally:
            self._stack.close()
        if self.index_path is not None:
            log.warning("Not writing the index of %s: writing it failed", self.path)

    def _write_index(self) -> None:
        assert self._lengths is not None and self.index_path is not None
        with fs.atomic_write(self.index_path) as f:
            f.write(_index_lines(self._lengths).encode("ascii"))


def _index_lines(lengths: array) -> str:
    """The index text for records of the given data lengths, starting at offset 0."""
    framed = [n + _FRAMING for n in lengths]
    return "".join(map("{} {}\n".format, accumulate(framed, initial=0), framed))


def _as_bytes(record: Any) -> bytes:
    if isinstance(record, str):
        raise TypeError("records must be bytes-like, not str; encode the string first")
    try:
        return bytes(memoryview(record).cast("B"))
    except TypeError:
        raise TypeError(f"records must be bytes-like, not {type(record).__name__}") from None


def write(
    target: Source,
    records: Iterable[bytes | bytearray | memoryview],
    compression: str | None = None,
    *,
    index: bool | None = None,
) -> int:
    """Write *records* to a TFRecord file and return how many were written.

    See :class:`RecordWriter` for the arguments. With the default ``index=None`` an uncompressed
    local file gets its sidecar index ``DIR/_NAME.tfindex``.

    Example::

        write("out/part-0.tfrecord", (ex.SerializeToString() for ex in examples))
    """
    with RecordWriter(target, compression, index=index) as writer:
        writer._write_many(records)
    return writer.count
