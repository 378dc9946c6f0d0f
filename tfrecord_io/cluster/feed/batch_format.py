"""The layout of a feed batch's records, as the JVM writes it
(``org.tfrecordio.spark.feed.FeedBatches``) and a node reads it.

The payload of a ``batch`` message holds *n* records (*n* is in the message's header)::

    n x uint32 big-endian    the records' lengths
    the n records            back to back, nothing between them

In the JVM each batch starts with :data:`BATCH_HEADER` (magic, worker, feeding job, partition,
sequence number, records); the feeding task sends those fields in the message's header and the
payload after them.

There is no per-record framing or CRC: the protocol's AEAD tag covers every byte of the
batch. :func:`locate` finds every record in one vectorized step (no Python loop per record)
and checks the table against the payload before anything is cut from it, so TensorFlow
receives a batch as one string plus the records' offsets (:mod:`~tfrecord_io.cluster.feed
.dataset`) instead of thousands of Python ``bytes``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["BATCH_HEADER", "LENGTH", "MAGIC", "Batch", "locate", "pack"]

#: The header of a batch in the JVM: magic, worker, job, partition, sequence number, records
#: (big-endian ints).
BATCH_HEADER = struct.Struct("!6i")
#: ``"TFFB"``: the first int of every batch.
MAGIC = 0x54464642
#: One entry of the lengths table.
LENGTH = np.dtype(">u4")


@dataclass(frozen=True)
class Batch:
    """The records of one batch, located: record *i* is
    ``payload[starts[i] : starts[i] + lengths[i]]``.

    Attributes:
        payload: the batch's bytes (the lengths table included).
        starts: each record's offset in *payload* (int64).
        lengths: each record's length (int64).
    """

    payload: bytes
    starts: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.lengths)

    def records(self) -> list[bytes]:
        """The records as ``bytes`` (one copy each; TensorFlow does not need this)."""
        data = self.payload
        spans = zip(self.starts.tolist(), self.lengths.tolist(), strict=True)
        return [data[s: s + n] for s, n in spans]


def _malformed(offset: int, reason: str) -> ValueError:
    return ValueError(f"at byte offset {offset}: {reason}")


def pack(records: Iterable[bytes]) -> bytes:
    """The payload of a batch of *records* (what the JVM makes; for tests and tools)."""
    records = list(records)
    table = np.array([len(r) for r in records], dtype=LENGTH)
    return table.tobytes() + b"".join(records)


def locate(payload: bytes | bytearray | memoryview, records: int) -> Batch:
    """The *records* records of *payload* (see the module docs), located without a copy of
    each.

    Raises:
        ValueError: ``"at byte offset N: ..."``: the payload is too short for its table, or
            the lengths do not add up to the bytes after it (checked before any record is
            cut). The feed turns it into a ``ClusterError`` naming the batch.
    """
    data = bytes(payload)
    size = len(data)
    table = records * LENGTH.itemsize
    if records < 0 or table > size:
        raise _malformed(0, f"a table of {records} lengths needs {table} bytes, but the "
                            f"batch has {size}")
    lengths = np.frombuffer(data, dtype=LENGTH, count=records).astype(np.int64)
    ends = np.cumsum(lengths) + table if records else np.zeros(0, np.int64)
    if records and ends[-1] != size:
        # Name the first record that runs past the end, or the end if they fall short.
        over = np.flatnonzero(ends > size)
        at = int(over[0]) if len(over) else records - 1
        raise _malformed(
            int(ends[at] - lengths[at]),
            f"record {at} of {records} ends at byte {int(ends[at])}; the records should "
            f"fill the batch's {size} bytes exactly",
        )
    if not records and size != 0:
        raise _malformed(0, f"{size} bytes in a batch of no records")
    return Batch(data, ends - lengths, lengths)
