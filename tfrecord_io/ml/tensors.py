"""DataFrame columns <-> model tensors, one Arrow batch at a time.

Inputs (:func:`to_input`), by the column's Spark type:

* numbers and booleans -> a tensor of shape ``[batch]``;
* arrays of numbers (``array<float>``, ``array<array<int>>``, ...; ML vectors arrive as
  ``array<double>``, or ``array<float>`` for a ``float32``/``float16``/``bfloat16`` input, see
  :mod:`tfrecord_io.ml.inference`) -> ``[batch, n, ...]``: every row of a
  batch must have the same lengths, and no nulls;
* ``binary`` and ``string`` (UTF-8) -> ``tf.string`` of shape ``[batch]`` (e.g. serialized
  Examples or encoded images for a model that decodes them itself).

The values are cast to the input's type, and reshaped to its shape when it is fully known and
holds as many values per row (a flat ``array<float>`` of 784 pixels feeds a ``[None, 28, 28]``
input). A cast never changes a value silently into another number: an integer input takes
integers within the range of its type, and floating-point values only when they are whole
numbers within it (``2.0``, not ``2.9``: round the column first), else :func:`to_input` raises
:class:`~tfrecord_io.errors.ModelError` naming the value. Floating-point inputs take any number,
rounded to their precision as TensorFlow does (``double`` to ``float32``).

Outputs (:func:`spark_type`, :func:`to_column`), by the type and shape of the model's output:
shape ``[batch]`` or ``[batch, 1]`` -> one value per row, otherwise (or when the shape is
unknown) a flat array per row (``[batch, 4, 2]`` -> ``array`` of 8); ``float16``/``float32``/
``bfloat16`` -> ``float``, ``float64`` -> ``double``, integers -> ``bigint``, ``bool`` ->
``boolean``, ``string`` -> ``binary``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from tfrecord_io.errors import ModelError
from tfrecord_io.ml.loading import TensorInfo

__all__ = ["to_input", "is_scalar", "spark_type", "to_column", "numpy_type"]

_FLOATS32 = ("float16", "float32", "bfloat16", "half")
_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def numpy_type(info: TensorInfo) -> Any:
    """The numpy type to hand TensorFlow for *info* (``object`` for strings)."""
    if info.dtype == "string":
        return object
    if info.dtype == "bfloat16":
        return np.float32
    return np.dtype(info.dtype)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _uniform(column: pa.Array, where: str) -> tuple[pa.Array, int]:
    """The values of a list array whose lists all have one length, and that length."""
    if column.null_count:
        raise ModelError(f"{where} has null arrays; drop or fill them before inference")
    lengths = np.asarray(column.value_lengths() if not pa.types.is_fixed_size_list(column.type)
                         else pa.array([column.type.list_size] * len(column)))
    width = int(lengths[0]) if len(lengths) else 0
    if len(lengths) and (lengths != width).any():
        raise ModelError(
            f"{where} has arrays of lengths {int(lengths.min())} to {int(lengths.max())} in one "
            "batch; a model input needs the same length in every row"
        )
    return column.flatten(), width


def _values(column: pa.Array, where: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """The column's leaf values as numpy, and the per-row dimensions of nested lists."""
    dims: list[int] = []
    while _is_list(column.type):
        column, width = _uniform(column, where)
        dims.append(width)
    if column.null_count:
        raise ModelError(f"{where} has nulls; drop or fill them before inference")
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        return np.array(column.to_pylist(), dtype=object), tuple(dims)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return np.array([s.encode() for s in column.to_pylist()], dtype=object), tuple(dims)
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_boolean(
        column.type
    ):
        return column.to_numpy(zero_copy_only=False), tuple(dims)
    raise ModelError(f"{where} is of Arrow type {column.type}, which no model input takes")


