"""The frame scanner: :func:`scan` walks the frames of a buffer in one call and returns the
offsets and lengths of its whole, valid records as arrays, plus where it stopped and why
(:class:`Stop`); :func:`resync` finds the next valid record after damage, in time linear in the
bytes it looks at."""

from __future__ import annotations

import enum
import struct
from array import array
from itertools import repeat
from typing import Any

import crc32c as _crc32c
import numpy as np

from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.framing.damage import (
    DATA_CHECKSUM_MISMATCH,
    LENGTH_CHECKSUM_MISMATCH,
    damage_error,
    too_long,
    truncated,
)
from tfrecord_io.framing.layout import (
    DEFAULT_MAX_RECORD_BYTES,
    FOOTER_BYTES,
    FRAMING_BYTES,
    HEADER_BYTES,
    MASK_DELTA,
    Buffer,
    masked_crc32c,
)

__all__ = [
    "CrcBudget", "Stop", "Frames", "scan", "resync"]

_U32 = 0xFFFFFFFF
_CACHE_LIMIT = 4096  # distinct lengths whose header CRC is remembered
_RUN_PROBE = 8  # equal lengths in a row before the rest of the run is checked vectorised
_FIRST_WINDOW = 4096  # resync looks at this many positions first, then twice as many, ...
_MAX_WINDOW = 1 << 20
_crc = _crc32c.crc32c
_HEADER_CRCS: dict[int, int] = {}  # the default cache of header CRCs by length
_unpack_u64 = struct.Struct("<Q").unpack_from
_pack_u64 = struct.Struct("<Q").pack
_SPAN4 = np.arange(4, dtype=np.int64)
_EMPTY = np.zeros(0, np.int64)
#: The longest record any file can hold: no file has more bytes than an int64 counts. Lengths
#: are also handled as int64 in numpy, where a longer one would turn negative.
_LONGEST = 2**63 - 1


class Stop(enum.Enum):
    """Why a :func:`scan` or :func:`resync` stopped."""

    #: The buffer holds no more records to read: the end of the data (``final``) or of the range.
    END = "end"
    #: The record at ``stop`` is not complete in the buffer: ``need`` bytes from ``stop`` are.
    MORE = "more"
    #: The record at ``stop`` is damaged (``reason`` says how).
    DAMAGED = "damaged"
    #: (:func:`resync` only) a whole, valid record starts at ``stop``.
    FOUND = "found"


class CrcBudget:
    """The data bytes that :func:`resync` may check against CRCs while it looks for one next
    record, across the calls that look for it (it stops with ``Stop.DAMAGED`` once they are
    spent). Each header whose own CRC matches costs a data CRC over the length it announces:
    a crafted file of back-to-back such headers would cost time quadratic in its size, while
    undamaged-looking data costs at most the next record's length. :meth:`for_records` gives
    the budget the readers use."""

    def __init__(self, nbytes: int) -> None:
        self.left = nbytes  #: bytes still to spend

    @classmethod
    def for_records(cls, max_record_bytes: int) -> CrcBudget:
        """Twice the longest record allowed (at least 64 MiB): enough for the next record and
        the rare header that looks valid by chance, whatever the distance scanned."""
        return cls(max(2 * max_record_bytes, 64 << 20))


