"""TFRecord framing: the record layout, its checksums, the words for damage, and a frame scanner.

A TFRecord file is a sequence of records, each framed as::

    uint64 length          (little-endian)
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

with ``masked_crc32c(b) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32)``, ``c = crc32c(b)``.

This package is the lowest layer: it knows bytes, not files. :func:`scan` walks the
frames of a buffer in one call and returns the offsets and lengths of the whole, valid records
in it as arrays, plus where it stopped and why (:class:`Stop`); :func:`resync` finds the next
valid record after damage, in time linear in the bytes it looks at. Both are used by
:class:`tfrecord_io.records.RecordReader` and TensorFlow's chunk reader. The words used for
damaged data are here too, so every reader says the same thing.

Modules: :mod:`~tfrecord_io.framing.layout` (sizes, masked CRC, headers),
:mod:`~tfrecord_io.framing.damage` (the words for damage), :mod:`~tfrecord_io.framing.scanner`
(:func:`scan`, :func:`resync`). Everything public is importable from here.
"""

from tfrecord_io.framing.damage import (
    DATA_CHECKSUM_MISMATCH,
    LENGTH_CHECKSUM_MISMATCH,
    RANGE_START_ADVICE,
    damage_error,
    damaged_stream,
    too_long,
    truncated,
)
from tfrecord_io.framing.layout import (
    DEFAULT_MAX_RECORD_BYTES,
    FOOTER_BYTES,
    FRAMING_BYTES,
    HEADER_BYTES,
    MASK_DELTA,
    header,
    masked_crc32c,
)
from tfrecord_io.framing.scanner import CrcBudget, Frames, Stop, resync, scan

__all__ = [
    "HEADER_BYTES",
    "FOOTER_BYTES",
    "FRAMING_BYTES",
    "MASK_DELTA",
    "DEFAULT_MAX_RECORD_BYTES",
    "masked_crc32c",
    "header",
    "LENGTH_CHECKSUM_MISMATCH",
    "DATA_CHECKSUM_MISMATCH",
    "too_long",
    "truncated",
    "damaged_stream",
    "RANGE_START_ADVICE",
    "damage_error",
    "Stop",
    "CrcBudget",
    "Frames",
    "scan",
    "resync",
]
