"""Arrow -> serialized records: a vectorised protobuf wire-format writer.

Arrow to records (:func:`from_arrow`)
-------------------------------------
=====================================================  =========================================
Arrow type                                             Feature
=====================================================  =========================================
bool, int8..int64, uint8..uint64                       ``int64_list`` (uint64 > 2**63-1: error)
float16, float32, float64                              ``float_list``: float32, rounded to the
                                                       nearest; beyond its range ±inf (as
                                                       :func:`encode_example`, protobuf and
                                                       Spark's writer); NaN, ±inf kept
string, large_string, string_view                      ``bytes_list`` (UTF-8)
binary, large_binary, binary_view, fixed_size_binary   ``bytes_list``
decimal128/256                                         ``bytes_list`` of the decimal's string,
                                                       e.g. ``b"-12.50"``: exact, unlike float32
date32, date64                                         ``int64_list``: days since 1970-01-01
                                                       (date64 with a time of day: error)
timestamp (any unit, any zone)                         ``int64_list``: microseconds since the
                                                       epoch, UTC (sub-microsecond part: error)
dictionary<.., T>                                      as T
list/large_list/fixed_size_list<T>                     a list of T's feature kind
list<list<T>> (SequenceExample only)                   a feature list, one step per inner list
null (a column of type null)                           never written
=====================================================  =========================================

A null cell omits the feature from that record. A null *inside* a list, or a null step of a
feature list, has no TFRecord form and raises :class:`SchemaError`. For ``"SequenceExample"``,
``list<list<T>>`` columns become feature lists and all other columns context features; for
``"Example"`` a ``list<list<T>>`` column raises :class:`SchemaError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tfrecord_io.errors import SchemaError
from tfrecord_io.example.arrow import is_list_type
from tfrecord_io.example.values import (
    BYTES_LIST,
    FLOAT_LIST,
    INT64_LIST,
    INT64_MAX,
    check_record_type,
)
from tfrecord_io.example.wire import (
    Cat,
    Const,
    Leaf,
    const,
    len_prefixed,
    masked,
    materialize,
    slices,
    varint_bytes,
    varints,
)

__all__ = ["from_arrow"]


_KIND_TAG = {BYTES_LIST: b"\x0a", FLOAT_LIST: b"\x12", INT64_LIST: b"\x1a"}


def _leaf_kind(name: str, t: pa.DataType) -> str:
    """The feature kind an Arrow leaf type becomes, or SchemaError."""
    if pa.types.is_dictionary(t):
        return _leaf_kind(name, t.value_type)
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return INT64_LIST
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return INT64_LIST
    if pa.types.is_floating(t):
        return FLOAT_LIST
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_decimal(t)
        or t in (pa.string_view(), pa.binary_view())
    ):
        return BYTES_LIST
    raise SchemaError(f"column {name!r} has type {t}, which has no TFRecord feature form")


def _plan(name: str, t: pa.DataType, record_type: str) -> tuple[int, str | None]:
    """(list depth, feature kind) of a column; kind None for a null-typed column."""
    if pa.types.is_null(t):
        return 0, None
    depth, leaf = 0, t
    while is_list_type(leaf):
        depth, leaf = depth + 1, leaf.value_type
    if depth > 2 or (depth == 2 and record_type == "Example"):
        where = "" if record_type == "Example" else " (at most list<list<T>>)"
        raise SchemaError(
            f"column {name!r} has type {t}: nested lists have no {record_type} form{where}"
        )
    return depth, _leaf_kind(name, leaf)


def _numpy(arr: pa.Array, dtype: Any) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


#: Where a value is, from its index among the values of a column batch: e.g. " (row 3)".
Locate = Callable[[int], str]


def _element_stream(name: str, arr: pa.Array, where: Locate) -> Leaf:
    """One encoded element per value of arr (no nulls): the packed or length-delimited bytes."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr, t = arr.dictionary_decode(), t.value_type
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        if pa.types.is_uint64(t) and len(arr) and pc.max(arr).as_py() > INT64_MAX:
            u = _numpy(arr, np.uint64)
            i = int(np.flatnonzero(u > INT64_MAX)[0])
            raise SchemaError(f"column {name!r}: uint64 value {u[i]}{where(i)} exceeds int64")
        return varints(_numpy(arr, np.int64))
    if pa.types.is_floating(t):
        with np.errstate(over="ignore"):
            f = _numpy(arr, np.float64 if pa.types.is_float16(t) else None).astype("<f4")
        n = len(f)
        return Leaf(f.view(np.uint8), np.arange(n, dtype=np.int64) * 4, np.full(n, 4, np.int64))
    if pa.types.is_date32(t):
        return varints(_numpy(arr.view(pa.int32()), np.int64))
    if pa.types.is_date64(t):
        ms = _numpy(arr.view(pa.int64()), np.int64)
        days, rest = np.divmod(ms, 86_400_000)
        if rest.any():
            i = int(np.flatnonzero(rest)[0])
            raise SchemaError(
                f"column {name!r}: date64 value {np.datetime64(int(ms[i]), 'ms')}{where(i)} "
                "has a time of day, which days since 1970-01-01 can't hold; cast the column to "
                "a timestamp to keep it, or to date32 (safe=False) to drop it"
            )
        return varints(days)
    if pa.types.is_timestamp(t):
        try:
            us = arr.cast(pa.timestamp("us", t.tz), safe=True)
        except pa.ArrowInvalid as e:
            raise SchemaError(f"column {name!r}: can't store {t} as microseconds: {e}") from None
        return varints(_numpy(us.view(pa.int64()), np.int64))
    # bytes-like: each element is tag 1, varint length, the bytes
    if pa.types.is_decimal(t):
        arr = arr.cast(pa.string())
    elif pa.types.is_fixed_size_binary(t) or t == pa.binary_view():
        arr = arr.cast(pa.binary())
    elif t == pa.string_view():
        arr = arr.cast(pa.string())
    n = len(arr)
    if n == 0:
        return Leaf(np.empty(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64))
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64 if large else np.int32)
    offsets = offsets[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf or b"", dtype=np.uint8)
    values = Leaf(data, offsets[:-1], np.diff(offsets))
    return materialize(len_prefixed(b"\x0a", values))


