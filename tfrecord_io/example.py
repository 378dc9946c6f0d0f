"""tf.train.Example and tf.train.SequenceExample without TensorFlow, and their Arrow forms.

Encode and decode the two record formats TensorFlow keeps in TFRecord files, using
tfrecord-io's own protobuf messages (:mod:`tfrecord_io.proto.example_pb2`, wire-compatible with
TensorFlow's, in another proto package so both load in one process), and convert whole batches
of serialized records to and from :class:`pyarrow.Table`.

Python values (:func:`encode_example`, :func:`encode_sequence_example`)
-----------------------------------------------------------------------
A feature value is a scalar, a list/tuple of scalars, or a numpy array (flattened in C order):

* ``bool``, ``int``, numpy bool/integer -> ``int64_list`` (outside int64 -> :class:`SchemaError`)
* ``float``, numpy floating -> ``float_list`` (float32: rounded to nearest, beyond float32's
  range -> ±inf; NaN and ±inf kept). A list mixing ints and floats is a ``float_list``.
* ``str`` (encoded UTF-8), ``bytes``/``bytearray``/``memoryview`` -> ``bytes_list``
* ``None`` -> the feature is omitted.
* an empty list/tuple (or empty object array) -> a ``Feature`` with no kind set. TensorFlow's
  parsers read such a feature as empty (zero values) whatever dtype they expect, and
  :func:`decode_example` gives ``[]``. An empty numpy array of a numeric or string dtype gives
  an empty list of the matching kind.

Records are serialized deterministically: map entries sorted by feature name, so equal input
gives equal bytes (and :func:`from_arrow` writes the very same bytes as :func:`encode_example`).

Arrow schema rules (:func:`infer_schema`; the Spark DataFrame reader uses the same)
-----------------------------------------------------------------------------------
* ``int64_list`` -> ``int64``; ``float_list`` -> ``float32``; ``bytes_list`` -> ``string``
  (UTF-8), unless the feature is named in ``binary_features`` or some value is not valid UTF-8:
  then ``binary``.
* A feature that has exactly one value in every record where it has a kind is a scalar column;
  any other length (0 or >1) anywhere makes it ``list<type>``.
* A feature absent from a record, or present with no kind set, is null there (every Arrow field
  is nullable). Its no-kind occurrences do not count towards the type or the scalar/list choice.
  In a list column a no-kind feature reads as ``[]``, an absent one as null.
* A feature that never has a kind set -> type ``null``.
* A feature whose kind differs between records -> :class:`SchemaError` naming it.
* Fields are sorted by name. For SequenceExample: the context features (rules above), then the
  feature lists, each ``list<list<type>>`` (outer: steps; a step with no kind set is ``[]``);
  a name that is both a context feature and a feature list -> :class:`SchemaError`.

Reading into a given schema (:func:`to_arrow`)
----------------------------------------------
``int64_list`` reads as any integer type (range-checked), ``bool`` (nonzero is true),
float16/32/64, ``date32``/``date64`` (value = days since 1970-01-01), ``timestamp`` of any
unit/zone (value = microseconds since the epoch, UTC) and ``decimal`` (exactly, else error).
``float_list`` reads as float16/32/64. ``bytes_list`` reads as ``binary``/``large_binary``,
``fixed_size_binary`` (length-checked), ``string``/``large_string`` (must be UTF-8) and
``decimal`` (from its decimal string). Scalar types need exactly one value; ``list``,
``large_list`` and ``fixed_size_list`` (length-checked) take any number; feature lists need a
list of lists. Any other pairing raises :class:`SchemaError` naming the feature. Features not
in the schema are ignored; schema fields that no record has are all null.

Arrow to records (:func:`from_arrow`)
-------------------------------------
=====================================================  =========================================
Arrow type                                             Feature
=====================================================  =========================================
bool, int8..int64, uint8..uint64                       ``int64_list`` (uint64 > 2**63-1: error)
float16, float32, float64                              ``float_list`` (stored as float32)
string, large_string, string_view                      ``bytes_list`` (UTF-8)
binary, large_binary, binary_view, fixed_size_binary   ``bytes_list``
decimal128/256                                         ``bytes_list`` of the decimal's string,
                                                       e.g. ``b"-12.50"``: exact, unlike float32
date32, date64                                         ``int64_list``: days since 1970-01-01
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

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.message import DecodeError

from tfrecord_io.errors import SchemaError
from tfrecord_io.proto import example_pb2 as _pb

__all__ = [
    "encode_example",
    "decode_example",
    "encode_sequence_example",
    "decode_sequence_example",
    "infer_schema",
    "to_arrow",
    "from_arrow",
]

Scalar = Union[bool, int, float, str, bytes]
FeatureValue = Union[Scalar, Sequence[Scalar], np.ndarray, None]
RecordBytes = Union[bytes, bytearray, memoryview]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_BYTES, _FLOAT, _INT64 = "bytes_list", "float_list", "int64_list"
_KIND_LABEL = {_BYTES: "bytes", _FLOAT: "float", _INT64: "int64", None: "no"}
_RECORD_TYPES = ("Example", "SequenceExample")


def _check_record_type(record_type: str) -> None:
    if record_type not in _RECORD_TYPES:
        raise ValueError(
            f"record_type must be 'Example' or 'SequenceExample', not {record_type!r}"
        )


# --------------------------------------------------------------------------------------------
# Python values -> Feature messages
# --------------------------------------------------------------------------------------------


def _scalar(v: Any) -> tuple[str | None, Any]:
    """Classify one scalar as ("int" | "float" | "str" | "bytes", value), or (None, None)."""
    if isinstance(v, (bool, np.bool_, int, np.integer)):
        return "int", int(v)
    if isinstance(v, (float, np.floating)):
        return "float", float(v)
    if isinstance(v, str):
        return "str", v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "bytes", bytes(v)
    return None, None


def _utf8(name: str, s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SchemaError(f"feature {name!r}: string is not encodable as UTF-8 ({e})") from None


def _check_int64(name: str, values: list[int]) -> None:
    if values and (min(values) < _INT64_MIN or max(values) > _INT64_MAX):
        bad = next(v for v in values if not _INT64_MIN <= v <= _INT64_MAX)
        raise SchemaError(f"feature {name!r}: integer {bad} is outside the int64 range")


def _to_float32(values: Any) -> list[float]:
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float64).astype(np.float32).tolist()


def _list_values(name: str, items: Iterable[Any]) -> tuple[str | None, list]:
    classes: set[str] = set()
    out: list = []
    for v in items:
        c, x = _scalar(v)
        if c is None:
            if v is None:
                raise SchemaError(f"feature {name!r}: None inside a list has no TFRecord form")
            raise SchemaError(
                f"feature {name!r}: unsupported list element {v!r} of type {type(v).__name__}"
            )
        classes.add(c)
        out.append(x)
    if not classes:
        return None, []
    if classes == {"int"}:
        _check_int64(name, out)
        return _INT64, out
    if classes <= {"int", "float"}:
        return _FLOAT, _to_float32(out)
    if classes <= {"str", "bytes"}:
        return _BYTES, [_utf8(name, x) if isinstance(x, str) else x for x in out]
    raise SchemaError(f"feature {name!r}: list mixes {' and '.join(sorted(classes))} values")


def _array_values(name: str, arr: np.ndarray) -> tuple[str | None, list]:
    kind = arr.dtype.kind
    if kind == "b":
        return _INT64, arr.astype(np.int64).tolist()
    if kind in "iu":
        if kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > _INT64_MAX:
            raise SchemaError(f"feature {name!r}: uint64 value {arr.max()} exceeds int64")
        return _INT64, arr.astype(np.int64).tolist()
    if kind == "f":
        return _FLOAT, _to_float32(arr)
    if kind == "U":
        return _BYTES, [_utf8(name, s) for s in arr.tolist()]
    if kind == "S":
        return _BYTES, arr.tolist()
    if kind == "O":
        return _list_values(name, arr.tolist())
    raise SchemaError(f"feature {name!r}: unsupported numpy dtype {arr.dtype}")


def _feature_values(name: str, value: Any) -> tuple[str | None, list]:
    """(kind, values) of one feature value; kind None means an empty list of no kind."""
    if isinstance(value, np.ndarray):
        if value.ndim:
            return _array_values(name, value.ravel())
        value = value[()]
    if isinstance(value, (list, tuple)):
        return _list_values(name, value)
    c, x = _scalar(value)
    if c == "int":
        _check_int64(name, [x])
        return _INT64, [x]
    if c == "float":
        return _FLOAT, _to_float32([x])
    if c == "str":
        return _BYTES, [_utf8(name, x)]
    if c == "bytes":
        return _BYTES, [x]
    raise SchemaError(
        f"feature {name!r}: unsupported value {value!r} of type {type(value).__name__}; "
        "expected int, float, bool, str, bytes, a list of those, or a numpy array"
    )


def _fill_feature(feature: Any, name: str, value: Any) -> None:
    kind, values = _feature_values(name, value)
    feature.SetInParent()
    if kind is not None:
        lst = getattr(feature, kind)
        lst.SetInParent()
        lst.value.extend(values)


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise SchemaError(f"feature names must be str, not {type(name).__name__}: {name!r}")
    return name


def _fill_features(features_msg: Any, features: Mapping[str, FeatureValue] | None) -> None:
    features_msg.SetInParent()
    for name, value in (features or {}).items():
        if value is not None:
            _fill_feature(features_msg.feature[_check_name(name)], name, value)


def encode_example(features: Mapping[str, FeatureValue]) -> bytes:
    """Serialize one ``tf.train.Example``.

    Args:
        features: feature name -> value: an int/float/bool/str/bytes scalar, a list or tuple
            of those, or a numpy array (see the module docstring for the kind each becomes).
            ``None`` omits the feature; an empty list gives a feature with no kind set.

    Returns:
        The serialized Example (deterministic: features sorted by name).

    Raises:
        SchemaError: a value of an unsupported type (naming the feature), a list mixing
            numbers and strings, or an integer outside int64.
    """
    ex = _pb.Example()
    _fill_features(ex.features, features)
    return ex.SerializeToString(deterministic=True)


def encode_sequence_example(
    context: Mapping[str, FeatureValue] | None,
    feature_lists: Mapping[str, Sequence[FeatureValue] | np.ndarray | None],
) -> bytes:
    """Serialize one ``tf.train.SequenceExample``.

    Args:
        context: context features, as for :func:`encode_example` (``None``: no context).
        feature_lists: feature-list name -> sequence of steps, each step a feature value as
            for :func:`encode_example` (a 2-d numpy array gives one step per row). ``None``
            omits the feature list; an empty sequence gives a feature list of zero steps.

    Returns:
        The serialized SequenceExample (deterministic: names sorted).

    Raises:
        SchemaError: as :func:`encode_example`; also a step that is ``None`` or a feature
            list that is not a sequence.
    """
    seq = _pb.SequenceExample()
    _fill_features(seq.context, context)
    seq.feature_lists.SetInParent()
    for name, steps in (feature_lists or {}).items():
        if steps is None:
            continue
        if isinstance(steps, (str, bytes, bytearray, memoryview)) or not isinstance(
            steps, (Sequence, np.ndarray)
        ):
            raise SchemaError(
                f"feature list {name!r}: expected a sequence of steps, got {type(steps).__name__}"
            )
        fl = seq.feature_lists.feature_list[_check_name(name)]
        fl.SetInParent()
        for step in steps:
            if step is None:
                raise SchemaError(f"feature list {name!r}: a step is None")
            _fill_feature(fl.feature.add(), name, step)
    return seq.SerializeToString(deterministic=True)


# --------------------------------------------------------------------------------------------
# Feature messages -> Python values
# --------------------------------------------------------------------------------------------


def _parse(cls: Any, data: RecordBytes, what: str, index: int | None = None) -> Any:
    if not isinstance(data, bytes):
        data = bytes(data)  # protobuf < 5 parses only bytes
    try:
        return cls.FromString(data)
    except (DecodeError, TypeError) as e:
        where = "" if index is None else f" (record {index})"
        raise SchemaError(f"not a serialized {what}{where}: {e}") from None


def _feature_list(feature: Any) -> list:
    kind = feature.WhichOneof("kind")
    return list(getattr(feature, kind).value) if kind else []


def _feature_numpy(feature: Any) -> np.ndarray:
    kind = feature.WhichOneof("kind")
    if kind == _INT64:
        v = feature.int64_list.value
        return np.fromiter(v, dtype=np.int64, count=len(v))
    if kind == _FLOAT:
        v = feature.float_list.value
        return np.fromiter(v, dtype=np.float32, count=len(v))
    out = np.empty(len(feature.bytes_list.value) if kind else 0, dtype=object)
    if kind:
        out[:] = list(feature.bytes_list.value)
    return out


def _decode_features(features_msg: Any, numpy: bool) -> dict[str, Any]:
    conv = _feature_numpy if numpy else _feature_list
    fmap = features_msg.feature
    return {name: conv(fmap[name]) for name in sorted(fmap)}


def decode_example(data: RecordBytes, *, numpy: bool = False) -> dict[str, Any]:
    """Parse one serialized ``tf.train.Example``.

    Args:
        data: the serialized record.
        numpy: return numpy arrays (int64, float32, or object arrays of bytes) instead of
            Python lists.

    Returns:
        feature name -> values, names sorted: a list of ints (``int64_list``), of floats
        (``float_list``; float32 values widened exactly to Python floats) or of bytes
        (``bytes_list``). A feature with no kind set gives ``[]`` (with ``numpy=True``, an
        empty object array).

    Raises:
        SchemaError: ``data`` is not a valid serialized Example.
    """
    return _decode_features(_parse(_pb.Example, data, "Example").features, numpy)


def decode_sequence_example(
    data: RecordBytes, *, numpy: bool = False
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Parse one serialized ``tf.train.SequenceExample``.

    Args:
        data: the serialized record.
        numpy: as for :func:`decode_example`, per context feature and per step.

    Returns:
        ``(context, feature_lists)``: context as :func:`decode_example` returns features;
        feature_lists maps each name to its steps, one list (or array) of values per step.

    Raises:
        SchemaError: ``data`` is not a valid serialized SequenceExample.
    """
    seq = _parse(_pb.SequenceExample, data, "SequenceExample")
    conv = _feature_numpy if numpy else _feature_list
    flmap = seq.feature_lists.feature_list
    lists = {name: [conv(f) for f in flmap[name].feature] for name in sorted(flmap)}
    return _decode_features(seq.context, numpy), lists