class Frames:
    """The whole, valid records found by :func:`scan` in one buffer, and where it stopped.

    Attributes:
        buffer: the buffer scanned.
        starts: int64 array, offset in the buffer of each record's data.
        lengths: int64 array, each record's data length.
        records: the records as ``bytes`` (when scanned with ``cut=True``), else None.
        stop: offset in the buffer just after the last record (where the next one starts).
        status: why scanning stopped (:class:`Stop`).
        need: under ``Stop.MORE``, how many bytes from ``stop`` the buffer must hold for the
            scan to get further (never more than the record can have: checked lengths only).
        reason: under ``Stop.DAMAGED``, what is wrong with the record at ``stop``.
        truncated: under ``Stop.DAMAGED``, whether the damage is the data ending inside it.
        have: under ``Stop.DAMAGED`` with ``truncated``, how many of its bytes exist.
        base: the offset of the buffer's byte 0 in the stream, as given to :func:`scan`.
    """

    __slots__ = ("buffer", "starts", "lengths", "records", "stop", "status", "need", "reason",
                 "truncated", "have", "base")

    def __init__(self, buffer: Buffer, starts: np.ndarray, lengths: np.ndarray,
                 records: list[bytes] | None, stop: int, status: Stop, base: int,
                 need: int = 0, reason: str | None = None, truncated: bool = False,
                 have: int = 0) -> None:
        self.buffer = buffer
        self.starts = starts
        self.lengths = lengths
        self.records = records
        self.stop = stop
        self.status = status
        self.need = need
        self.reason = reason
        self.truncated = truncated
        self.have = have
        self.base = base

    def __len__(self) -> int:
        return len(self.starts)

    def offsets(self) -> np.ndarray:
        """Stream offset of each record (of its header), int64."""
        return self.starts + (self.base - HEADER_BYTES)

    def error(self, path: str, range_start: int = 0) -> CorruptRecordError:
        """The error for the damage this scan stopped at (``Stop.DAMAGED`` only), in a read of
        *path* from *range_start* on (see :func:`~tfrecord_io.framing.damage.damage_error`)."""
        assert self.status is Stop.DAMAGED and self.reason is not None
        return damage_error(path, self.base + self.stop, self.reason, range_start)

    def __repr__(self) -> str:
        return (f"Frames({len(self)} records, stop={self.stop}, status={self.status.name}, "
                f"need={self.need}, reason={self.reason!r})")


