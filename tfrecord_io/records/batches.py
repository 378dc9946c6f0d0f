"""The records of a TFRecord file a batch at a time: :func:`read_batches` (lists of ``bytes`` or
Arrow arrays), for consumers such as PyTorch and pandas."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.framing import DEFAULT_MAX_RECORD_BYTES
from tfrecord_io.records.reader import Chunk, RecordReader, Source

__all__ = ["BATCH_FORMATS", "read_batches"]


#: The forms :func:`read_batches` yields batches in.
BATCH_FORMATS = ("list", "arrow")


def read_batches(
    source: Source,
    batch_size: int = 1024,
    *,
    format: str = "list",  # noqa: A002 - the name users expect
    compression: str | None = None,
    verify: bool = True,
    start: int = 0,
    end: int | None = None,
    on_corrupt: str = "fail",
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> Iterator[Any]:
    """Yield the records of a TFRecord file in batches of *batch_size* (the last may be
    smaller), in order: the fastest way to read records into Python.

    ``format="list"`` yields lists of ``bytes``. ``format="arrow"`` yields
    ``pyarrow.BinaryArray`` s (``LargeBinaryArray`` when a batch holds 2 GiB or more) built from
    one contiguous data buffer and an offsets array -- no Python object per record -- ready for
    ``pyarrow.Table``/pandas, or for a PyTorch ``IterableDataset`` that decodes a batch at a
    time. Reading, checks and damage handling are those of :class:`RecordReader` (see it for
    the other arguments); under ``on_corrupt="fail"`` every record before the damage is
    yielded (in a last, shorter batch) before the error.

    Example::

        for batch in read_batches("part-0.tfrecord", 4096, format="arrow"):
            table = pyarrow.table({"record": batch})

    Raises:
        ValueError: a *batch_size* below 1 or an unknown *format*.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, not {batch_size!r}")
    if format not in BATCH_FORMATS:
        raise ValueError(f"format must be one of {', '.join(BATCH_FORMATS)}, not {format!r}")
    with RecordReader(source, compression, verify, start=start, end=end,
                      on_corrupt=on_corrupt, max_record_bytes=max_record_bytes) as reader:
        if format == "list":
            yield from _list_batches(reader, batch_size)
        else:
            yield from _arrow_batches(reader, batch_size)


def _list_batches(reader: RecordReader, batch_size: int) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    try:
        for frames in reader.scans(cut=True):
            records: list[bytes] = frames.records  # type: ignore[assignment]
            taken, n = 0, len(records)
            if not batch and n == batch_size:
                yield records
                continue
            while taken < n:
                room = batch_size - len(batch)
                if not batch and n - taken >= batch_size:
                    batch = records[taken:taken + batch_size]
                else:
                    batch.extend(records[taken:taken + room])
                taken += min(room, n - taken)
                if len(batch) == batch_size:
                    yield batch
                    batch = []
    except CorruptRecordError:
        if batch:  # the records before the damage first
            yield batch
        raise
    if batch:
        yield batch


def _arrow_batches(reader: RecordReader, batch_size: int) -> Iterator[Any]:
    import pyarrow as pa  # noqa: PLC0415 - pyarrow only for format="arrow"

    if reader.verify:
        # With CRCs to check, each record is cut as bytes anyway (its CRC is computed on it):
        # a batch's data buffer is then their join, one copy.
        for batch in _list_batches(reader, batch_size):
            lengths = np.fromiter(map(len, batch), np.int64, len(batch))
            yield _binary_array(pa, [b"".join(batch)], [lengths], len(batch))
        return
    # Without, the records' data is packed from each scanned buffer in one copy.

    data: list[bytes] = []
    lengths: list[Any] = []
    count = 0
    scans = reader.scans(cut=False)
    while True:
        try:
            frames = next(scans)
        except StopIteration:
            break
        except CorruptRecordError:
            if count:  # the records before the damage first
                yield _binary_array(pa, data, lengths, count)
            raise
        chunk = Chunk(frames.buffer, frames.starts, frames.lengths, None)
        packed = _packed(chunk)
        n = len(chunk.lengths)
        taken = 0
        ends = None
        while taken < n:
            take = min(batch_size - count, n - taken)
            if taken == 0 and take == n:
                data.append(packed)
                lengths.append(chunk.lengths)
            else:
                if ends is None:
                    ends = np.cumsum(chunk.lengths)
                first = int(ends[taken - 1]) if taken else 0
                data.append(packed[first:int(ends[taken + take - 1])])
                lengths.append(chunk.lengths[taken:taken + take])
            taken += take
            count += take
            if count == batch_size:
                yield _binary_array(pa, data, lengths, count)
                data, lengths, count = [], [], 0
    if count:
        yield _binary_array(pa, data, lengths, count)


def _packed(chunk: Chunk) -> bytes:
    """The data of a chunk's records back to back, in one copy."""
    starts, lengths = chunk.starts, chunk.lengths
    n = len(starts)
    size = int(lengths[0])
    if (lengths == size).all() and (n == 1 or (np.diff(starts) == size + 16).all()):
        rows = np.ndarray((n, size), np.uint8, chunk.buffer, int(starts[0]), (size + 16, 1))
        return rows.tobytes()
    view = memoryview(chunk.buffer)
    return b"".join(map(view.__getitem__, map(slice, starts.tolist(),
                                              (starts + lengths).tolist())))


def _binary_array(pa: Any, data: list[bytes], lengths: list[Any], count: int) -> Any:
    values = data[0] if len(data) == 1 else b"".join(data)
    large = len(values) >= 1 << 31
    offsets = np.zeros(count + 1, np.int64 if large else np.int32)
    np.cumsum(np.concatenate(lengths) if len(lengths) > 1 else lengths[0], out=offsets[1:])
    kind = pa.large_binary() if large else pa.binary()
    return pa.Array.from_buffers(kind, count, [None, pa.py_buffer(offsets),
                                               pa.py_buffer(values)])