# --------------------------------------------------------------------------------------------
# Serialized records -> Arrow
# --------------------------------------------------------------------------------------------


_KIND_CODE = {None: 0, _BYTES: 1, _FLOAT: 2, _INT64: 3}
_CODE_KIND = (None, _BYTES, _FLOAT, _INT64)


class _Col:
    """One feature across records, columnar.

    ``rows[j]`` is the record of entry j, ``kinds[j]`` its kind code (0: no kind set, then
    ``lengths[j]`` is 0), ``lengths[j]`` its number of values; ``values`` holds all entries'
    values concatenated (numpy int64 / float32, or an Arrow binary array), or None when the
    entries have no kind or conflicting kinds. For a feature list, entries are steps and
    ``steps[r]`` is the number of steps of the r-th record that has the feature list
    (``rows`` then has one item per such record).
    """

    __slots__ = ("rows", "kinds", "lengths", "values", "steps")

    def __init__(self, rows, kinds, lengths, values, steps=None) -> None:
        self.rows: np.ndarray = rows
        self.kinds: np.ndarray = kinds
        self.lengths: np.ndarray = lengths
        self.values: Any = values
        self.steps: np.ndarray | None = steps

    def kind(self, name: str, what: str) -> str | None:
        codes = np.flatnonzero(np.bincount(self.kinds, minlength=4)[1:]) + 1
        if len(codes) > 1:
            labels = " and ".join(sorted(_KIND_LABEL[_CODE_KIND[c]] for c in codes))
            raise SchemaError(f"{what} {name!r} has conflicting kinds across records: {labels}")
        return _CODE_KIND[codes[0]] if len(codes) else None


