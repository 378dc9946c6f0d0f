"""Serialized records -> :class:`pyarrow.Table` in a given (or inferred) schema.

Reading into a given schema (:func:`to_arrow`)
----------------------------------------------
``int64_list`` reads as any integer type (range-checked), ``bool`` (nonzero is true),
float16/32/64 (rounded to the nearest float where it has fewer digits than the integer, as
Spark's and TensorFlow's casts round: beyond 2**24 for float32, 2**53 for float64; beyond
float16's range: error), ``date32``/``date64`` (value = days since 1970-01-01), ``timestamp`` of
any unit/zone (value = microseconds since the epoch, UTC) and ``decimal`` (exactly, else error).
``float_list`` reads as float32/64 exactly and as float16 rounded to the nearest (NaN and ±inf
kept; a finite value beyond float16's range: error). ``bytes_list`` reads as ``binary``/
``large_binary``, ``fixed_size_binary`` (length-checked), ``string``/``large_string`` (must be
UTF-8) and ``decimal`` (from its decimal string, exactly, else error). Scalar types need exactly
one value; ``list``, ``large_list`` and ``fixed_size_list`` (length-checked) take any number;
feature lists need a list of lists. Any other pairing raises :class:`SchemaError` naming the
feature. Features not in the schema are ignored, and so are those whose names are not valid
UTF-8 (no field can name them; TensorFlow's parsers skip them too); schema fields that no record
has are all null.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tfrecord_io.errors import SchemaError
from tfrecord_io.example.columns import Column, collect
from tfrecord_io.example.inference import infer
from tfrecord_io.example.values import (
    BYTES_LIST,
    FLOAT_LIST,
    INT64_LIST,
    INT64_MAX,
    KIND_LABEL,
    RecordBytes,
)

__all__ = ["to_arrow", "is_list_type"]


def is_list_type(t: pa.DataType) -> bool:
    """Whether *t* is an Arrow list, large list or fixed-size list type."""
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _mismatch(name: str, kind: str | None, t: pa.DataType) -> SchemaError:
    return SchemaError(
        f"feature {name!r} holds {KIND_LABEL[kind]} values, which can't be read as {t}"
    )


def _arrow_error(name: str, t: pa.DataType, e: Exception) -> SchemaError:
    text = str(e)  # quotes the value whole, however long it is
    if len(text) > 200:
        text = f"{text[:150]}...{text[-40:]} ({len(text)} chars)"
    return SchemaError(f"feature {name!r}: can't convert its values to {t}: {text}")


#: Where a value is, from its index among a column's values: e.g. " in record 3".
Locate = Callable[[int], str]


def _to_floating(name: str, a: np.ndarray, t: pa.DataType, where: Locate) -> pa.Array:
    """*a* (int64 or float32) as the floating type *t*: rounded to the nearest, but a finite
    value beyond *t*'s range (only float16's can be passed) is an error, not ±inf."""
    dtype = np.dtype(t.to_pandas_dtype())
    with np.errstate(over="ignore"):
        out = a.astype(dtype)
    if dtype.itemsize == 2:
        over = np.isinf(out)
        if a.dtype.kind == "f":
            over &= np.isfinite(a)
        if over.any():
            i = int(np.flatnonzero(over)[0])
            raise SchemaError(
                f"feature {name!r}: value {a[i]}{where(i)} is out of range for {t}; read it "
                "as a wider float type"
            )
    return pa.array(out, t)


def _first_outside(a: np.ndarray, lo: int, hi: int) -> int | None:
    """The index of the first value of *a* outside [lo, hi], or None."""
    if not a.size or (a.min() >= lo and a.max() <= hi):
        return None
    return int(np.flatnonzero((a < lo) | (a > hi))[0])


def _from_int64(name: str, a: np.ndarray, t: pa.DataType, where: Locate) -> pa.Array:
    if pa.types.is_int64(t):
        return pa.array(a, pa.int64())
    if pa.types.is_integer(t):
        dtype = np.dtype(t.to_pandas_dtype())
        info = np.iinfo(dtype)
        i = _first_outside(a, info.min, info.max)
        if i is not None:
            raise SchemaError(f"feature {name!r}: value {a[i]}{where(i)} is out of range for {t}")
        return pa.array(a.astype(dtype), t)
    if pa.types.is_boolean(t):
        return pa.array(a != 0, pa.bool_())
    if pa.types.is_floating(t):
        return _to_floating(name, a, t, where)
    if pa.types.is_date32(t):
        i = _first_outside(a, -(2**31), 2**31 - 1)
        if i is not None:
            raise SchemaError(f"feature {name!r}: day count {a[i]}{where(i)} is out of range "
                              f"for {t}")
        return pa.array(a.astype(np.int32), pa.int32()).view(t)
    if pa.types.is_date64(t):
        limit = INT64_MAX // 86_400_000
        i = _first_outside(a, -limit, limit)
        if i is not None:
            raise SchemaError(f"feature {name!r}: day count {a[i]}{where(i)} is out of range "
                              f"for {t}")
        return pa.array(a * 86_400_000, pa.int64()).view(t)
    if pa.types.is_timestamp(t) or pa.types.is_decimal(t):
        if pa.types.is_timestamp(t):
            src = pa.array(a, pa.timestamp("us", t.tz))
        else:  # via decimal strings: int64 -> decimal casts want precision >= 19
            strings = pa.array(a, pa.int64()).cast(pa.string())
            src = _decimal_strings_arrow_can_cast(name, strings, t)
        try:
            return src.cast(t, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise _arrow_error(name, t, e) from None
    raise _mismatch(name, INT64_LIST, t)


def _from_float(name: str, a: np.ndarray, t: pa.DataType, where: Locate) -> pa.Array:
    if pa.types.is_floating(t):
        return _to_floating(name, a, t, where)
    raise _mismatch(name, FLOAT_LIST, t)


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
            return _decimal_strings_arrow_can_cast(name, b.cast(pa.string()), t).cast(t, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise _arrow_error(name, t, e) from None
    raise _mismatch(name, BYTES_LIST, t)


# Arrow's string -> decimal cast is only safe on what it can hold: a string of more digits than
# the type's widest precision wraps around silently ("1" and 128 zeros reads as 0), and a scale
# more than that many digits away from the target's indexes past Arrow's table of powers of ten
# (silently wrong: "1E-41" reads as 0.00 in decimal128(10, 2); or a crash of the process:
# "1E-10000000", "0." and ten million zeros and "1"). Only plain strings within those bounds go
# to Arrow as they are; every other decimal number is decided here.
_MAX_DIGITS = {32: 9, 64: 18, 128: 38, 256: 76}
_DECIMAL = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?)([0-9]+))?")


def _check_decimal_scale(name: str, t: pa.DataType) -> None:
    """:class:`SchemaError` for a decimal type whose scale Arrow can't rescale to."""
    if abs(t.scale) > _MAX_DIGITS[t.bit_width]:
        raise SchemaError(f"feature {name!r}: {t} has a scale Arrow can't convert values to; "
                          f"use a scale within ±{_MAX_DIGITS[t.bit_width]}")