def to_input(column: pa.Array, info: TensorInfo, where: str) -> np.ndarray:
    """The batch *column* as an array for the model input *info*.

    Args:
        column: one DataFrame column of one Arrow batch.
        info: the model input it is mapped to.
        where: names the column and model for messages (``"column 'image' (model at ...)"``).

    Raises:
        ModelError: nulls, ragged arrays, a type or shape the input cannot take, integers out of
            the range of an integer input's type, or floating-point values for an integer input
            that are not whole numbers.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    rows = len(column)
    flat, dims = _values(column, where)
    is_text = flat.dtype == object
    if is_text != (info.dtype == "string"):
        raise ModelError(
            f"{where} holds {'strings/bytes' if is_text else 'numbers'}, but model input "
            f"{info.name!r} takes {info.dtype}"
        )
    data = flat.reshape((rows, *dims))
    target = info.shape[1:] if info.shape else None
    if target is not None and data.shape[1:] != target:
        known = all(d is not None for d in target)
        if known and int(np.prod(target, dtype=np.int64)) == int(np.prod(dims, dtype=np.int64)):
            data = data.reshape((rows, *target))  # e.g. 784 -> 28 x 28, or a scalar -> [1]
        elif len(target) != len(dims) or any(
            t is not None and t != d for t, d in zip(target, dims, strict=True)
        ):
            shown = ["None" if t is None else str(t) for t in target]
            raise ModelError(
                f"{where} gives values of shape {list(dims)} per row, but model input "
                f"{info.name!r} takes [{', '.join(shown)}] per row"
            )
    if is_text:
        return data
    target_type = numpy_type(info)
    if info.dtype in _INTEGERS and data.dtype != np.bool_:
        _check_integers(data, np.dtype(target_type), info, where)
    return data.astype(target_type, copy=False)


def _check_integers(data: np.ndarray, target: np.dtype, info: TensorInfo, where: str) -> None:
    """Refuses the numbers of *data* that the integer type *target* cannot hold exactly:
    integers out of its range, and floating-point values that are not whole numbers within it.

    Raises:
        ModelError: naming the first such value, the input and its type's range.
    """
    bounds = np.iinfo(target)
    span = f"{info.dtype}: {bounds.min} to {bounds.max}"
    if data.dtype.kind == "f":
        whole = np.isfinite(data) & (data == np.trunc(data))
        if not whole.all():
            value = data[~whole].flat[0]
            raise ModelError(
                f"{where} holds {value.item()!r}, which is not a whole number, but model input "
                f"{info.name!r} takes whole numbers ({span}): round the column (F.round) or "
                "cast it to an integer type first"
            )
        # min and max + 1 (the first value too large) are 0 or powers of two: exact as floats.
        outside = (data < bounds.min) | (data >= float(bounds.max + 1))
    else:
        have = np.iinfo(data.dtype)
        if have.min >= bounds.min and have.max <= bounds.max:
            return  # every value of the column's type fits
        # Bounds clipped to the column's type, so that they are exact in it.
        outside = (data < max(bounds.min, have.min)) | (data > min(bounds.max, have.max))
    if outside.any():
        value = data[outside].flat[0]
        raise ModelError(
            f"{where} holds {value.item()!r}, outside the range of model input {info.name!r} "
            f"({span}): filter or clip the column, or feed an input of a wider type"
        )


def is_scalar(info: TensorInfo) -> bool:
    """Whether the output *info* becomes one value per row (shape ``[batch]`` or
    ``[batch, 1]``) rather than an array."""
    return info.shape is not None and (len(info.shape) == 1 or info.shape[1:] == (1,))


def _leaf_types(info: TensorInfo) -> tuple[Any, pa.DataType]:
    from pyspark.sql import types as T  # noqa: PLC0415 - pyspark, on use

    if info.dtype in _FLOATS32:
        return T.FloatType(), pa.float32()
    if info.dtype == "float64":
        return T.DoubleType(), pa.float64()
    if info.dtype in _INTEGERS:
        return T.LongType(), pa.int64()
    if info.dtype == "bool":
        return T.BooleanType(), pa.bool_()
    if info.dtype == "string":
        return T.BinaryType(), pa.binary()
    raise ModelError(
        f"model output {info.name!r} is of type {info.dtype}, which has no column type"
    )


def spark_type(info: TensorInfo) -> Any:
    """The Spark SQL type of the column made from the output *info*."""
    from pyspark.sql import types as T  # noqa: PLC0415 - pyspark, on use

    leaf, _ = _leaf_types(info)
    return leaf if is_scalar(info) else T.ArrayType(leaf)


def to_column(values: np.ndarray, info: TensorInfo) -> pa.Array:
    """One batch of the output *info* as an Arrow column of :func:`spark_type`."""
    _, arrow = _leaf_types(info)
    values = np.asarray(values)
    rows = values.shape[0] if values.ndim else 0
    if is_scalar(info):
        flat = values.reshape(rows)
        if info.dtype == "string":
            return pa.array(list(flat), type=arrow)
        return pa.array(flat.astype(arrow.to_pandas_dtype(), copy=False), type=arrow)
    flat = values.reshape(rows, -1)
    width = flat.shape[1]
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * width, type=pa.int32())
    if info.dtype == "string":
        leaves = pa.array(list(flat.reshape(-1)), type=arrow)
    else:
        leaves = pa.array(flat.reshape(-1).astype(arrow.to_pandas_dtype(), copy=False), type=arrow)
    return pa.ListArray.from_arrays(offsets, leaves)
