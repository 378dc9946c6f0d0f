"""Writing TFRecord files: :class:`RecordWriter` (optionally compressed, with its sidecar
index) and :func:`write`."""

from __future__ import annotations

import contextlib
import logging
import struct
from array import array
from collections.abc import Iterable
from types import TracebackType
from typing import Any

import crc32c as _crc32c

from tfrecord_io import compression as codec
from tfrecord_io import framing, fs
from tfrecord_io.records.reader import Source, require_binary
from tfrecord_io.records.sidecar import index_path, index_text

__all__ = ["RecordWriter", "write"]

log = logging.getLogger("tfrecord_io.records")

_FRAMING = framing.FRAMING_BYTES
_MASK_DELTA = framing.MASK_DELTA
_U32 = 0xFFFFFFFF
_FLUSH_BYTES = 1 << 20
_HEADER_CACHE_LIMIT = 4096

_pack_u32 = struct.Struct("<I").pack
_crc = _crc32c.crc32c


# --------------------------------------------------------------------------------------------
# Writing


class RecordWriter:
    """Writes records to a TFRecord file, optionally compressed, optionally with its index.

    Use it as a context manager: on a clean exit it closes the file and writes the sidecar index
    (see ``docs/index-format.md``). A path or URL gets its file whole or not at all: if the
    block raises, nothing is written there and a file it replaces stays as it was. (Locally
    and on HDFS the data goes to a hidden sibling, ``.NAME.<unique>.tmp``, renamed over the
    target when the writer closes; on an object store, ``s3://``, ``az://``, ``gs://``, the
    object appears when its upload completes.) So a failure never leaves a shorter file that
    reads as complete. Without ``with``, call :meth:`close`: until then the target is not
    written.
    Uncompressed output is byte-identical to ``tf.io.TFRecordWriter``'s.

    Args:
        target: local path, ``file://`` URL, any URL :mod:`tfrecord_io.fs` writes (``hdfs://``,
            ``webhdfs://``, ``s3://``, ``az://``, ``abfs://``, ``gs://``), or a binary file object
            (written at its current position, not closed by the writer).
        compression: None to detect from the file name (``.gz`` gzip; ``.deflate``, ``.zlib``,
            ``.zz`` zlib; otherwise none -- and none for file objects), or ``"gzip"``,
            ``"zlib"``, ``"none"``/``""`` in any letter case.
        index: None: write the sidecar index ``DIR/_NAME.tfindex`` when the target is an
            uncompressed local path. False: never. True: always, also to an hdfs or s3 URL;
            raises ValueError where impossible (compressed output, file object).

    When the target is a local path, an existing sidecar index of that path is removed just
    before the new file replaces the old one (it describes the file being overwritten; a
    writer that fails leaves both as they were), and the new one, if any, is written
    atomically after the data, so an index never describes other data.

    Attributes:
        path: the target's name (path, URL, or the file object's ``name``).
        compression: the effective compression, ``"none"``, ``"gzip"`` or ``"zlib"``.
        count: records written so far.
        bytes_written: framed bytes written so far, before compression (the offset at which
            the next record starts in the uncompressed stream).
        index_path: where the index is written, or None if it is not.

    Raises:
        TypeError: a text-mode file object as *target*.
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
        if not is_location:
            require_binary(target, "wb")
        kind = codec.resolve(compression, target if is_location else None)
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
        self._old_index: str | None = None  # removed as the new file replaces the old

        location_kind = None
        if is_location:
            location_kind = "local" if fs.is_local(target) else "remote"  # type: ignore[arg-type]
        if index is True:
            if kind != codec.NONE:
                raise ValueError(
                    f"cannot index {self.path}: it is {kind}-compressed, and compressed files "
                    "are not splittable"
                )
            if location_kind is None:
                raise ValueError(
                    "cannot write an index for a file object target: give a path or URL"
                )
        want_index = index is True or (
            index is None and location_kind == "local" and kind == codec.NONE
        )

        try:
            if is_location:

                sidecar = index_path(target)  # type: ignore[arg-type]
                if location_kind == "local":
                    self._old_index = sidecar
                if want_index:
                    self.index_path = sidecar
                    self._lengths = array("Q")
                stream = self._stack.enter_context(fs.atomic_write(target))  # type: ignore[arg-type]
            else:
                stream = target  # type: ignore[assignment]
            self._target = stream
            if kind != codec.NONE:
                compressor = codec.CompressingWriter(stream, kind)
                self._stack.callback(compressor.close)
                self._sink = compressor
            else:
                self._sink = stream
        except BaseException as e:  # nothing appears at the target
            self._stack.__exit__(type(e), e, e.__traceback__)
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
            self._abort(exc_type, exc, tb)

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
        pending += _pack_u32(framing.masked_crc32c(record))
        self.count += 1
        self.bytes_written += n + _FRAMING
        if self._lengths is not None:
            self._lengths.append(n)
        if len(pending) >= _FLUSH_BYTES:
            self._flush()

    def _header(self, n: int) -> bytes:
        """The 12 header bytes of a record of *n* data bytes (cached per length)."""
        header = framing.header(n)
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
            codec.write_fully(self._sink, self._pending)
            del self._pending[:]

    def flush(self) -> None:
        """Pass the records written so far on to the target, as ``tf.io.TFRecordWriter.flush``
        does: a file object (a pipe to a reader, say) then holds every record whole, compressed
        ones decompressible as they stand. A file written to a path or URL still appears only
        when the writer closes (it is written whole or not at all); there this hands the bytes
        on, to be kept out of memory."""
        if self._closed:
            raise ValueError(f"flush of a closed RecordWriter ({self.path})")
        self._flush()
        if isinstance(self._sink, codec.CompressingWriter):
            self._sink.flush()
        flush = getattr(self._target, "flush", None)
        if flush is not None:
            flush()

    def close(self) -> None:
        """Flush and close the file (if the writer opened it), then write the index. Idempotent.

        A file object target is flushed (if it can be) but left open.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self._flush()
            if self._old_index is not None:
                with contextlib.suppress(FileNotFoundError):
                    fs.delete(self._old_index)
                    log.debug("Removed the index %s of the file being replaced", self._old_index)
        except BaseException as e:  # the target's writer learns of it: nothing appears
            self._stack.__exit__(type(e), e, e.__traceback__)
            raise
        self._stack.close()  # finishes compression; the file replaces the target
        if not self._owns_target:
            flush = getattr(self._target, "flush", None)
            if flush is not None:
                flush()
        if self.index_path is not None:
            self._write_index()

    def _abort(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close after a failure and write no index. The target's writer learns of the
        failure (its ``__exit__`` gets it), so nothing appears at the target: a hidden sibling
        is deleted, an object store's upload abandoned."""
        if self._closed:
            return
        self._closed = True
        try:
            self._flush()
        finally:
            self._stack.__exit__(exc_type, exc, tb)
        if self.index_path is not None:  # nor the file: the failure is the caller's to report
            log.debug("Not writing the index of %s: the file was abandoned (%s)", self.path,
                      getattr(exc_type, "__name__", exc_type))

    def _write_index(self) -> None:
        assert self._lengths is not None and self.index_path is not None
        with fs.atomic_write(self.index_path) as f:
            f.write(index_text(self._lengths).encode("ascii"))


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