def _binary_array(values: list[bytes]) -> pa.Array:
    arr = pa.array(values, pa.binary())
    if isinstance(arr, pa.ChunkedArray):  # > 2 GiB of bytes
        arr = arr.cast(pa.large_binary()).combine_chunks()
    return arr


def _col_from_containers(rows: list[int], kinds: list, containers: list, steps=None) -> _Col:
    """A _Col from protobuf value containers (``()`` where no kind is set)."""
    lengths = _lengths(containers)
    present = set(kinds)
    present.discard(None)
    values: Any = None
    if len(present) == 1:
        kind = present.pop()
        flat = itertools.chain.from_iterable(containers)
        total = int(lengths.sum())
        if kind == _INT64:
            values = np.fromiter(flat, np.int64, total)
        elif kind == _FLOAT:
            values = np.fromiter(flat, np.float32, total)
        else:
            values = _binary_array(list(flat))
    codes = np.fromiter((_KIND_CODE[k] for k in kinds), np.int8, len(kinds))
    return _Col(np.asarray(rows, dtype=np.int64), codes, lengths, values, steps)


def _collect_protobuf(
    recs: list[RecordBytes], record_type: str
) -> tuple[dict[str, _Col], dict[str, _Col]]:
    """Parse records one by one with protobuf (any valid encoding)."""
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
            for name, feat in _parse(_pb.Example, rec, "Example", i).features.feature.items():
                add(i, name, feat)
    else:
        for i, rec in enumerate(recs):
            msg = _parse(_pb.SequenceExample, rec, "SequenceExample", i)
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


