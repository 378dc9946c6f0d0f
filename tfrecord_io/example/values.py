"""Python values <-> serialized tf.train.Example / SequenceExample, one record at a time.

Uses tfrecord-io's own protobuf messages (:mod:`tfrecord_io.proto.example_pb2`, wire-compatible
with TensorFlow's, in another proto package so both load in one process).

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
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tfrecord_io.errors import SchemaError
from tfrecord_io.example.wire import varint_bytes
from tfrecord_io.proto import example_pb2 as _pb

__all__ = [
    "encode_example",
    "decode_example",
    "encode_sequence_example",
    "decode_sequence_example",
    "Scalar",
    "FeatureValue",
    "RecordBytes",
    "check_record_type",
    "parse_message",
    "log_undecodable_names",
]

log = logging.getLogger("tfrecord_io.example")


Scalar = bool | int | float | str | bytes
FeatureValue = Scalar | Sequence[Scalar] | np.ndarray | None
RecordBytes = bytes | bytearray | memoryview

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
BYTES_LIST, FLOAT_LIST, INT64_LIST = "bytes_list", "float_list", "int64_list"
KIND_LABEL = {BYTES_LIST: "bytes", FLOAT_LIST: "float", INT64_LIST: "int64", None: "no"}
_RECORD_TYPES = ("Example", "SequenceExample")


def check_record_type(record_type: str) -> None:
    """ValueError unless *record_type* is ``"Example"`` or ``"SequenceExample"``."""
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
    if values and (min(values) < INT64_MIN or max(values) > INT64_MAX):
        bad = next(v for v in values if not INT64_MIN <= v <= INT64_MAX)
        raise SchemaError(f"feature {name!r}: integer {bad} is outside the int64 range")


def _to_float32(values: Any) -> list[float]:
    with np.errstate(over="ignore"):
        try:
            wide = np.asarray(values, dtype=np.float64)
        except OverflowError:  # an int beyond float64, so beyond float32 too: +-inf
            wide = np.array([_to_float64(v) for v in values], dtype=np.float64)
        return wide.astype(np.float32).tolist()


def _to_float64(value: Any) -> float:
    """*value* as a float, +-inf when it is an int too large for one."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


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
        return INT64_LIST, out
    if classes <= {"int", "float"}:
        return FLOAT_LIST, _to_float32(out)
    if classes <= {"str", "bytes"}:
        return BYTES_LIST, [_utf8(name, x) if isinstance(x, str) else x for x in out]
    raise SchemaError(f"feature {name!r}: list mixes {' and '.join(sorted(classes))} values")


def _array_values(name: str, arr: np.ndarray) -> tuple[str | None, list]:
    kind = arr.dtype.kind
    if kind == "b":
        return INT64_LIST, arr.astype(np.int64).tolist()
    if kind in "iu":
        if kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > INT64_MAX:
            raise SchemaError(f"feature {name!r}: uint64 value {arr.max()} exceeds int64")
        return INT64_LIST, arr.astype(np.int64).tolist()
    if kind == "f":
        return FLOAT_LIST, _to_float32(arr)
    if kind == "U":
        return BYTES_LIST, [_utf8(name, s) for s in arr.tolist()]
    if kind == "S":
        return BYTES_LIST, arr.tolist()
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
        return INT64_LIST, [x]
    if c == "float":
        return FLOAT_LIST, _to_float32([x])
    if c == "str":
        return BYTES_LIST, [_utf8(name, x)]
    if c == "bytes":
        return BYTES_LIST, [x]
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
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SchemaError(f"feature name {name!r} is not encodable as UTF-8 ({e})") from None
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


def parse_message(
    cls: Any,
    data: RecordBytes,
    what: str,
    index: int | None = None,
    skipped: list[bytes] | None = None,
) -> Any:
    """Parse *data* as protobuf message *cls*; :class:`SchemaError` (naming *what* and the
    record's *index*) if it does not parse.

    A feature (or feature list) of an Example or SequenceExample whose name is not valid
    UTF-8 is left out, as TensorFlow's parsers leave out every feature not asked for (no such
    name can be asked for: names are str): protobuf refuses the whole record for it. Those names
    are appended to *skipped* when it is given, else logged as a warning.
    """
    if not isinstance(data, bytes):
        data = bytes(data)  # protobuf < 5 parses only bytes
    try:
        return cls.FromString(data)
    except (DecodeError, TypeError) as e:
        error = e
    where = "" if index is None else f" (record {index})"
    maps = _NAME_MAPS.get(cls)
    stripped = _without_undecodable_names(data, maps) if maps else None
    if stripped is not None:
        clean, names = stripped
        try:
            msg = cls.FromString(clean)
        except (DecodeError, TypeError):
            pass
        else:
            if skipped is not None:
                skipped.extend(names)
            else:
                log_undecodable_names(names, f"the {what}{where}")
            return msg
    raise SchemaError(f"not a serialized {what}{where}: {error}") from None


