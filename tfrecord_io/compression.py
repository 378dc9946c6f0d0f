"""Compression names and the GZIP / ZLIB stream wrappers used by :mod:`tfrecord_io.records`.

TensorFlow's ``compression_type`` values are ``""``/``"NONE"``, ``"GZIP"`` and ``"ZLIB"``:

* GZIP is a gzip stream (RFC 1952), what ``tf.io.TFRecordOptions("GZIP")`` and Hadoop's
  ``GzipCodec`` write;
* ZLIB is a zlib stream (RFC 1950), what ``tf.io.TFRecordOptions("ZLIB")`` and Hadoop's
  ``DefaultCodec`` (``.deflate``) write.

Both are handled with the :mod:`zlib` module directly. The writer produces the same container
TensorFlow does (default compression level, no file name, no timestamp). The reader accepts
either container whichever was asked for (zlib's header auto-detection), and concatenated
streams (multi-member gzip files) are read to the end.
"""

from __future__ import annotations

import io
import os
import zlib
from typing import Any, BinaryIO

from tfrecord_io.errors import UnsupportedCompressionError

__all__ = [
    "NONE",
    "GZIP",
    "ZLIB",
    "normalize",
    "detect",
    "unreadable_codec",
    "resolve",
    "DECOMPRESSION_ERRORS",
    "DecompressingReader",
    "CompressingWriter",
    "write_fully",
    "read_up_to",
]

NONE = "none"
GZIP = "gzip"
ZLIB = "zlib"

_ALIASES = {
    "": NONE,
    "none": NONE,
    "gzip": GZIP,
    "zlib": ZLIB,
}

#: File name endings that imply a compression, checked case-insensitively.
_SUFFIXES = (
    (".gz", GZIP),
    (".deflate", ZLIB),
    (".zlib", ZLIB),
    (".zz", ZLIB),
)

#: File name endings of Hadoop codecs that no TFRecord reader outside Hadoop reads.
_UNREADABLE_SUFFIXES = (
    (".bz2", "bzip2"),
    (".snappy", "Snappy"),
    (".lz4", "LZ4"),
    (".zst", "zstd"),
)

#: What reading a damaged gzip/zlib stream raises (from :class:`DecompressingReader`).
DECOMPRESSION_ERRORS = (zlib.error, EOFError)

_WBITS_WRITE = {GZIP: 16 + zlib.MAX_WBITS, ZLIB: zlib.MAX_WBITS}
_WBITS_READ_AUTO = 32 + zlib.MAX_WBITS  # zlib or gzip header, detected per stream
_RAW_CHUNK = 256 * 1024

#: Why a gzip member whose header sets a reserved flag bit is refused, before any of its data.
_RESERVED_FLAGS = "the gzip header sets reserved flag bits (RFC 1952): the member cannot be read"


def normalize(compression: str | None) -> str | None:
    """Return the canonical compression name, or None for "detect from the file name".

    Accepts None, ``""``, ``"none"``, ``"gzip"`` and ``"zlib"`` in any letter case (so
    TensorFlow's ``"GZIP"``/``"ZLIB"`` work unchanged).

    Raises:
        ValueError: for any other value.
    """
    if compression is None:
        return None
    if not isinstance(compression, str):
        raise ValueError(f"compression must be a string or None, not {compression!r}")
    try:
        return _ALIASES[compression.lower()]
    except KeyError:
        raise ValueError(
            f"unknown compression {compression!r}: use None (detect from the file name), "
            "'none', 'gzip' or 'zlib'"
        ) from None