def _varint_at(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
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


def _gather(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    return _materialize(_Leaf(buf, starts, lens)).buf


def _varint_stream(data: np.ndarray) -> np.ndarray | None:
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


def _segments(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices first[i], first[i]+1, ..., first[i]+counts[i]-1 for each i, concatenated."""
    total = int(counts.sum())
    return np.repeat(first - (np.cumsum(counts) - counts), counts) + np.arange(total)


def _collect_example_fast(recs: list[RecordBytes]) -> dict[str, _Col] | None:
    """Decode Examples in bulk with numpy, or None if any record is not in the canonical form.

    Canonical is what protobuf serializers (TensorFlow's, this module's) write: one
    ``features`` field; map entries of key then value; one list per Feature; packed numbers;
    each name once per record. Anything else (and any error) is left to the protobuf path,
    which handles every valid encoding and reports errors.
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
    if len(blen) != int(full.sum()) or (_wire_size(blen) != rec_lens[full]).any():
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
    wire_end = np.cumsum(_wire_size(elen))
    if len(wire_end) and wire_end[-1] != len(body_bytes):
        return None  # unknown fields
    body_end = np.cumsum(body_lens)
    rec = np.searchsorted(body_end, wire_end - _wire_size(elen), side="right")
    if len(rec) and (wire_end > body_end[np.minimum(rec, n - 1)]).any():
        return None
    es = wire_end - elen
    ee = wire_end
    b = np.frombuffer(body_bytes + bytes(16), dtype=np.uint8)
    # Entry: tag 1, key; tag 2, Feature; nothing else.
    if (elen < 2).any() or (b[es] != 0x0A).any():
        return None
    klen, ks, ok = _varint_at(b, es + 1)
    ke = ks + klen
    if not ok or (ke >= ee).any() or (b[ke] != 0x12).any():
        return None
    vlen, vs, ok = _varint_at(b, ke + 1)
    if not ok or (vs + vlen != ee).any():
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
    llen, ls, ok = _varint_at(b, np.where(has, vs + 1, vs))
    if not ok or (has & (ls + llen != ee)).any():
        return None
    # Numeric lists: tag 1, varint length, packed values; or nothing (empty).
    num = np.flatnonzero((codes >= 2) & (llen > 0))
    if len(num) and (b[ls[num]] != 0x0A).any():
        return None
    plen, ps, ok = _varint_at(b, ls[num] + 1)
    if not ok or (ps + plen != ee[num]).any():
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
    values[2] = _gather(b, pay_start[sel], pay_len[sel]).view("<f4").astype(np.float32)
    first[sel] = np.cumsum(lengths[sel]) - lengths[sel]
    # int64s
    sel = np.flatnonzero(codes == 3)
    data = _gather(b, pay_start[sel], pay_len[sel])
    values[3] = _varint_stream(data)
    if values[3] is None:
        return None
    done = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(data < 0x80, out=done[1:])
    bounds = np.zeros(len(sel) + 1, dtype=np.int64)
    np.cumsum(pay_len[sel], out=bounds[1:])
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
        slen, sp, ok = _varint_at(b, c + 1)
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
            pa.py_buffer(_gather(b, el_start, el_stop - el_start)),
        ],
    )
    # Group the entries by name.
    keys = list(map(body_bytes.__getitem__, map(slice, ks.tolist(), ke.tolist())))
    names = {k: i for i, k in enumerate(sorted(set(keys)))}
    cid = np.fromiter(map(names.__getitem__, keys), np.int64, len(keys))
    try:
        decoded = [k.decode("utf-8") for k in names]
    except UnicodeDecodeError:
        return None
    order = np.argsort(cid, kind="stable")
    bounds = np.searchsorted(cid[order], np.arange(len(names) + 1))
    out: dict[str, _Col] = {}
    for j, name in enumerate(decoded):
        idx = order[bounds[j] : bounds[j + 1]]
        rows = rec[idx]
        if (rows[1:] == rows[:-1]).any():
            return None  # a name twice in one record: map semantics, leave it to protobuf
        kinds = codes[idx]
        present = np.flatnonzero(np.bincount(kinds, minlength=4)[1:]) + 1
        col_values: Any = None
        if len(present) == 1:
            k = int(present[0])
            pick = idx[kinds == k]
            take = _segments(first[pick], lengths[pick])
            if len(take) == len(values[k]):
                col_values = values[k]  # this column holds all values of its kind
            elif k == 1:
                col_values = values[1].take(pa.array(take))
            else:
                col_values = values[k][take]
        out[name] = _Col(rows, kinds, lengths[idx], col_values)
    return out


def _wire_size(lens: np.ndarray) -> np.ndarray:
    """Bytes of a field-1 length-delimited item: tag, varint length, payload."""
    size = 2 + lens
    for bits in (7, 14, 21, 28, 35, 42, 49, 56):
        size += lens >= (1 << bits)
    return size


def _collect(
    records: Iterable[RecordBytes], record_type: str, limit: int | None
) -> tuple[int, dict[str, _Col], dict[str, _Col]]:
    """Parse records; gather each feature's values. Returns (count, context, feature lists)."""
    _check_record_type(record_type)
    if isinstance(records, (pa.Array, pa.ChunkedArray)):
        records = records.to_pylist()
    if limit is not None:
        if limit < 0:
            raise ValueError(f"sample must be >= 0, not {limit}")
        records = itertools.islice(records, limit)
    recs = records if isinstance(records, list) else list(records)
    if record_type == "Example" and _FAST_PATH:
        try:
            ctx = _collect_example_fast(recs)
        except (TypeError, ValueError, IndexError):  # e.g. a record that is not bytes-like
            ctx = None
        if ctx is not None:
            return len(recs), ctx, {}
    ctx, fls = _collect_protobuf(recs, record_type)
    for name in sorted(ctx.keys() & fls.keys()):
        raise SchemaError(f"{name!r} is both a context feature and a feature list")
    return len(recs), ctx, fls


_FAST_PATH = True  # tests turn it off to check the two decoders agree


def _leaf_type(col: _Col, kind: str | None, binary: bool) -> pa.DataType:
    if kind == _INT64:
        return pa.int64()
    if kind == _FLOAT:
        return pa.float32()
    if kind is None:
        return pa.null()
    if binary:
        return pa.binary()
    try:
        col.values.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.binary()
    return pa.string()


def _infer(
    ctx: dict[str, _Col], fls: dict[str, _Col], binary_features: Iterable[str]
) -> pa.Schema:
    binary = {binary_features} if isinstance(binary_features, str) else set(binary_features)
    fields = []
    for name in sorted(ctx):
        c = ctx[name]
        kind = c.kind(name, "feature")
        leaf = _leaf_type(c, kind, name in binary)
        scalar = kind is not None and bool((c.lengths[c.kinds != 0] == 1).all())
        fields.append(pa.field(name, leaf if scalar or kind is None else pa.list_(leaf)))
    for name in sorted(fls):
        c = fls[name]
        leaf = _leaf_type(c, c.kind(name, "feature list"), name in binary)
        fields.append(pa.field(name, pa.list_(pa.list_(leaf))))
    return pa.schema(fields)


def infer_schema(
    records: Iterable[RecordBytes],
    record_type: str = "Example",
    sample: int | None = None,
    binary_features: Iterable[str] = (),
) -> pa.Schema:
    """Infer the Arrow schema of serialized Examples or SequenceExamples.

    The rules (the Spark DataFrame reader's too):

    * ``int64_list`` -> ``int64``, ``float_list`` -> ``float32``, ``bytes_list`` -> ``string``,
      or ``binary`` if the feature is in ``binary_features`` or any of its values is not
      valid UTF-8.
    * One value in every record where the feature has a kind -> a scalar column; otherwise
      ``list<type>``.
    * Absent, or present with no kind set, in some records -> null there (all fields are
      nullable); no-kind occurrences do not affect the type. Never any kind -> type ``null``.
    * Different kinds in different records -> :class:`SchemaError` naming the feature.
    * Fields sorted by name. SequenceExample: context features (as above), then feature lists
      as ``list<list<type>>``; a name used for both -> :class:`SchemaError`.

    Args:
        records: serialized records (bytes-like), e.g. from a TFRecord reader.
        record_type: ``"Example"`` or ``"SequenceExample"``.
        sample: look only at the first ``sample`` records (None: all of them).
        binary_features: names of ``bytes_list`` features to type ``binary``, not ``string``.

    Returns:
        The inferred schema.

    Raises:
        SchemaError: conflicting kinds, or a record that does not parse.
        ValueError: an unknown ``record_type``.
    """
    _, ctx, fls = _collect(records, record_type, sample)
    return _infer(ctx, fls, binary_features)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _mismatch(name: str, kind: str | None, t: pa.DataType) -> SchemaError:
    return SchemaError(
        f"feature {name!r} holds {_KIND_LABEL[kind]} values, which can't be read as {t}"
    )


def _arrow_error(name: str, t: pa.DataType, e: Exception) -> SchemaError:
    return SchemaError(f"feature {name!r}: can't convert its values to {t}: {e}")


def _from_int64(name: str, a: np.ndarray, t: pa.DataType) -> pa.Array:
    if pa.types.is_int64(t):
        return pa.array(a, pa.int64())
    if pa.types.is_integer(t):
        dtype = np.dtype(t.to_pandas_dtype())
        info = np.iinfo(dtype)
        if a.size and (a.min() < info.min or (a.max() > info.max)):
            bad = a[(a < info.min) | (a > info.max)][0]
            raise SchemaError(f"feature {name!r}: value {bad} is out of range for {t}")
        return pa.array(a.astype(dtype), t)
    if pa.types.is_boolean(t):
        return pa.array(a != 0, pa.bool_())
    if pa.types.is_floating(t):
        return pa.array(a.astype(t.to_pandas_dtype()), t)
    if pa.types.is_date32(t):
        if a.size and (a.min() < -(2**31) or a.max() > 2**31 - 1):
            raise SchemaError(f"feature {name!r}: a day count is out of range for {t}")
        return pa.array(a.astype(np.int32), pa.int32()).view(t)
    if pa.types.is_date64(t):
        limit = _INT64_MAX // 86_400_000
        if a.size and (a.min() < -limit or a.max() > limit):
            raise SchemaError(f"feature {name!r}: a day count is out of range for {t}")
        return pa.array(a * 86_400_000, pa.int64()).view(t)
    if pa.types.is_timestamp(t) or pa.types.is_decimal(t):
        if pa.types.is_timestamp(t):
            src = pa.array(a, pa.timestamp("us", t.tz))
        else:  # via decimal strings: int64 -> decimal casts want precision >= 19
            src = pa.array(a, pa.int64()).cast(pa.string())
        try:
            return src.cast(t, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise _arrow_error(name, t, e) from None
    raise _mismatch(name, _INT64, t)


def _from_float(name: str, a: np.ndarray, t: pa.DataType) -> pa.Array:
    if pa.types.is_floating(t):
        return pa.array(a.astype(t.to_pandas_dtype()), t)
    raise _mismatch(name, _FLOAT, t)


def _from_bytes(name: str, b: pa.Array, t: pa.DataType) -> pa.Array:
    try:
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return b.cast(t)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            try:
                return b.cast(t)
            except pa.ArrowInvalid:
                raise SchemaError(
                    f"feature {name!r} has values that are not valid UTF-8, so it can't be "
                    f"read as {t}; read it as binary"
                ) from None
        if pa.types.is_fixed_size_binary(t):
            lengths = pc.binary_length(b).to_numpy(zero_copy_only=False)
            if (lengths != t.byte_width).any():
                bad = int(lengths[lengths != t.byte_width][0])
                raise SchemaError(f"feature {name!r}: a value of {bad} bytes doesn't fit {t}")
            return b.cast(t)
        if pa.types.is_decimal(t):
            return b.cast(pa.string()).cast(t, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise _arrow_error(name, t, e) from None
    raise _mismatch(name, _BYTES, t)


def _flat_values(name: str, col: _Col, kind: str | None, t: pa.DataType) -> pa.Array:
    """All values of the column as an Arrow array of (non-list) type ``t``."""
    if _is_list(t) or pa.types.is_struct(t) or pa.types.is_map(t):
        raise SchemaError(f"feature {name!r}: type {t} has no TFRecord form here")
    if kind is None or pa.types.is_null(t):
        if kind is not None and len(col.values):
            raise _mismatch(name, kind, t)
        return pa.array([], t)
    if kind == _INT64:
        return _from_int64(name, col.values, t)
    if kind == _FLOAT:
        return _from_float(name, col.values, t)
    return _from_bytes(name, col.values, t)


def _make_list(name: str, t: pa.DataType, lengths: np.ndarray, values: pa.Array) -> pa.Array:
    if pa.types.is_fixed_size_list(t):
        if (lengths != t.list_size).any():
            bad = int(lengths[lengths != t.list_size][0])
            raise SchemaError(f"feature {name!r}: a list of {bad} values doesn't fit {t}")
        return pa.FixedSizeListArray.from_arrays(values, type=t)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if pa.types.is_large_list(t):
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values, type=t)
    if offsets[-1] > 2**31 - 1:
        raise SchemaError(f"feature {name!r}: too many values for {t}; use large_list")
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values, type=t)


def _spread(arr: pa.Array, rows: np.ndarray, n: int, t: pa.DataType) -> pa.Array:
    """Place arr[j] at row rows[j] of an n-row array, nulls elsewhere (rows ascending)."""
    if len(rows) == n:
        return arr
    if not len(rows):
        return pa.nulls(n, t)
    indices = np.zeros(n, dtype=np.int64)
    indices[rows] = np.arange(len(rows))
    mask = np.ones(n, dtype=bool)
    mask[rows] = False
    return arr.take(pa.array(indices, pa.int64(), mask=mask))


def _lengths(containers: list[Any]) -> np.ndarray:
    return np.fromiter(map(len, containers), np.int64, len(containers))


def _context_column(name: str, c: _Col | None, n: int, t: pa.DataType) -> pa.Array:
    if c is None:
        return pa.nulls(n, t)
    kind = c.kind(name, "feature")
    if _is_list(t):
        flat = _flat_values(name, c, kind, t.value_type)
        return _spread(_make_list(name, t, c.lengths, flat), c.rows, n, t)
    has = c.kinds != 0  # no kind set: null in a scalar column
    rows, lengths = c.rows[has], c.lengths[has]
    if (lengths != 1).any():
        j = int(np.flatnonzero(lengths != 1)[0])
        raise SchemaError(
            f"feature {name!r} has {lengths[j]} values in record {rows[j]}, but its type {t} "
            "holds exactly one; read it as a list type"
        )
    return _spread(_flat_values(name, c, kind, t), rows, n, t)


def _feature_list_column(name: str, c: _Col | None, n: int, t: pa.DataType) -> pa.Array:
    if c is None:
        return pa.nulls(n, t)
    kind = c.kind(name, "feature list")
    flat = _flat_values(name, c, kind, t.value_type.value_type)
    inner = _make_list(name, t.value_type, c.lengths, flat)
    return _spread(_make_list(name, t, c.steps, inner), c.rows, n, t)


def to_arrow(
    records: Iterable[RecordBytes],
    schema: pa.Schema | None = None,
    record_type: str = "Example",
    binary_features: Iterable[str] = (),
) -> pa.Table:
    """Convert serialized Examples or SequenceExamples to an Arrow table.

    Examples in the canonical wire form (what TensorFlow, protobuf and :func:`from_arrow`
    write) are decoded in bulk: protobuf splits the records into map entries in two C calls,
    and numpy decodes tags, lengths, packed values and strings for all entries at once. Any
    other valid encoding (unpacked numbers, a name twice in a record, unknown fields, ...)
    and every SequenceExample go through protobuf record by record. Both give the same
    result; columns are then built with numpy and Arrow array constructors.

    Args:
        records: serialized records (bytes-like), or a pyarrow binary array of them.
        schema: the table's schema. None infers it from all records by the rules of
            :func:`infer_schema`. Given, values are converted to it (see the module
            docstring): ints to narrower ints with a range check, bool, floats, dates,
            timestamps, decimals, strings (UTF-8 checked), binary, and list types; features the
            schema lacks are skipped. For SequenceExample, fields of a list-of-list type are read
            from the feature lists, the others from the context.
        record_type: ``"Example"`` or ``"SequenceExample"``.
        binary_features: with no schema: ``bytes_list`` features to type ``binary``.

    Returns:
        A table with one row per record.

    Raises:
        SchemaError: naming the feature: conflicting kinds, a kind the schema type can't hold
            (e.g. float values for a string field), a value out of range, a length other than
            one for a scalar field, a null in a non-nullable field; or a record that doesn't
            parse.
        ValueError: an unknown ``record_type``.
    """
    n, ctx, fls = _collect(records, record_type, None)
    if schema is None:
        schema = _infer(ctx, fls, binary_features)
    columns = []
    for field in schema:
        t = field.type
        nested = _is_list(t) and _is_list(t.value_type)
        if nested and record_type == "Example":
            raise SchemaError(
                f"field {field.name!r} has type {t}: lists of lists are only for "
                "SequenceExample feature lists"
            )
        if nested:
            col = _feature_list_column(field.name, fls.get(field.name), n, t)
        else:
            col = _context_column(field.name, ctx.get(field.name), n, t)
        if col.null_count and not field.nullable:
            raise SchemaError(
                f"feature {field.name!r} is missing in some records, but its field is not nullable"
            )
        columns.append(col)
    if not columns:  # keep the row count
        empty = pa.RecordBatch.from_struct_array(pa.nulls(n, pa.struct([])).fill_null({}))
        return pa.Table.from_batches([empty])
    return pa.Table.from_arrays(columns, schema=schema)


# --------------------------------------------------------------------------------------------
# Arrow -> serialized records: a vectorised protobuf wire-format writer
# --------------------------------------------------------------------------------------------
#
# Each record is built as a rope: per-row byte pieces that are constants (tags), slices of a
# buffer (values, strings) or concatenations of pieces. Every piece knows its length in each
# row, so the length prefixes (varints) are computed column-wise with numpy, and the whole
# batch is written into one buffer at the end, each byte copied once.


class _Leaf:
    """Row i is buf[starts[i] : starts[i] + lens[i]]."""

    __slots__ = ("buf", "starts", "lens")

    def __init__(self, buf: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> None:
        self.buf, self.starts, self.lens = buf, starts, lens


class _Const:
    """Row i is data, or nothing where lens[i] == 0."""

    __slots__ = ("data", "lens")

    def __init__(self, data: np.ndarray, lens: np.ndarray) -> None:
        self.data, self.lens = data, lens


class _Cat:
    """Row i is the concatenation of the parts' rows i."""

    __slots__ = ("parts", "lens")

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts
        self.lens = np.sum([p.lens for p in parts], axis=0, dtype=np.int64)


def _const(data: bytes, n: int) -> _Const:
    return _Const(np.frombuffer(data, dtype=np.uint8), np.full(n, len(data), dtype=np.int64))


def _masked(node: Any, keep: np.ndarray) -> Any:
    """The node with rows where keep is False emptied."""
    if isinstance(node, _Cat):
        out = _Cat.__new__(_Cat)
        out.parts = [_masked(p, keep) for p in node.parts]
        out.lens = node.lens * keep
        return out
    if isinstance(node, _Const):
        return _Const(node.data, node.lens * keep)
    return _Leaf(node.buf, node.starts, node.lens * keep)


def _varint_bytes(v: int) -> bytes:
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _varints(values: np.ndarray) -> _Leaf:
    """Protobuf varints of int64 values (negative ones as 10-byte two's complement)."""
    n = len(values)
    if n == 0 or (values.min() >= 0 and values.max() < 0x80):
        return _Leaf(values.astype(np.uint8), np.arange(n, dtype=np.int64), np.ones(n, np.int64))
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
    return _Leaf(buf, starts, sizes)


def _write(node: Any, out: np.ndarray, dest: np.ndarray) -> None:
    """Write each row of node into out at dest[row]."""
    if isinstance(node, _Cat):
        pos = dest.copy()
        for part in node.parts:
            _write(part, out, pos)
            pos += part.lens
        return
    lens = node.lens
    if isinstance(node, _Const):
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


def _materialize(node: Any) -> _Leaf:
    lens = node.lens
    starts = np.cumsum(lens) - lens
    out = np.empty(int(lens.sum()), dtype=np.uint8)
    _write(node, out, starts)
    return _Leaf(out, starts, lens)


def _len_prefixed(tag: bytes, node: Any) -> _Cat:
    """tag, varint(len(node)), node."""
    n = len(node.lens)
    return _Cat([_const(tag, n), _varints(node.lens), node])


def _slices(stream: _Leaf, lengths: np.ndarray) -> _Leaf:
    """Group consecutive elements of stream into rows of ``lengths`` elements each."""
    bounds = np.zeros(len(stream.lens) + 1, dtype=np.int64)
    np.cumsum(stream.lens, out=bounds[1:])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    starts = bounds[offsets[:-1]]
    return _Leaf(stream.buf, starts, bounds[offsets[1:]] - starts)


_KIND_TAG = {_BYTES: b"\x0a", _FLOAT: b"\x12", _INT64: b"\x1a"}


def _leaf_kind(name: str, t: pa.DataType) -> str:
    """The feature kind an Arrow leaf type becomes, or SchemaError."""
    if pa.types.is_dictionary(t):
        return _leaf_kind(name, t.value_type)
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return _INT64
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return _INT64
    if pa.types.is_floating(t):
        return _FLOAT
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_decimal(t)
        or t in (pa.string_view(), pa.binary_view())
    ):
        return _BYTES
    raise SchemaError(f"column {name!r} has type {t}, which has no TFRecord feature form")


def _plan(name: str, t: pa.DataType, record_type: str) -> tuple[int, str | None]:
    """(list depth, feature kind) of a column; kind None for a null-typed column."""
    if pa.types.is_null(t):
        return 0, None
    depth, leaf = 0, t
    while _is_list(leaf):
        depth, leaf = depth + 1, leaf.value_type
    if depth > 2 or (depth == 2 and record_type == "Example"):
        where = "" if record_type == "Example" else " (at most list<list<T>>)"
        raise SchemaError(
            f"column {name!r} has type {t}: nested lists have no {record_type} form{where}"
        )
    return depth, _leaf_kind(name, leaf)


def _numpy(arr: pa.Array, dtype: Any) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


def _element_stream(name: str, arr: pa.Array) -> _Leaf:
    """One encoded element per value of arr (no nulls): the packed or length-delimited bytes."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr, t = arr.dictionary_decode(), t.value_type
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        if pa.types.is_uint64(t) and len(arr) and pc.max(arr).as_py() > _INT64_MAX:
            raise SchemaError(
                f"column {name!r}: uint64 value {pc.max(arr).as_py()} exceeds int64"
            )
        return _varints(_numpy(arr, np.int64))
    if pa.types.is_floating(t):
        with np.errstate(over="ignore"):
            f = _numpy(arr, np.float64 if pa.types.is_float16(t) else None).astype("<f4")
        n = len(f)
        return _Leaf(f.view(np.uint8), np.arange(n, dtype=np.int64) * 4, np.full(n, 4, np.int64))
    if pa.types.is_date32(t):
        return _varints(_numpy(arr.view(pa.int32()), np.int64))
    if pa.types.is_date64(t):
        return _varints(_numpy(arr.view(pa.int64()), np.int64) // 86_400_000)
    if pa.types.is_timestamp(t):
        try:
            us = arr.cast(pa.timestamp("us", t.tz), safe=True)
        except pa.ArrowInvalid as e:
            raise SchemaError(f"column {name!r}: can't store {t} as microseconds: {e}") from None
        return _varints(_numpy(us.view(pa.int64()), np.int64))
    # bytes-like: each element is tag 1, varint length, the bytes
    if pa.types.is_decimal(t):
        arr = arr.cast(pa.string())
    elif pa.types.is_fixed_size_binary(t) or t == pa.binary_view():
        arr = arr.cast(pa.binary())
    elif t == pa.string_view():
        arr = arr.cast(pa.string())
    n = len(arr)
    if n == 0:
        return _Leaf(np.empty(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64))
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64 if large else np.int32)
    offsets = offsets[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf or b"", dtype=np.uint8)
    values = _Leaf(data, offsets[:-1], np.diff(offsets))
    return _materialize(_len_prefixed(b"\x0a", values))


def _feature(kind: str, payload: _Leaf) -> _Cat:
    """Feature messages from per-row list payloads (packed values, or bytes elements)."""
    if kind == _BYTES:
        list_msg: Any = payload
    else:  # packed: tag 1, varint length, values; nothing at all for an empty list
        list_msg = _masked(_len_prefixed(b"\x0a", payload), payload.lens > 0)
    return _len_prefixed(_KIND_TAG[kind], list_msg)


def _lengths_and_values(name: str, arr: pa.Array, what: str) -> tuple[np.ndarray, pa.Array]:
    lengths = pc.list_value_length(arr).fill_null(0)
    values = pc.list_flatten(arr)
    if values.null_count:
        raise SchemaError(f"column {name!r}: a null {what} has no TFRecord form")
    return _numpy(lengths, np.int64), values


def _column_entries(name: str, arr: pa.Array, depth: int, kind: str | None) -> Any:
    """The map entries (Features.feature or FeatureLists.feature_list) of one column."""
    n = len(arr)
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
    payload = _slices(_element_stream(name, values), lengths)
    value = _feature(kind, payload)
    if depth == 2:  # FeatureList: each step's Feature as tag 1, varint length, Feature
        steps = _materialize(_len_prefixed(b"\x0a", value))
        value = _slices(steps, step_lengths)
    key = name.encode("utf-8")
    key_field = _const(b"\x0a" + _varint_bytes(len(key)) + key, n)
    body = _Cat([key_field, *_len_prefixed(b"\x12", value).parts])
    return _masked(_len_prefixed(b"\x0a", body), valid)


def _features_node(entries: list[Any], n: int) -> Any:
    entries = [e for e in entries if e is not None]
    return _Cat(entries) if entries else _Const(np.empty(0, np.uint8), np.zeros(n, np.int64))


def _encode_batch(
    batch: pa.RecordBatch, plans: list[tuple[str, int, str | None]], record_type: str
) -> list[bytes]:
    n = batch.num_rows
    if n == 0:
        return []
    ctx, fls = [], []
    for name, depth, kind in plans:
        col = batch.column(batch.schema.get_field_index(name))
        (fls if depth == 2 else ctx).append(_column_entries(name, col, depth, kind))
    record = _len_prefixed(b"\x0a", _features_node(ctx, n))
    if record_type == "SequenceExample":
        record.parts += _len_prefixed(b"\x12", _features_node(fls, n)).parts
        record.lens = np.sum([p.lens for p in record.parts], axis=0, dtype=np.int64)
    leaf = _materialize(record)
    big = leaf.buf.tobytes()
    ends = (leaf.starts + leaf.lens).tolist()
    return [big[s:e] for s, e in zip(leaf.starts.tolist(), ends)]


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
            null inside a list, a uint64 above int64, a timestamp with sub-microsecond part.
        ValueError: an unknown ``record_type``.
    """
    _check_record_type(record_type)
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
        for batch in table.to_batches(max_chunksize=batch_size):
            yield from _encode_batch(batch, plans, record_type)

    return records()