def _u32_at(raw: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The little-endian uint32 values at *positions* of the uint8 array *raw*, as uint64."""
    return raw[positions[:, None] + _SPAN4].view("<u4").ravel().astype(np.uint64)


def _mask(crcs: np.ndarray) -> np.ndarray:
    return (((crcs >> 15) | (crcs << 17)) + MASK_DELTA) & _U32


def _header_crc(length: int, cache: dict[int, int]) -> int:
    crc = cache.get(length)
    if crc is None:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        crc = cache[length] = masked_crc32c(_pack_u64(length))
    return crc


def _expected_header_crcs(lengths: np.ndarray, cache: dict[int, int]) -> np.ndarray | int:
    first = int(lengths[0])
    if (lengths == first).all():
        return _header_crc(first, cache)
    distinct, which = np.unique(lengths, return_inverse=True)
    table = np.fromiter((_header_crc(int(n), cache) for n in distinct), np.uint64, len(distinct))
    return table[which]


def _first_bad_header(raw: np.ndarray, heads: np.ndarray, lengths: np.ndarray,
                      cache: dict[int, int]) -> int:
    stored = _u32_at(raw, heads + 8)
    bad = np.flatnonzero(stored != _expected_header_crcs(lengths, cache))
    return int(bad[0]) if len(bad) else len(heads)


def _first_bad_data(raw: np.ndarray, pieces: Any, stops: np.ndarray) -> int:
    n = len(stops)
    crcs = np.fromiter(map(_crc, pieces), np.uint64, n)
    bad = np.flatnonzero(_mask(crcs) != _u32_at(raw, stops))
    return int(bad[0]) if len(bad) else n


def _cut(buf: Buffer, starts: np.ndarray, stops: np.ndarray, lens: np.ndarray) -> list[bytes]:
    """Each record's data as bytes: records of one length, one after the other, are made by
    numpy in one call (a strided view as fixed-size byte strings); others one slice each."""
    n = len(starts)
    size = int(lens[0])
    if n > 1 and size and lens[-1] == size and starts[-1] - starts[0] == (n - 1) * (size + 16):
        if (lens == size).all() and (np.diff(starts) == size + FRAMING_BYTES).all():
            rows = np.ndarray((n,), f"V{size}", buf, int(starts[0]), (size + FRAMING_BYTES,))
            return rows.tolist()
    return list(map(buf.__getitem__, map(slice, starts.tolist(), stops.tolist())))


def _extend_run(buf: Buffer, pos: int, length: int, last: int, blen: int,
                heads: array, lengths: array) -> int:
    """Take, in one vectorised step, the records of *length* data bytes that follow each
    other from *pos* (each starting before *last*, each whole in the buffer)."""
    stride = length + FRAMING_BYTES
    count = min((blen - pos) // stride, -((pos - last) // stride))
    if count <= 0:
        return pos
    view = np.ndarray((count,), "<u8", buf, pos, (stride,))
    same = view == length
    taken = count if same.all() else int(same.argmin())
    heads.extend(range(pos, pos + taken * stride, stride))
    lengths.extend(repeat(length, taken))
    return pos + taken * stride


def scan(
    buf: Buffer,
    base: int = 0,
    *,
    pos: int = 0,
    end: int | None = None,
    verify: bool = True,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    final: bool = False,
    remaining: int | None = None,
    cut: bool = False,
    header_crcs: dict[int, int] | None = None,
) -> Frames:
    """Find the whole, valid records in ``buf[pos:]``, in order, up to the first that is not.

    Args:
        buf: the bytes; ``buf[0]`` is at offset *base* of the stream.
        pos: where in *buf* the first record starts.
        end: stream offset: records starting at or after it are not taken (``Stop.END``).
        verify: also check every record's data CRC. Lengths and their CRCs are always checked
            (cheap: one CRC per distinct length), so that damage is found at the record it is
            in, never followed into misaligned bytes read as records.
        max_record_bytes: the largest data length accepted.
        final: no bytes follow *buf*: a record cut short is damage, not ``Stop.MORE``.
        remaining: how many bytes can still follow *buf* (None: unknown). A header announcing
            more than can exist is damage at once, without anything read or allocated for it.
        cut: also return each record's data as ``bytes`` (``Frames.records``), one slice each.
        header_crcs: a cache of header CRCs by length (None: one shared by all callers).

    Returns:
        :class:`Frames`. Records before the first damaged one are returned, the damaged one is
        at ``stop``; nothing is ever allocated from an unchecked length.
    """
    cache = _HEADER_CRCS if header_crcs is None else header_crcs
    blen = len(buf)
    last = blen - HEADER_BYTES + 1  # a header must start before this
    if end is not None:
        last = min(last, end - base)
    max_len = max_record_bytes
    heads = array("q")
    lengths = array("q")
    add_head = heads.append
    add_length = lengths.append
    unpack = _unpack_u64
    previous = -1
    run = 0
    while pos < last:
        length = unpack(buf, pos)[0]
        following = pos + length + FRAMING_BYTES
        if following > blen or length > max_len:
            break
        add_head(pos)
        add_length(length)
        pos = following
        if length == previous:
            run += 1
            if run == _RUN_PROBE:
                pos = _extend_run(buf, pos, length, last, blen, heads, lengths)
                run = 0
        else:
            previous = length
            run = 0

    raw = np.frombuffer(buf, np.uint8)
    h = np.frombuffer(heads, np.int64) if heads else _EMPTY
    n = len(h)
    lens = np.frombuffer(lengths, np.int64) if lengths else _EMPTY
    if n:  # length CRCs always: a damaged length must not be followed into misaligned bytes
        good = _first_bad_header(raw, h, lens, cache)
        if good < n:
            h, lens = h[:good], lens[:good]
            pos = heads[good]
            n = good
            reason: str | None = LENGTH_CHECKSUM_MISMATCH
        else:
            reason = None
    else:
        reason = None
    starts = h + HEADER_BYTES
    stops = starts + lens
    records: list[bytes] | None = [] if cut else None
    if n:
        if cut:
            records = _cut(buf, starts, stops, lens)
        if verify:
            if records is not None:
                pieces: Any = records
            else:
                view = memoryview(buf)
                pieces = map(view.__getitem__, map(slice, starts.tolist(), stops.tolist()))
            good = _first_bad_data(raw, pieces, stops)
            if good < n:
                starts, lens = starts[:good], lens[:good]
                if records is not None:
                    del records[good:]
                pos = heads[good]
                reason = DATA_CHECKSUM_MISMATCH
    if reason is not None:
        return Frames(buf, starts, lens, records, pos, Stop.DAMAGED, base, reason=reason)
    return _stopped(buf, base, pos, starts, lens, records, last, end, max_len, final, remaining,
                    cache)


def _stopped(buf: Buffer, base: int, pos: int, starts: np.ndarray, lens: np.ndarray,
             records: list[bytes] | None, last: int, end: int | None, max_len: int,
             final: bool, remaining: int | None, cache: dict[int, int]) -> Frames:
    """The Frames of a scan whose records are all valid: why did it stop at *pos*?"""
    blen = len(buf)
    if end is not None and pos >= end - base:
        return Frames(buf, starts, lens, records, pos, Stop.END, base)
    have = blen - pos
    if have < HEADER_BYTES:
        if final or (remaining is not None and have + remaining < HEADER_BYTES):
            have += 0 if final else remaining or 0
            if have == 0:
                return Frames(buf, starts, lens, records, pos, Stop.END, base)
            return Frames(buf, starts, lens, records, pos, Stop.DAMAGED, base,
                          reason=truncated(have, None), truncated=True, have=have)
        return Frames(buf, starts, lens, records, pos, Stop.MORE, base, need=HEADER_BYTES)
    length = _unpack_u64(buf, pos)[0]
    if _header_crc(length, cache) != struct.unpack_from("<I", buf, pos + 8)[0]:
        return Frames(buf, starts, lens, records, pos, Stop.DAMAGED, base,
                      reason=LENGTH_CHECKSUM_MISMATCH)
    if length > max_len:
        return Frames(buf, starts, lens, records, pos, Stop.DAMAGED, base,
                      reason=too_long(length, max_len))
    size = length + FRAMING_BYTES
    if final or (remaining is not None and have + remaining < size):
        exists = have if final else have + (remaining or 0)
        return Frames(buf, starts, lens, records, pos, Stop.DAMAGED, base,
                      reason=truncated(exists, length), truncated=True, have=exists)
    return Frames(buf, starts, lens, records, pos, Stop.MORE, base, need=size)


def resync(
    buf: Buffer,
    base: int = 0,
    *,
    pos: int = 0,
    end: int | None = None,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    final: bool = False,
    remaining: int | None = None,
    header_crcs: dict[int, int] | None = None,
    budget: CrcBudget | None = None,
) -> tuple[Stop, int, int]:
    """Find the first offset at or after *pos* holding a whole record whose two CRCs match.

    Candidates are filtered vectorised (a length within bounds, then the header CRC, computed
    once per distinct length); only a candidate with a valid header costs a data CRC. No bytes
    are copied per candidate, and the positions looked at grow geometrically, so the time is
    linear in the distance scanned plus the data CRCs of valid-looking headers.

    Args: as for :func:`scan`; *budget*: the data bytes that may still be checked against
        CRCs (spent as they are; None: no limit).

    Returns:
        ``(status, position, need)``: ``(Stop.FOUND, p, 0)`` a record starts at ``p``;
        ``(Stop.MORE, p, need)`` the buffer must hold *need* bytes from ``p`` to decide about
        ``p`` (call again with ``pos=p`` once it does); ``(Stop.END, p, 0)`` there is none
        before *end* or, with *final*, before the end of the data (``p``: where looking stopped);
        ``(Stop.DAMAGED, p, 0)`` the budget is spent before the candidate at ``p`` was decided.
    """
    cache = _HEADER_CRCS if header_crcs is None else header_crcs
    blen = len(buf)
    last = blen - HEADER_BYTES  # the last position where a header fits
    if end is not None:
        last = min(last, end - base - 1)
    exists = None if not final and remaining is None else blen + (0 if final else remaining)
    raw = np.frombuffer(buf, np.uint8)
    view = memoryview(buf)
    window = _FIRST_WINDOW
    while pos <= last:
        count = min(last + 1 - pos, window)
        lens = np.ndarray((count,), "<u8", buf, pos, (1,))
        room = None if exists is None else exists - FRAMING_BYTES - pos
        bound = min(max_record_bytes, _LONGEST) if room is None else min(max_record_bytes, room)
        where = np.flatnonzero(lens <= bound) if bound >= 0 else np.zeros(0, np.int64)
        if room is not None and len(where):
            # the record must also end within the data: position + 16 + length <= exists
            where = where[lens[where].astype(np.int64) + where <= room]
        if len(where):
            cand_lens = lens[where].astype(np.int64)
            stored = _u32_at(raw, where + pos + 8)
            valid = np.flatnonzero(stored == _expected_header_crcs(cand_lens, cache))
            for i in valid.tolist():
                p = pos + int(where[i])
                length = int(cand_lens[i])
                data_end = p + HEADER_BYTES + length
                if data_end + FOOTER_BYTES > blen:
                    return Stop.MORE, p, length + FRAMING_BYTES
                if budget is not None:
                    if length > budget.left:
                        return Stop.DAMAGED, p, 0
                    budget.left -= length
                stored_crc = struct.unpack_from("<I", buf, data_end)[0]
                if masked_crc32c(view[p + HEADER_BYTES:data_end]) == stored_crc:
                    return Stop.FOUND, p, 0
        pos += count
        window = min(window * 2, _MAX_WINDOW)
    if end is not None and pos >= end - base:
        return Stop.END, pos, 0
    if final:
        return Stop.END, blen, 0
    return Stop.MORE, pos, HEADER_BYTES