def detect(name: str | os.PathLike[str] | None) -> str:
    """Return the compression implied by a file name: ``.gz`` is gzip; ``.deflate``, ``.zlib``
    and ``.zz`` are zlib; anything else (or no name) is none.

    Raises:
        UnsupportedCompressionError: the name ends as a file of another Hadoop codec (``.bz2``,
            ``.snappy``, ``.lz4``, ``.zst``), which neither TensorFlow nor these readers can
            read (reading it as uncompressed would report damage at byte 0).
    """
    if name is None:
        return NONE
    lowered = _bare_name(name)
    for suffix, kind in _SUFFIXES:
        if lowered.endswith(suffix):
            return kind
    codec_name = unreadable_codec(name)
    if codec_name is not None:
        raise UnsupportedCompressionError(
            f"{os.fspath(name)} is {codec_name}-compressed (by its name): TensorFlow and "
            "tfrecord-io's Python readers read gzip and zlib only. Read it with Spark "
            "(load_records, format('tfrecord')), or have Spark write gzip "
            "(compression='gzip'); a file that is not compressed despite its name is read "
            "with compression='none'"
        )
    return NONE


def unreadable_codec(name: str | os.PathLike[str] | None) -> str | None:
    """The Hadoop codec that neither TensorFlow nor these readers can read (``"bzip2"``,
    ``"Snappy"``, ``"LZ4"``, ``"zstd"``) that a file's name says it is compressed with; None for
    any other name. What :func:`detect` refuses, for callers that pass such files over."""
    if name is None:
        return None
    lowered = _bare_name(name)
    for suffix, codec_name in _UNREADABLE_SUFFIXES:
        if lowered.endswith(suffix):
            return codec_name
    return None


def _bare_name(name: str | os.PathLike[str]) -> str:
    """The name in lower case, without a URL's query or fragment."""
    lowered = os.fspath(name).lower()
    for sep in ("?", "#"):
        if "://" in lowered and sep in lowered:
            lowered = lowered.split(sep, 1)[0]
    return lowered


def resolve(compression: str | None, name: str | os.PathLike[str] | None) -> str:
    """Return the effective compression: the explicit one if given, else detected from *name*."""
    explicit = normalize(compression)
    return detect(name) if explicit is None else explicit


def write_fully(stream: BinaryIO, data: bytes | bytearray | memoryview) -> None:
    """Write all of *data* to *stream*, looping over short writes of raw streams."""
    n = stream.write(data)
    if n is None or n >= len(data):
        return
    view = memoryview(data).cast("B")[n:]
    while view:
        n = stream.write(view)
        if n is None:
            return
        if n <= 0:
            raise OSError(f"could not write to {stream!r}: write() returned {n}")
        view = view[n:]


def read_up_to(stream: BinaryIO, n: int) -> bytes:
    """Read *n* bytes of *stream*, fewer only at its end, looping over short reads of raw
    streams: at most *n* bytes are held, whatever the stream holds."""
    data = b""
    while len(data) < n:
        part = stream.read(n - len(data))
        if not part:
            break
        data += part
    return data


