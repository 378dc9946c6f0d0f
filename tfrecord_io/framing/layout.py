"""The TFRecord record layout: header and footer sizes, the masked CRC-32C, a record's header."""

from __future__ import annotations

import struct

import crc32c as _crc32c

__all__ = [
    "Buffer",
    "HEADER_BYTES",
    "FOOTER_BYTES",
    "FRAMING_BYTES",
    "MASK_DELTA",
    "DEFAULT_MAX_RECORD_BYTES",
    "masked_crc32c",
    "header",
]

#: What the framing functions take: any bytes-like object.
Buffer = bytes | bytearray | memoryview

#: Bytes before a record's data: the uint64 length and the masked CRC of those 8 bytes.
HEADER_BYTES = 12
#: Bytes after a record's data: the masked CRC of the data.
FOOTER_BYTES = 4
#: Framing bytes per record.
FRAMING_BYTES = HEADER_BYTES + FOOTER_BYTES
#: The constant added when masking a CRC.
MASK_DELTA = 0xA282EAD8
#: Default upper bound on the data length of one record: 256 MiB.
DEFAULT_MAX_RECORD_BYTES = 256 * 1024 * 1024

_U32 = 0xFFFFFFFF
_crc = _crc32c.crc32c
_pack_u64 = struct.Struct("<Q").pack
_pack_u32 = struct.Struct("<I").pack


def masked_crc32c(data: Buffer) -> int:
    """Return the masked CRC-32C of *data*, as stored in TFRecord framing."""
    c = _crc(data)
    return (((c >> 15) | (c << 17)) + MASK_DELTA) & _U32


def header(length: int) -> bytes:
    """The 12 header bytes of a record of *length* data bytes."""
    length_bytes = _pack_u64(length)
    return length_bytes + _pack_u32(masked_crc32c(length_bytes))
