"""The sidecar split index of TFRecord files (``.tfindex``), as specified in
``docs/index-format.md``.

The index of ``DIR/NAME`` is ``DIR/_NAME.tfindex``: UTF-8 text, one line ``"<offset> <length>\\n"``
per record in file order, where *offset* is where the record's framing starts in the
(uncompressed) data file and *length* its whole framed size (data length + 16) -- the layout
of NVIDIA DALI's ``tfrecord2idx`` and of the PyPI ``tfrecord`` package's indexes -- then a
trailer line ``"# <count> records\\n"``. Indexes without the trailer (written before it, or by
those tools) are read alike.

An index is trusted only when it matches its data file (:func:`load_index`): first record at 0,
each record starting where the previous one ends, the last ending at the file's size, and the
data file holding that last record's header where the index says (a file rewritten to the same
length by another tool is caught by the last check; the JVM's split planner, which reads the
index only, meets such a file as a damaged record at the first byte it cuts it).

Entries are ``(offset, length)`` tuples; byte ranges are ``(start, end)`` tuples, end exclusive.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from typing import BinaryIO

from tfrecord_io import compression as codec
from tfrecord_io import framing, fs
from tfrecord_io import records as _records
from tfrecord_io.records.sidecar import INDEX_SUFFIX, index_path, trailer

__all__ = [
    "INDEX_SUFFIX",
    "index_path",
    "scan",
    "write_index",
    "read_index",
    "load_index",
    "split_ranges",
    "ranges_for_size",
]

log = logging.getLogger(__name__)

_FRAMING = framing.FRAMING_BYTES
# Numbers of at most 20 digits, as many as 2**64 - 1 has: a longer one is malformed, not parsed.
_WELL_FORMED = re.compile(rb"(?:[0-9]{1,20} [0-9]{1,20}\n)*(?:# ([0-9]{1,20}) records\n)?")

Entry = tuple[int, int]


def scan(
    source: _records.Source,
    compression: str | None = None,
    *,
    verify: bool = True,
    max_record_bytes: int = _records.DEFAULT_MAX_RECORD_BYTES,
) -> Iterator[Entry]:
    """Read a TFRecord file and yield ``(offset, framed_length)`` for each record.

    The records' CRCs are checked (their data CRCs unless ``verify=False``); damage raises
    :class:`~tfrecord_io.errors.CorruptRecordError`. Arguments are as for
    :func:`tfrecord_io.records.read`.
    """
    with _records.RecordReader(
        source, compression, verify, max_record_bytes=max_record_bytes
    ) as reader:
        for data in reader:
            yield reader.offset, len(data) + _FRAMING  # type: ignore[misc]


def write_index(data_path: str | os.PathLike[str], index: Iterable[Entry] | None = None) -> str:
    """Write the sidecar index of an uncompressed TFRecord file and return the index's path.

    Args:
        data_path: local path, ``file://`` or ``hdfs://``/``webhdfs://``/``s3://`` URL of the
            data file.
        index: the entries, if already known; by default the file is scanned (with CRC checks).
            Given entries are checked for consistency, and against the file's size when it is
            local.

    Raises:
        ValueError: the file is compressed (by name), or the given entries are inconsistent.
        CorruptRecordError: scanning found damage.
    """
    if codec.detect(data_path) != codec.NONE:
        raise ValueError(f"cannot index {data_path}: compressed files are not splittable")
    ipath = index_path(data_path)
    if index is None:
        entries = list(scan(data_path, compression="none"))
    else:
        entries = [(int(o), int(n)) for o, n in index]
        _check_entries(entries, str(ipath))
        if fs.is_local(data_path):
            size = fs.stat(data_path).size
            end = _end_of(entries)
            if end != size:
                raise ValueError(
                    f"the given index ends at byte {end} but {data_path} has {size} bytes"
                )
    _write_index_text(ipath, "".join(f"{o} {n}\n" for o, n in entries) + trailer(len(entries)))
    return ipath


def read_index(source: _records.Source) -> list[Entry]:
    """Parse an index file (path, URL or binary file object) into ``(offset, length)`` entries.

    Checks the syntax (lines of two decimal numbers separated by one space, each line ending in
    ``\\n``) and the consistency of the entries: the first record at offset 0, each record
    starting where the previous one ends, every length at least 16.

    Raises:
        ValueError: the index is malformed; the message says where.
        OSError: the index cannot be read.
    """
    with contextlib.ExitStack() as stack:
        if fs.is_location(source):
            stream = stack.enter_context(fs.open(source, "rb"))  # type: ignore[arg-type]
        else:
            stream = source  # type: ignore[assignment]
        data = stream.read()
    return _parse(data, fs.name(source))


def load_index(
    data_path: str | os.PathLike[str], data_size: int | None = None
) -> list[Entry] | None:
    """Return the index entries of a data file if its sidecar index exists and is valid for it.

    Valid means well-formed (see :func:`read_index`), ending exactly at the data file's size,
    and the data file holding the header of a record of the last entry's length at its offset
    (12 bytes read there: the one check that catches a file rewritten to the same size). A
    missing index gives None; a malformed or stale one gives None and logs a warning. No more
    of the index is read than the longest index of a file of that size could hold: a longer
    one is stale.

    Args:
        data_path: local path or URL of the data file.
        data_size: the data file's size in bytes, if known (saves a lookup).

    Raises:
        OSError: the index exists but cannot be read now (a timeout, a store that does not
            answer). Never taken for "no index": workers that plan their shards from the same
            listing must all see the same indexes, or records are read twice or not at all.
    """
    ipath = index_path(data_path)
    try:
        stream = fs.open(ipath, "rb")
    except FileNotFoundError:
        log.debug("No index %s", ipath)
        return None
    with stream:
        if data_size is None:
            data_size = _size_of(data_path)
        most = _most_index_bytes(data_size)
        data = _read_at_most(stream, most + 1)
    if len(data) > most:
        log.warning(
            "Ignoring stale index %s: it is longer than any index of the %d bytes of %s "
            "(%d bytes at most), so it describes another file; not read further",
            ipath,
            data_size,
            os.fspath(data_path),
            most,
        )
        return None
    try:
        entries = _parse(data, ipath)
    except ValueError as exc:
        log.warning("Ignoring malformed index: %s", exc)
        return None
    end = _end_of(entries)
    if end != data_size:
        log.warning(
            "Ignoring stale index %s: it describes %d bytes, but %s has %d bytes",
            ipath,
            end,
            os.fspath(data_path),
            data_size,
        )
        return None
    if entries and not _holds_last_record(data_path, entries[-1]):
        offset, length = entries[-1]
        log.warning(
            "Ignoring stale index %s: %s holds no record of %d bytes at byte %d, where the "
            "index's last line puts one (the file was rewritten after it was indexed); "
            "`tfrecord-io verify` shows the first difference",
            ipath,
            os.fspath(data_path),
            length,
            offset,
        )
        return None
    return entries


def split_ranges(entries: Sequence[Entry], num_splits: int) -> list[tuple[int, int]]:
    """Cut a file into at most *num_splits* contiguous byte ranges on record boundaries.

    The ranges cover every record exactly once, in order, and are as equal in bytes as record
    boundaries allow: cut ``k`` goes to the record boundary nearest to ``k/num_splits`` of the
    way through the file. There are ``min(num_splits, len(entries))`` ranges, none empty, and
    none at all when there are no records.

    Raises:
        ValueError: if *num_splits* < 1.
    """
    if num_splits < 1:
        raise ValueError(f"num_splits must be at least 1, not {num_splits}")
    n = len(entries)
    if n == 0:
        return []
    offsets = [offset for offset, _ in entries]
    first = offsets[0]
    last = _end_of(entries)
    count = min(num_splits, n)
    total = last - first
    bounds = [first]
    prev = 0  # index of the record at which the previous range starts
    for k in range(1, count):
        target = first + (total * k + count // 2) // count
        # Range k may start at records prev+1 .. n-(count-k), leaving one record per range.
        lo, hi = prev + 1, n - (count - k)
        i = bisect_left(offsets, target, lo, hi + 1)
        if i > hi or (i > lo and target - offsets[i - 1] <= offsets[i] - target):
            i -= 1
        bounds.append(offsets[i])
        prev = i
    bounds.append(last)
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def ranges_for_size(entries: Sequence[Entry], split_bytes: int) -> list[tuple[int, int]]:
    """Cut a file into byte ranges of about *split_bytes* each, Hadoop style: every cut is moved
    forward to the next record boundary, so each range holds at least *split_bytes* bytes except
    possibly the last, and a record larger than *split_bytes* gets a range of its own.

    Raises:
        ValueError: if *split_bytes* < 1.
    """
    if split_bytes < 1:
        raise ValueError(f"split_bytes must be at least 1, not {split_bytes}")
    n = len(entries)
    if n == 0:
        return []
    offsets = [offset for offset, _ in entries]
    last = _end_of(entries)
    ranges = []
    i = 0
    start = offsets[0]
    while i < n:
        j = bisect_left(offsets, start + split_bytes, i + 1)
        stop = offsets[j] if j < n else last
        ranges.append((start, stop))
        start, i = stop, j
    return ranges


# --------------------------------------------------------------------------------------------
# Internals


def _end_of(entries: Sequence[Entry]) -> int:
    if not entries:
        return 0
    offset, length = entries[-1]
    return offset + length


def _parse(data: bytes, name: str) -> list[Entry]:
    """Parse and check index text; raise ValueError naming *name* and the bad line."""
    whole = _WELL_FORMED.fullmatch(data)
    if not whole:
        good = _WELL_FORMED.match(data)
        consumed = good.end() if good else 0
        line = data.count(b"\n", 0, consumed) + 1
        snippet = data[consumed:consumed + 40].split(b"\n", 1)[0]
        raise ValueError(
            f"malformed index {name}, line {line}: expected '<offset> <length>\\n', "
            f"found {snippet!r}" + ("" if data.endswith(b"\n") else " (missing final newline?)")
        )
    body = data if whole.group(1) is None else data[:whole.start(1) - 2]
    numbers = list(map(int, body.split()))
    entries = list(zip(numbers[0::2], numbers[1::2], strict=True))
    if whole.group(1) is not None and int(whole.group(1)) != len(entries):
        raise ValueError(
            f"malformed index {name}: its last line says {int(whole.group(1))} records, but "
            f"it lists {len(entries)}"
        )
    _check_entries(entries, name)
    return entries


def _check_entries(entries: Sequence[Entry], name: str) -> None:
    """Check that entries are contiguous from 0 with lengths of at least 16 bytes."""
    if not entries:
        return
    offsets = [offset for offset, _ in entries]
    lengths = [length for _, length in entries]
    expected = list(accumulate(lengths[:-1], initial=0))
    if offsets != expected or min(lengths) < _FRAMING:
        for line, (offset, length) in enumerate(entries, 1):
            if offset != expected[line - 1]:
                raise ValueError(
                    f"malformed index {name}, line {line}: record offset {offset}, but the "
                    f"previous record ends at {expected[line - 1]}"
                )
            if length < _FRAMING:
                raise ValueError(
                    f"malformed index {name}, line {line}: record length {length} is less "
                    f"than the {_FRAMING} bytes of framing"
                )


#: The longest line of an index: two numbers of 20 digits, a space and a newline.
_MOST_LINE_BYTES = 2 * 20 + 2
#: The longest trailer: ``"# <count> records\n"`` with a count of 20 digits.
_MOST_TRAILER_BYTES = len(trailer(10**20 - 1))


def _most_index_bytes(data_size: int) -> int:
    """The size of the longest index that can describe a data file of *data_size* bytes: one
    line of the longest numbers per record of the least size (16 bytes), and a trailer."""
    return data_size // _FRAMING * _MOST_LINE_BYTES + _MOST_TRAILER_BYTES


def _read_at_most(stream: BinaryIO, limit: int) -> bytes:
    """The first *limit* bytes of *stream* (fewer only at its end), over short reads."""
    parts = []
    left = limit
    while left > 0:
        part = stream.read(min(left, 1 << 24))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _holds_last_record(data_path: str | os.PathLike[str], entry: Entry) -> bool:
    """Whether the data file holds, at the entry's offset, the header of a record of its
    length (on an object store, one ranged read of at most that record)."""
    offset, length = entry
    with fs.open(data_path, "rb") as stream:
        stream.seek(offset)
        found = stream.read(framing.HEADER_BYTES)
    return found == framing.header(length - _FRAMING)


def _size_of(data_path: str | os.PathLike[str]) -> int:
    return fs.stat(data_path).size


def _write_index_text(ipath: str, text: str) -> None:
    """Write index text to a path or URL, atomically: readers see the old index or the new one,
    never part of one (on HDFS, for a moment, none)."""
    with fs.atomic_write(ipath) as f:
        f.write(text.encode("ascii"))
    log.debug("Wrote index %s", ipath)