def _decimal_strings_arrow_can_cast(name: str, strings: pa.Array, t: pa.DataType) -> pa.Array:
    """*strings* (decimal strings for the decimal type *t*) with every one Arrow can't cast
    safely respelled: a value of *t* exactly, with few digits and a short exponent; zero as
    ``0``. Such a value that does not fit *t* exactly raises :class:`SchemaError`; strings
    that are no decimal numbers are left for Arrow to reject."""
    _check_decimal_scale(name, t)
    most = _MAX_DIGITS[t.bit_width]
    # Counted as if every string were a decimal number (any other one Arrow rejects unread).
    length = pc.binary_length(strings).fill_null(0).to_numpy(zero_copy_only=False)
    dot = pc.find_substring(strings, ".").fill_null(-1).to_numpy(zero_copy_only=False)
    signed = pc.or_(pc.starts_with(strings, "-"), pc.starts_with(strings, "+"))
    exp = pc.or_(pc.match_substring(strings, "e"), pc.match_substring(strings, "E"))
    fraction = np.where(dot >= 0, length - dot - 1, 0)
    digits = length - (dot >= 0) - signed.fill_null(False).to_numpy(zero_copy_only=False)
    risky = exp.fill_null(False).to_numpy(zero_copy_only=False) | (digits > most)
    risky |= fraction > min(most, most + t.scale)
    if not risky.any():
        return strings
    values = strings.to_pylist()
    for i in np.flatnonzero(risky):
        text = values[i]
        m = _DECIMAL.fullmatch(text)
        if m is None or not (m[2] or m[3]):
            continue  # no decimal number: Arrow's parser rejects it before any arithmetic
        sign, whole, frac, exp_sign, exp_digits = m.groups(default="")
        number = (whole + frac).lstrip("0")
        significant = number.rstrip("0")
        if not significant:
            values[i] = "0"
            continue
        exp_digits = exp_digits.lstrip("0") or "0"
        if len(exp_digits) > 18:  # beyond any string's digits: the exponent alone decides
            exponent = -(10**19) if exp_sign == "-" else 10**19
        else:
            exponent = int(exp_sign + exp_digits)
        exponent += len(number) - len(significant) - len(frac)  # of the significant digits
        if exponent < -t.scale or len(significant) + exponent > t.precision - t.scale:
            shown = text if len(text) <= 40 else f"{text[:20]}...{text[-12:]} ({len(text)} chars)"
            raise SchemaError(f"feature {name!r}: value {shown} doesn't fit {t} exactly")
        values[i] = f"{sign}{significant}E{exponent}"
    return pa.array(values, pa.string())


