"""Protobuf wire-format primitives on numpy arrays: varints read and written column-wise.

The columnar decoder (:mod:`tfrecord_io.example.columns`) reads varints at many positions at
once; the encoder (:mod:`tfrecord_io.example.encoder`) builds records as ropes of byte pieces
(:class:`Leaf`, :class:`Const`, :class:`Cat`) whose length prefixes are computed per column and
which are written into one buffer at the end (:func:`materialize`), each byte copied once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "varint_at",
    "varint_stream",
    "varint_bytes",
    "varints",
    "segments",
    "gather",
    "wire_size",
    "Leaf",
    "Const",
    "Cat",
    "const",
    "masked",
    "materialize",
    "len_prefixed",
    "slices",
]


def varint_at(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Decode the varints starting at each pos (buf padded with >= 10 zero bytes).

    Returns (values as int64, positions after them, whether all were well formed).
    """
    if len(pos) == 0:
        return pos.copy(), pos.copy(), True
    first = buf[pos]
    if first.max() < 0x80:
        return first.astype(np.int64), pos + 1, True
    cols = np.arange(10)
    m = buf[pos[:, None] + cols]
    term = m < 0x80
    size = term.argmax(axis=1) + 1
    parts = (m & 0x7F).astype(np.uint64) << (cols * 7).astype(np.uint64)
    parts[cols[None, :] >= size[:, None]] = 0
    values = parts.sum(axis=1, dtype=np.uint64).view(np.int64)
    return values, pos + size, bool(term.any(axis=1).all())


def gather(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The bytes ``buf[starts[i]:starts[i] + lens[i]]`` for every i, concatenated."""
    return materialize(Leaf(buf, starts, lens)).buf


def varint_stream(data: np.ndarray) -> np.ndarray | None:
    """Decode back-to-back varints (a packed int64 payload); None if malformed."""
    if len(data) == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.flatnonzero(data < 0x80)
    if len(ends) == 0 or ends[-1] != len(data) - 1:
        return None
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    sizes = ends - starts + 1
    if sizes.max() > 10:
        return None
    if sizes.max() == 1:
        return data.astype(np.int64)
    shift = (np.arange(len(data)) - np.repeat(starts, sizes)) * 7
    parts = (data & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
    return np.add.reduceat(parts, starts).view(np.int64)


def segments(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices first[i], first[i]+1, ..., first[i]+counts[i]-1 for each i, concatenated."""
    total = int(counts.sum())
    return np.repeat(first - (np.cumsum(counts) - counts), counts) + np.arange(total)


def wire_size(lens: np.ndarray) -> np.ndarray:
    """Bytes of a field-1 length-delimited item: tag, varint length, payload."""
    size = 2 + lens
    for bits in (7, 14, 21, 28, 35, 42, 49, 56):
        size += lens >= (1 << bits)
    return size


# buffer (values, strings) or concatenations of pieces. Every piece knows its length in each
# row, so the length prefixes (varints) are computed column-wise with numpy, and the whole
# batch is written into one buffer at the end, each byte copied once.


class Leaf:
    """Row i is buf[starts[i] : starts[i] + lens[i]]."""

    __slots__ = ("buf", "starts", "lens")

    def __init__(self, buf: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> None:
        self.buf, self.starts, self.lens = buf, starts, lens


class Const:
    """Row i is data, or nothing where lens[i] == 0."""

    __slots__ = ("data", "lens")

    def __init__(self, data: np.ndarray, lens: np.ndarray) -> None:
        self.data, self.lens = data, lens


class Cat:
    """Row i is the concatenation of the parts' rows i."""

    __slots__ = ("parts", "lens")

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts
        self.lens = np.sum([p.lens for p in parts], axis=0, dtype=np.int64)


def const(data: bytes, n: int) -> Const:
    """The same bytes *data* in each of *n* rows."""
    return Const(np.frombuffer(data, dtype=np.uint8), np.full(n, len(data), dtype=np.int64))


def masked(node: Any, keep: np.ndarray) -> Any:
    """The node with rows where keep is False emptied."""
    if isinstance(node, Cat):
        out = Cat.__new__(Cat)
        out.parts = [masked(p, keep) for p in node.parts]
        out.lens = node.lens * keep
        return out
    if isinstance(node, Const):
        return Const(node.data, node.lens * keep)
    return Leaf(node.buf, node.starts, node.lens * keep)


def varint_bytes(v: int) -> bytes:
    """The protobuf varint encoding of one non-negative int."""
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varints(values: np.ndarray) -> Leaf:
    """Protobuf varints of int64 values (negative ones as 10-byte two's complement)."""
    n = len(values)
    if n == 0 or (values.min() >= 0 and values.max() < 0x80):
        return Leaf(values.astype(np.uint8), np.arange(n, dtype=np.int64), np.ones(n, np.int64))
    u = values.astype(np.int64).view(np.uint64)
    sizes = np.ones(n, dtype=np.int64)
    for k in range(1, 10):
        sizes += u >= np.uint64(1 << (7 * k))
    width = int(sizes.max())
    col = np.arange(width)
    groups = ((u[:, None] >> (col * 7).astype(np.uint64)) & np.uint64(0x7F)).astype(np.uint8)
    groups |= (col[None, :] < (sizes[:, None] - 1)).astype(np.uint8) << 7
    buf = groups[col[None, :] < sizes[:, None]]
    starts = np.cumsum(sizes) - sizes
    return Leaf(buf, starts, sizes)


def _write(node: Any, out: np.ndarray, dest: np.ndarray) -> None:
    """Write each row of node into out at dest[row]."""
    if isinstance(node, Cat):
        pos = dest.copy()
        for part in node.parts:
            _write(part, out, pos)
            pos += part.lens
        return
    lens = node.lens
    if isinstance(node, Const):
        width = len(node.data)
        if width == 0:
            return
        d = dest if lens.all() else dest[lens > 0]
        if width == 1:
            out[d] = node.data[0]
        else:
            out[d[:, None] + np.arange(width)] = node.data
        return
    total = int(lens.sum())
    if total == 0:
        return
    lo, hi = int(lens.min()), int(lens.max())
    if lo == hi and hi <= 64:
        idx = np.arange(hi)
        out[dest[:, None] + idx] = node.buf[node.starts[:, None] + idx]
        return
    before = np.cumsum(lens) - lens
    r = np.arange(total)
    out[np.repeat(dest - before, lens) + r] = node.buf[np.repeat(node.starts - before, lens) + r]


def materialize(node: Any) -> Leaf:
    """A rope written out into one buffer: a Leaf whose rows are the node's rows."""
    lens = node.lens
    starts = np.cumsum(lens) - lens
    out = np.empty(int(lens.sum()), dtype=np.uint8)
    _write(node, out, starts)
    return Leaf(out, starts, lens)


def len_prefixed(tag: bytes, node: Any) -> Cat:
    """tag, varint(len(node)), node."""
    n = len(node.lens)
    return Cat([const(tag, n), varints(node.lens), node])


def slices(stream: Leaf, lengths: np.ndarray) -> Leaf:
    """Group consecutive elements of stream into rows of ``lengths`` elements each."""
    bounds = np.zeros(len(stream.lens) + 1, dtype=np.int64)
    np.cumsum(stream.lens, out=bounds[1:])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    starts = bounds[offsets[:-1]]
    return Leaf(stream.buf, starts, bounds[offsets[1:]] - starts)
