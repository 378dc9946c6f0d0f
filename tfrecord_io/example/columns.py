"""Serialized records -> columns: each feature's values gathered across a batch of records.

Two decoders give the same :class:`Column` objects: a vectorised numpy one for Examples in the
canonical wire form, and a protobuf one for any valid encoding (and for error messages).
The columns are typed by :mod:`tfrecord_io.example.inference`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from tfrecord_io.errors import SchemaError
from tfrecord_io.example.values import (
    BYTES_LIST,
    FLOAT_LIST,
    INT64_LIST,
    KIND_LABEL,
    RecordBytes,
    check_record_type,
    log_undecodable_names,
    parse_message,
)
from tfrecord_io.example.wire import gather, segments, varint_at, varint_stream, wire_size
from tfrecord_io.proto import example_pb2 as _pb

__all__ = ["Column", "collect", "container_lengths"]


_KIND_CODE = {None: 0, BYTES_LIST: 1, FLOAT_LIST: 2, INT64_LIST: 3}
_CODE_KIND = (None, BYTES_LIST, FLOAT_LIST, INT64_LIST)


class Column:
    """One feature across records, columnar.

    ``rows[j]`` is the record of entry j, ``kinds[j]`` its kind code (0: no kind set, then
    ``lengths[j]`` is 0), ``lengths[j]`` its number of values; ``values`` holds all entries'
    values concatenated (numpy int64 / float32, or an Arrow binary array), or None when the
    entries have no kind or conflicting kinds. For a feature list, entries are steps and
    ``steps[r]`` is the number of steps of the r-th record that has the feature list
    (``rows`` then has one item per such record).
    """

    __slots__ = ("rows", "kinds", "lengths", "values", "steps")

    def __init__(
        self,
        rows: np.ndarray,
        kinds: np.ndarray,
        lengths: np.ndarray,
        values: Any,
        steps: np.ndarray | None = None,
    ) -> None:
        self.rows: np.ndarray = rows
        self.kinds: np.ndarray = kinds
        self.lengths: np.ndarray = lengths
        self.values: Any = values
        self.steps: np.ndarray | None = steps

    def kind(self, name: str, what: str) -> str | None:
        codes = np.flatnonzero(np.bincount(self.kinds, minlength=4)[1:]) + 1
        if len(codes) > 1:
            labels = " and ".join(sorted(KIND_LABEL[_CODE_KIND[c]] for c in codes))
            raise SchemaError(f"{what} {name!r} has conflicting kinds across records: {labels}")
        return _CODE_KIND[codes[0]] if len(codes) else None


def container_lengths(containers: list[Any]) -> np.ndarray:
    """The number of values in each protobuf value container, as int64."""
    return np.fromiter(map(len, containers), np.int64, len(containers))


def _binary_array(values: list[bytes]) -> pa.Array:
    arr = pa.array(values, pa.binary())
    if isinstance(arr, pa.ChunkedArray):  # > 2 GiB of bytes
        arr = arr.cast(pa.large_binary()).combine_chunks()
    return arr


def _col_from_containers(
    rows: list[int], kinds: list, containers: list, steps: np.ndarray | None = None
) -> Column:
    """A Column from protobuf value containers (``()`` where no kind is set)."""
    lengths = container_lengths(containers)
    present = set(kinds)
    present.discard(None)
    values: Any = None
    if len(present) == 1:
        kind = present.pop()
        flat = itertools.chain.from_iterable(containers)
        total = int(lengths.sum())
        if kind == INT64_LIST:
            values = np.fromiter(flat, np.int64, total)
        elif kind == FLOAT_LIST:
            values = np.fromiter(flat, np.float32, total)
        else:
            values = _binary_array(list(flat))
    codes = np.fromiter((_KIND_CODE[k] for k in kinds), np.int8, len(kinds))
    return Column(np.asarray(rows, dtype=np.int64), codes, lengths, values, steps)


def _collect_protobuf(
    recs: list[RecordBytes], record_type: str, skipped: dict[bytes, int]
) -> tuple[dict[str, Column], dict[str, Column]]:
    """Parse records one by one with protobuf (any valid encoding). Names that are not valid
    UTF-8 are left out, each added to *skipped* with the first record that has it."""
    dropped: list[bytes] = []

    def parse(cls: Any, rec: RecordBytes, i: int) -> Any:
        msg = parse_message(cls, rec, record_type, i, dropped)
        if dropped:
            for name in dropped:
                skipped.setdefault(name, i)
            dropped.clear()
        return msg

    cells: dict[str, tuple[list, list, list]] = {}
    lists: dict[str, tuple[list, list, list, list]] = {}

    def add(i: int, name: str, feat: Any) -> None:
        c = cells.get(name)
        if c is None:
            c = cells[name] = ([], [], [])
        kind = feat.WhichOneof("kind")
        c[0].append(i)
        c[1].append(kind)
        c[2].append(getattr(feat, kind).value if kind else ())

    if record_type == "Example":
        for i, rec in enumerate(recs):
            msg = parse(_pb.Example, rec, i)
            for name, feat in msg.features.feature.items():
                add(i, name, feat)
    else:
        for i, rec in enumerate(recs):
            msg = parse(_pb.SequenceExample, rec, i)
            for name, feat in msg.context.feature.items():
                add(i, name, feat)
            for name, fl in msg.feature_lists.feature_list.items():
                c = lists.get(name)
                if c is None:
                    c = lists[name] = ([], [], [], [])
                c[0].append(i)
                c[3].append(len(fl.feature))
                for feat in fl.feature:
                    kind = feat.WhichOneof("kind")
                    c[1].append(kind)
                    c[2].append(getattr(feat, kind).value if kind else ())
    ctx = {name: _col_from_containers(*c) for name, c in cells.items()}
    fls = {
        name: _col_from_containers(c[0], c[1], c[2], np.asarray(c[3], dtype=np.int64))
        for name, c in lists.items()
    }
    return ctx, fls


def _collect_example_fast(
    recs: list[RecordBytes], skipped: dict[bytes, int] | None = None
) -> dict[str, Column] | None:
    """Decode Examples in bulk with numpy, or None if any record is not in the canonical form.

    Canonical is what protobuf serializers (TensorFlow's, this module's) write: one
    ``features`` field; map entries of key then value; one list per Feature; packed numbers;
    each name once per record. Anything else (and any error) is left to the protobuf path,
    which handles every valid encoding and reports errors. Names that are not valid UTF-8 are
    left out, as the protobuf path leaves them out, each added to *skipped* with its first
    record.
    """
    n = len(recs)
    rec_lens = np.fromiter(map(len, recs), np.int64, n)
    full = rec_lens > 0
    # Records concatenated parse as one RawFeatures: each record's field 1 (the Features
    # message) becomes one item. The items must tile the records exactly.
    try:
        bodies = _pb.RawFeatures.FromString(b"".join(recs)).feature
    except DecodeError:
        return None
    blen = np.fromiter(map(len, bodies), np.int64, len(bodies))
    if len(blen) != int(full.sum()) or (wire_size(blen) != rec_lens[full]).any():
        return None
    body_lens = np.zeros(n, dtype=np.int64)
    body_lens[full] = blen
    body_bytes = b"".join(bodies)
    # The bodies concatenated: one RawFeatures whose items are all the map entries.
    try:
        entries = _pb.RawFeatures.FromString(body_bytes).feature
    except DecodeError:
        return None
    elen = np.fromiter(map(len, entries), np.int64, len(entries))
    wire_end = np.cumsum(wire_size(elen))
    if len(wire_end) and wire_end[-1] != len(body_bytes):
        return None  # unknown fields
    body_end = np.cumsum(body_lens)
    rec = np.searchsorted(body_end, wire_end - wire_size(elen), side="right")
    if len(rec) and (wire_end > body_end[np.minimum(rec, n - 1)]).any():
        return None
    es = wire_end - elen
    ee = wire_end
    b = np.frombuffer(body_bytes + bytes(16), dtype=np.uint8)
    # Entry: tag 1, key; tag 2, Feature; nothing else.
    if (elen < 2).any() or (b[es] != 0x0A).any():
        return None
    # Every length is checked to be non-negative (a 10-byte varint can say -k) and to end
    # inside its entry before anything is read at its end.
    klen, ks, ok = varint_at(b, es + 1)
    ke = ks + klen
    if not ok or (klen < 0).any() or (ke >= ee).any() or (b[ke] != 0x12).any():
        return None
    vlen, vs, ok = varint_at(b, ke + 1)
    if not ok or (vlen < 0).any() or (vs + vlen != ee).any():
        return None
    # Feature: one list (tag 1 bytes, 2 float, 3 int64), or nothing.
    has = vlen > 0
    tag = np.where(has, b[vs], 0)
    codes = np.zeros(len(es), dtype=np.int8)
    codes[tag == 0x0A] = 1
    codes[tag == 0x12] = 2
    codes[tag == 0x1A] = 3
    if (has & (codes == 0)).any():
        return None
    llen, ls, ok = varint_at(b, np.where(has, vs + 1, vs))
    if not ok or (has & ((llen < 0) | (ls + llen != ee))).any():
        return None
    # Numeric lists: tag 1, varint length, packed values; or nothing (empty).
    num = np.flatnonzero((codes >= 2) & (llen > 0))
    if len(num) and (b[ls[num]] != 0x0A).any():
        return None
    plen, ps, ok = varint_at(b, ls[num] + 1)
    if not ok or (plen < 0).any() or (ps + plen != ee[num]).any():
        return None
    pay_start = ee.copy()
    pay_start[num] = ps
    pay_len = ee - pay_start
    lengths = np.zeros(len(es), dtype=np.int64)
    values: dict[int, Any] = {}
    first = np.zeros(len(es), dtype=np.int64)  # index of an entry's first value
    # floats
    sel = np.flatnonzero(codes == 2)
    if (pay_len[sel] % 4).any():
        return None
    lengths[sel] = pay_len[sel] // 4
    values[2] = gather(b, pay_start[sel], pay_len[sel]).view("<f4").astype(np.float32)
    first[sel] = np.cumsum(lengths[sel]) - lengths[sel]
    # int64s
    sel = np.flatnonzero(codes == 3)
    data = gather(b, pay_start[sel], pay_len[sel])
    bounds = np.zeros(len(sel) + 1, dtype=np.int64)
    np.cumsum(pay_len[sel], out=bounds[1:])
    # The payloads are decoded as one stream: each must end its own last varint, or that
    # varint would run on into the next list's values.
    ends = bounds[1:][pay_len[sel] > 0]
    if len(ends) and (data[ends - 1] >= 0x80).any():
        return None
    values[3] = varint_stream(data)
    if values[3] is None:
        return None
    done = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(data < 0x80, out=done[1:])
    lengths[sel] = done[bounds[1:]] - done[bounds[:-1]]
    first[sel] = done[bounds[:-1]]
    # bytes: repeated tag 1, varint length, bytes
    sel = np.flatnonzero(codes == 1)
    cur = ls[sel].copy()
    stop = ee[sel]
    owners, starts, stops = [], [], []
    active = np.flatnonzero(cur < stop)
    while len(active):
        c = cur[active]
        if (b[c] != 0x0A).any():
            return None
        slen, sp, ok = varint_at(b, c + 1)
        se = sp + slen
        if not ok or (slen < 0).any() or (se > stop[active]).any():
            return None
        owners.append(active)
        starts.append(sp)
        stops.append(se)
        cur[active] = se
        active = active[se < stop[active]]
    if owners:
        owner = np.concatenate(owners)
        order = np.argsort(owner, kind="stable")
        el_start, el_stop = np.concatenate(starts)[order], np.concatenate(stops)[order]
        counts = np.bincount(owner, minlength=len(sel))
    else:
        el_start = el_stop = counts = np.zeros(0, dtype=np.int64)
    lengths[sel] = counts
    first[sel] = np.cumsum(counts) - counts
    offsets = np.zeros(len(el_start) + 1, dtype=np.int64)
    np.cumsum(el_stop - el_start, out=offsets[1:])
    large = offsets[-1] > 2**31 - 1
    values[1] = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        len(el_start),
        [
            None,
            pa.py_buffer(offsets if large else offsets.astype(np.int32)),
            pa.py_buffer(gather(b, el_start, el_stop - el_start)),
        ],
    )
    # Group the entries by name.
    keys = list(map(body_bytes.__getitem__, map(slice, ks.tolist(), ke.tolist())))
    names = {k: i for i, k in enumerate(sorted(set(keys)))}
    cid = np.fromiter(map(names.__getitem__, keys), np.int64, len(keys))
    order = np.argsort(cid, kind="stable")
    bounds = np.searchsorted(cid[order], np.arange(len(names) + 1))
    out: dict[str, Column] = {}
    bad: dict[bytes, int] = {}
    for j, key in enumerate(names):
        idx = order[bounds[j] : bounds[j + 1]]
        rows = rec[idx]
        if (rows[1:] == rows[:-1]).any():
            return None  # a name twice in one record: map semantics, leave it to protobuf
        try:
            name = key.decode("utf-8")
        except UnicodeDecodeError:
            bad[key] = int(rows[0])
            continue
        kinds = codes[idx]
        present = np.flatnonzero(np.bincount(kinds, minlength=4)[1:]) + 1
        col_values: Any = None
        if len(present) == 1:
            k = int(present[0])
            pick = idx[kinds == k]
            take = segments(first[pick], lengths[pick])
            if len(take) == len(values[k]):
                col_values = values[k]  # this column holds all values of its kind
            elif k == 1:
                col_values = values[1].take(pa.array(take))
            else:
                col_values = values[k][take]
        out[name] = Column(rows, kinds, lengths[idx], col_values)
    if skipped is not None:
        skipped.update(bad)
    return out


def collect(
    records: Iterable[RecordBytes],
    record_type: str,
    limit: int | None,
    warn_undecodable: bool = True,
) -> tuple[int, dict[str, Column], dict[str, Column]]:
    """Parse records; gather each feature's values. Returns (count, context, feature lists).

    A feature whose name is not valid UTF-8 is left out (as TensorFlow's parsers leave out a
    feature not asked for: no str names it); with *warn_undecodable*, one warning names them.
    """
    check_record_type(record_type)
    if isinstance(records, (pa.Array, pa.ChunkedArray)):
        records = records.to_pylist()
    if limit is not None:
        if limit < 0:
            raise ValueError(f"sample must be >= 0, not {limit}")
        records = itertools.islice(records, limit)
    recs = records if isinstance(records, list) else list(records)
    skipped: dict[bytes, int] = {}
    ctx: dict[str, Column] | None = None
    fls: dict[str, Column] = {}
    if record_type == "Example" and _FAST_PATH:
        try:
            ctx = _collect_example_fast(recs, skipped)
        except (TypeError, ValueError, IndexError):  # e.g. a record that is not bytes-like
            ctx = None
    if ctx is None:
        skipped.clear()
        ctx, fls = _collect_protobuf(recs, record_type, skipped)
    for name in sorted(ctx.keys() & fls.keys()):
        raise SchemaError(f"{name!r} is both a context feature and a feature list")
    if skipped and warn_undecodable:
        first = min(skipped.values())
        log_undecodable_names(skipped, f"the {record_type}s (the first in record {first})")
    return len(recs), ctx, fls


_FAST_PATH = True  # tests turn it off to check the two decoders agree
