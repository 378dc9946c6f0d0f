"""The words for damaged data, so that every reader of the package says the same thing."""

from __future__ import annotations

from tfrecord_io.framing.layout import HEADER_BYTES

__all__ = [
    "LENGTH_CHECKSUM_MISMATCH",
    "DATA_CHECKSUM_MISMATCH",
    "too_long",
    "truncated",
    "damaged_stream",
]

LENGTH_CHECKSUM_MISMATCH = "length checksum mismatch"
DATA_CHECKSUM_MISMATCH = "data checksum mismatch"


def too_long(length: int, maximum: int) -> str:
    """A header announcing more data than allowed."""
    return f"record length {length} exceeds the maximum of {maximum} bytes (max_record_bytes)"


def truncated(have: int, length: int | None) -> str:
    """A record cut short: *have* bytes of it exist; *length* is its data length if known."""
    if length is None or have < HEADER_BYTES:
        return f"truncated record: the file ends {have} bytes into its header"
    if have - HEADER_BYTES < length:
        return (
            f"truncated record: {length} data bytes announced, the file ends "
            f"{have - HEADER_BYTES} bytes into them"
        )
    return "truncated record: the file ends inside the data checksum"


def damaged_stream(compression: str, cause: BaseException, have: int) -> str:
    """A gzip/zlib stream that cannot be decompressed past a point; *have* bytes of the record
    at the reported offset were decompressed before it."""
    if have == 0:
        return f"damaged {compression} stream ({cause}): nothing past this offset can be read"
    return (
        f"damaged {compression} stream ({cause}): the decompressed data ends {have} bytes "
        "into this record"
    )