def _locate(col: Column) -> Locate:
    """Where the i-th of the column's values is: its record (and step, in a feature list)."""

    def where(i: int) -> str:
        entry = int(np.searchsorted(np.cumsum(col.lengths), i, side="right"))
        if col.steps is None:
            return f" in record {col.rows[entry]}"
        bounds = np.cumsum(col.steps)
        r = int(np.searchsorted(bounds, entry, side="right"))
        return f" in record {col.rows[r]} (step {entry - (bounds[r] - col.steps[r])})"

    return where


def _flat_values(name: str, col: Column, kind: str | None, t: pa.DataType) -> pa.Array:
    """All values of the column as an Arrow array of (non-list) type ``t``."""
    if is_list_type(t) or pa.types.is_struct(t) or pa.types.is_map(t):
        raise SchemaError(f"feature {name!r}: type {t} has no TFRecord form here")
    if kind is None or pa.types.is_null(t):
        if kind is not None and len(col.values):
            raise _mismatch(name, kind, t)
        return pa.array([], t)
    if kind == INT64_LIST:
        return _from_int64(name, col.values, t, _locate(col))
    if kind == FLOAT_LIST:
        return _from_float(name, col.values, t, _locate(col))
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


def _context_column(name: str, c: Column | None, n: int, t: pa.DataType) -> pa.Array:
    if c is None:
        return pa.nulls(n, t)
    kind = c.kind(name, "feature")
    if is_list_type(t):
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


def _feature_list_column(name: str, c: Column | None, n: int, t: pa.DataType) -> pa.Array:
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
            docstring): ints to narrower ints with a range check, bool, floats (rounded to the
            nearest, as casts round; beyond float16's range an error), dates, timestamps,
            decimals, strings (UTF-8 checked), binary, and list types; features the schema lacks
            (or whose names are not UTF-8) are skipped. For SequenceExample, fields of a
            list-of-list type are read from the feature lists, the others from the context.
        record_type: ``"Example"`` or ``"SequenceExample"``.
        binary_features: with no schema: ``bytes_list`` features to type ``binary``.

    Returns:
        A table with one row per record.

    Raises:
        SchemaError: naming the feature: conflicting kinds, a kind the schema type can't hold
            (e.g. float values for a string field), a value out of range (naming its record),
            a length other than one for a scalar field, a null in a non-nullable field; or a
            record that doesn't parse.
        ValueError: an unknown ``record_type``.
    """
    n, ctx, fls = collect(records, record_type, None, warn_undecodable=schema is None)
    if schema is None:
        schema = infer(ctx, fls, binary_features)
    columns = []
    for field in schema:
        t = field.type
        nested = is_list_type(t) and is_list_type(t.value_type)
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