def _feature(kind: str, payload: Leaf) -> Cat:
    """Feature messages from per-row list payloads (packed values, or bytes elements)."""
    if kind == BYTES_LIST:
        list_msg: Any = payload
    else:  # packed: tag 1, varint length, values; nothing at all for an empty list
        list_msg = masked(len_prefixed(b"\x0a", payload), payload.lens > 0)
    return len_prefixed(_KIND_TAG[kind], list_msg)


def _decoded(arr: pa.Array) -> pa.Array:
    """*arr* with a dictionary decoded: a null may be in its dictionary, behind a valid index,
    and only the decoded array counts it as a null."""
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def _lengths_and_values(name: str, arr: pa.Array, what: str) -> tuple[np.ndarray, pa.Array]:
    lengths = pc.list_value_length(arr).fill_null(0)
    values = _decoded(pc.list_flatten(arr))
    if values.null_count:
        raise SchemaError(f"column {name!r}: a null {what} has no TFRecord form: drop the "
                          "nulls (array_compact) or replace them first")
    return _numpy(lengths, np.int64), values


def _column_entries(name: str, arr: pa.Array, depth: int, kind: str | None, first: int) -> Any:
    """The map entries (Features.feature or FeatureLists.feature_list) of one column (of a
    batch whose first row is the table's row *first*)."""
    n = len(arr)
    arr = _decoded(arr)
    valid = np.ones(n, dtype=bool) if arr.null_count == 0 else _numpy(arr.is_valid(), bool)
    if kind is None or not valid.any():
        return None
    if depth == 0:
        lengths, values = valid.astype(np.int64), arr.drop_null()
    else:
        what = "step of a feature list" if depth == 2 else "inside a list"
        lengths, values = _lengths_and_values(name, arr, what)
    if depth == 2:
        step_lengths, values = lengths, values
        lengths, values = _lengths_and_values(name, values, "inside a step")

    def where(i: int) -> str:  # lengths count each row's values (or each step's)
        entry = int(np.searchsorted(np.cumsum(lengths), i, side="right"))
        if depth < 2:
            return f" (row {first + entry})"
        bounds = np.cumsum(step_lengths)
        row = int(np.searchsorted(bounds, entry, side="right"))
        return f" (row {first + row}, step {entry - (bounds[row] - step_lengths[row])})"

    payload = slices(_element_stream(name, values, where), lengths)
    value = _feature(kind, payload)
    if depth == 2:  # FeatureList: each step's Feature as tag 1, varint length, Feature
        steps = materialize(len_prefixed(b"\x0a", value))
        value = slices(steps, step_lengths)
    key = name.encode("utf-8")
    key_field = const(b"\x0a" + varint_bytes(len(key)) + key, n)
    body = Cat([key_field, *len_prefixed(b"\x12", value).parts])
    return masked(len_prefixed(b"\x0a", body), valid)