def log_undecodable_names(names: Iterable[bytes], where: str) -> None:
    """Log one warning that the features named *names* (not valid UTF-8) of *where* (e.g.
    ``"the Example (record 3)"``) were skipped."""
    shown = sorted(set(names))
    if shown:
        listed = ", ".join(repr(n) for n in shown[:5]) + (", ..." if len(shown) > 5 else "")
        log.warning(
            "Skipped %d feature(s) of %s whose names are not valid UTF-8: %s. A name must be "
            "UTF-8 to be read (a column, a dict key); TensorFlow's parsers skip them too.",
            len(shown), where, listed,
        )


# The map fields (feature name -> value) of each record message: the fields of the record that
# hold them, each a message whose field 1 is the map's entries (key: field 1).
_NAME_MAPS = {_pb.Example: (1,), _pb.SequenceExample: (1, 2)}


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end and shift < 70:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise ValueError("not protobuf wire format")


def _fields(data: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(number, start, tag end, payload start, end) of each field of data[pos:end]; the
    payload start is the end for a field that is not length-delimited."""
    while pos < end:
        start = pos
        tag, pos = _varint(data, pos, end)
        tag_end = pos
        wire = tag & 7
        if wire == 0:
            _, pos = _varint(data, pos, end)
            payload = pos
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            payload = pos
        elif wire == 2:
            size, payload = _varint(data, pos, end)
            pos = payload + size
        else:
            raise ValueError("a group")  # groups have no place in these messages
        if pos > end:
            raise ValueError("not protobuf wire format")
        yield tag >> 3 if wire == 2 else -1, start, tag_end, payload, pos


def _entry_key(data: bytes, pos: int, end: int) -> bytes:
    key = b""
    for number, _, _, payload, stop in _fields(data, pos, end):
        if number == 1:
            key = data[payload:stop]  # the last one counts, as protobuf parses
    return key


def _valid_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _without_undecodable_names(
    data: bytes, maps: tuple[int, ...]
) -> tuple[bytes, list[bytes]] | None:
    """*data* without the map entries whose names are not valid UTF-8, and those names; None
    when there are none (or the bytes are not wire format): nothing to retry."""
    out = bytearray()
    dropped: list[bytes] = []
    try:
        for number, start, tag_end, payload, end in _fields(data, 0, len(data)):
            if number not in maps:
                out += data[start:end]
                continue
            body = bytearray()
            for n, s, _, p, e in _fields(data, payload, end):
                if n == 1:
                    key = _entry_key(data, p, e)
                    if not _valid_utf8(key):
                        dropped.append(key)
                        continue
                body += data[s:e]
            out += data[start:tag_end]
            out += varint_bytes(len(body))
            out += body
    except ValueError:  # not wire format
        return None
    return (bytes(out), dropped) if dropped else None


def _feature_list(feature: Any) -> list:
    kind = feature.WhichOneof("kind")
    return list(getattr(feature, kind).value) if kind else []


def _feature_numpy(feature: Any) -> np.ndarray:
    kind = feature.WhichOneof("kind")
    if kind == INT64_LIST:
        v = feature.int64_list.value
        return np.fromiter(v, dtype=np.int64, count=len(v))
    if kind == FLOAT_LIST:
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
        empty object array). A feature whose name is not valid UTF-8 is left out, with a
        logged warning (protobuf's parser, and so ``tf.train.Example.FromString``, refuse the
        whole record; TensorFlow's ``tf.io`` parsers skip it).

    Raises:
        SchemaError: ``data`` is not a valid serialized Example.
    """
    return _decode_features(parse_message(_pb.Example, data, "Example").features, numpy)


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
        Names that are not valid UTF-8 are left out, as :func:`decode_example` leaves them out.

    Raises:
        SchemaError: ``data`` is not a valid serialized SequenceExample.
    """
    seq = parse_message(_pb.SequenceExample, data, "SequenceExample")
    conv = _feature_numpy if numpy else _feature_list
    flmap = seq.feature_lists.feature_list
    lists = {name: [conv(f) for f in flmap[name].feature] for name in sorted(flmap)}
    return _decode_features(seq.context, numpy), lists


# --------------------------------------------------------------------------------------------
# Serialized records -> Arrow
# --------------------------------------------------------------------------------------------