class DecompressingReader(io.RawIOBase):
    """A readable raw stream of the decompressed bytes of a gzip or zlib stream.

    Damage in the compressed data (:class:`zlib.error`, or :class:`EOFError` for a stream cut
    short) is raised by :meth:`read` only once every byte that could be decompressed before it
    has been returned; it is then raised again by every later call. What can be decompressed is
    found by re-running the failing step from a saved state in ever smaller pieces, so nothing
    decodable is lost. Bytes after a complete stream are read as another (concatenated) stream.
    A gzip header that sets a reserved flag bit is refused where it is, before any byte of its
    member (as RFC 1952 asks, and zlib and TensorFlow do).
    An entirely empty input reads as empty. The underlying stream is not closed by
    :meth:`close`.
    """

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw
        self._decomp = zlib.decompressobj(_WBITS_READ_AUTO)
        self._pending = b""
        self._ready = b""  # decompressed, not yet returned (what a failed step salvaged)
        self._error: BaseException | None = None
        self._started = False
        self._finished = False
        self._member_start = True  # the next bytes fed begin a (gzip or zlib) stream

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """Return up to *size* decompressed bytes (all remaining if negative); b"" at the end.

        Raises:
            zlib.error, EOFError: the stream is damaged here; every byte before was returned.
        """
        if size is None or size < 0:
            parts = []
            while True:
                chunk = self.read(1 << 20)
                if not chunk:
                    return b"".join(parts)
                parts.append(chunk)
        parts = []
        have = 0
        if self._ready:
            parts.append(self._ready[:size])
            self._ready = self._ready[size:]
            have = len(parts[0])
        while have < size and not self._finished and self._error is None:
            decomp = self._decomp
            if decomp.eof:
                # One stream is complete; anything after it is another concatenated stream.
                rest = decomp.unused_data or self._raw.read(_RAW_CHUNK)
                if not rest:
                    self._finished = True
                    break
                self._decomp = decomp = zlib.decompressobj(_WBITS_READ_AUTO)
                self._pending = rest
                self._member_start = True
            if not self._pending:
                self._pending = self._raw.read(_RAW_CHUNK)
                if not self._pending:
                    if not self._started:
                        self._finished = True  # an empty file holds no records
                        break
                    self._error = EOFError(
                        "compressed stream ends before its end-of-stream marker"
                    )
                    break
                self._started = True
            if self._member_start:
                self._member_start = False
                if _sets_reserved_gzip_flags(self._pending):
                    self._error = zlib.error(_RESERVED_FLAGS)
                    self._pending = b""
                    break
            saved = decomp.copy()
            try:
                out = decomp.decompress(self._pending, size - have)
                self._pending = decomp.unconsumed_tail
            except zlib.error as exc:
                self._error = exc
                out = _salvage(saved, self._pending)
                self._pending = b""
                if len(out) > size - have:
                    out, self._ready = out[:size - have], out[size - have:]
            if out:
                parts.append(out)
                have += len(out)
        if not parts and self._error is not None and not self._ready:
            raise self._error
        if len(parts) == 1:
            return parts[0]
        return b"".join(parts)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(memoryview(buffer).cast("B")))
        n = len(data)
        memoryview(buffer).cast("B")[:n] = data
        return n


def _sets_reserved_gzip_flags(head: bytes) -> bool:
    """Whether *head*, the start of a stream, is a gzip header with a reserved FLG bit set
    (RFC 1952: a decompressor must refuse the member)."""
    return len(head) >= 4 and head[:2] == b"\x1f\x8b" and bool(head[3] & 0xE0)


def _salvage(decomp: Any, data: bytes) -> bytes:
    """Everything *decomp* (a state saved before a step that failed on *data*) can still
    decompress from *data* before the damage: feeds it in pieces, and a piece that fails in
    smaller pieces, down to single bytes."""
    out = []
    pos = 0
    step = 1 << 12
    while pos < len(data):
        trial = decomp.copy()
        try:
            piece = trial.decompress(data[pos:pos + step])
        except zlib.error:
            if step == 1:
                break
            step = max(step >> 4, 1)
            continue
        out.append(piece)
        decomp = trial
        pos += step
        if decomp.eof:
            break
    return b"".join(out)


class CompressingWriter:
    """Compresses written bytes into a gzip or zlib stream on an underlying binary stream.

    :meth:`close` finishes the stream (writes the trailer) but does not close the underlying
    stream.
    """

    def __init__(self, raw: BinaryIO, kind: str, level: int = zlib.Z_DEFAULT_COMPRESSION) -> None:
        if kind not in _WBITS_WRITE:
            raise ValueError(f"not a compressed format: {kind!r}")
        self._raw = raw
        self._comp = zlib.compressobj(level, zlib.DEFLATED, _WBITS_WRITE[kind])
        self._closed = False

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Compress *data* and pass whatever the compressor emits on; returns ``len(data)``."""
        out = self._comp.compress(data)
        if out:
            write_fully(self._raw, out)
        return len(data)

    def flush(self) -> None:
        """Pass on everything written so far, decompressible as it stands (a sync flush, as
        TensorFlow's writer does on ``flush``); the stream goes on."""
        if not self._closed:
            write_fully(self._raw, self._comp.flush(zlib.Z_SYNC_FLUSH))

    def close(self) -> None:
        """Write the end of the compressed stream. Idempotent."""
        if not self._closed:
            self._closed = True
            write_fully(self._raw, self._comp.flush(zlib.Z_FINISH))