def _features_node(entries: list[Any], n: int) -> Any:
    entries = [e for e in entries if e is not None]
    return Cat(entries) if entries else Const(np.empty(0, np.uint8), np.zeros(n, np.int64))


def _encode_batch(
    batch: pa.RecordBatch, plans: list[tuple[str, int, str | None]], record_type: str, first: int
) -> list[bytes]:
    n = batch.num_rows
    if n == 0:
        return []
    ctx, fls = [], []
    for name, depth, kind in plans:
        col = batch.column(batch.schema.get_field_index(name))
        (fls if depth == 2 else ctx).append(_column_entries(name, col, depth, kind, first))
    record = len_prefixed(b"\x0a", _features_node(ctx, n))
    if record_type == "SequenceExample":
        record.parts += len_prefixed(b"\x12", _features_node(fls, n)).parts
        record.lens = np.sum([p.lens for p in record.parts], axis=0, dtype=np.int64)
    leaf = materialize(record)
    big = leaf.buf.tobytes()
    ends = (leaf.starts + leaf.lens).tolist()
    return [big[s:e] for s, e in zip(leaf.starts.tolist(), ends, strict=True)]


def from_arrow(
    table: pa.Table | pa.RecordBatch | Any,
    record_type: str = "Example",
    batch_size: int = 65536,
) -> Iterator[bytes]:
    """Serialize the rows of an Arrow table as Examples or SequenceExamples.

    Column types map to features as in the module docstring's table (in short: integers,
    bool, dates (days) and timestamps (microseconds) -> ``int64_list``; floats ->
    ``float_list`` as float32; strings, binaries and decimals (as their string) ->
    ``bytes_list``; lists -> lists; ``list<list<T>>`` -> SequenceExample feature lists). A null
    cell omits the feature. Records come out in row order, in the same bytes
    :func:`encode_example` gives for the same values.

    The column types are checked before this returns; the records are then encoded lazily,
    ``batch_size`` rows at a time, with numpy (no Python work per value).

    Args:
        table: a :class:`pyarrow.Table`, :class:`pyarrow.RecordBatch`, or pandas DataFrame
            (converted with ``pyarrow.Table.from_pandas(df, preserve_index=False)``).
        record_type: ``"Example"`` or ``"SequenceExample"``.
        batch_size: rows encoded at once (bounds the memory used).

    Returns:
        An iterator of serialized records, one per row.

    Raises:
        SchemaError: naming the column: an unsupported type (struct, map, time, ...), a
            list<list> column for ``"Example"``, a duplicate column name; while iterating: a
            null inside a list, a uint64 above int64 or a date64 with a time of day (these two
            naming the row), a timestamp with sub-microsecond part.
        ValueError: an unknown ``record_type``.
    """
    check_record_type(record_type)
    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        if type(table).__module__.split(".")[0] == "pandas":
            table = pa.Table.from_pandas(table, preserve_index=False)
        else:
            raise TypeError(
                f"from_arrow needs a pyarrow Table/RecordBatch or pandas DataFrame, "
                f"not {type(table).__name__}"
            )
    names = table.schema.names
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SchemaError(f"column {name!r} appears more than once")
        seen.add(name)
    plans = []
    for name in sorted(names):  # sorted: the order deterministic protobuf serialization uses
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise SchemaError(f"column {name!r}: name is not encodable as UTF-8") from None
        depth, kind = _plan(name, table.schema.field(name).type, record_type)
        plans.append((name, depth, kind))
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, not {batch_size}")
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if table.num_columns and table.column(0).num_chunks > max(1, table.num_rows // 1024):
        table = table.combine_chunks()  # many tiny chunks: encode in fewer, larger batches

    def records() -> Iterator[bytes]:
        first = 0
        for batch in table.to_batches(max_chunksize=batch_size):
            yield from _encode_batch(batch, plans, record_type, first)
            first += batch.num_rows

    return records()
