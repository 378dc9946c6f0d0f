"""The words for damaged data, so that every reader of the package says the same thing."""

from __future__ import annotations

from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.framing.layout import HEADER_BYTES

__all__ = [
    "LENGTH_CHECKSUM_MISMATCH",
    "DATA_CHECKSUM_MISMATCH",
    "too_long",
    "truncated",
    "damaged_stream",
    "RANGE_START_ADVICE",
    "damage_error",
]

LENGTH_CHECKSUM_MISMATCH = "length checksum mismatch"
DATA_CHECKSUM_MISMATCH = "data checksum mismatch"

#: What to do when the header where a byte range begins is not valid: most often the range did
#: not come from this file's records (an index written for an earlier version of the file).
RANGE_START_ADVICE = (
    "A byte range must begin where a record begins. If the range came from the file's split "
    "index (_NAME.tfindex), the index does not describe this file: `tfrecord-io verify` "
    "checks both; delete the index and write it again with `tfrecord-io index`."
)


def too_long(length: int, maximum: int) -> str:
    """A header announcing more data than allowed."""
    return (f"record length {length} exceeds the maximum of {maximum} bytes (max_record_bytes; "
            "if the file holds records this large, raise it: skipping drops them)")


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


def damage_error(path: str, offset: int, reason: str, range_start: int = 0) -> CorruptRecordError:
    """The error for damage at *offset* of *path*, read from *range_start* on: a header that is
    not valid exactly where a range after byte 0 begins is said to be where no record may begin
    (an index that does not describe the file), not only damage."""
    if offset == range_start > 0 and reason != DATA_CHECKSUM_MISMATCH:
        return CorruptRecordError(
            path, offset,
            f"no valid record header where the byte range begins ({reason}): no record begins "
            "here, or its header is damaged",
            advice=RANGE_START_ADVICE,
        )
    return CorruptRecordError(path, offset, reason)
