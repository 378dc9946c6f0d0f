"""What the CLI prints: decoded records as JSON, inferred specs as Python source."""

from __future__ import annotations

import base64
import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from tfrecord_io.example.spec import FeatureSpec, RecordSpec

__all__ = [
    "json_bytes",
    "decoded_record",
    "feature_spec_source",
    "schema_description",
    "schema_source",
]

_TF_DTYPES = {"int64": "tf.int64", "float32": "tf.float32", "string": "tf.string"}


def json_bytes(value: bytes) -> Any:
    """UTF-8 text as a JSON string; anything else as ``{"base64": "..."}``."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def _json_float(value: float) -> Any:
    """A float32 value by its shortest float32 repr (0.1, not 0.10000000149011612); NaN and
    the infinities, which JSON lacks, as the strings "NaN", "Infinity", "-Infinity"."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(str(np.float32(value)))


def _json_values(values: list[Any]) -> list[Any]:
    if not values:
        return []
    first = values[0]
    if isinstance(first, bytes):
        return [json_bytes(v) for v in values]
    if isinstance(first, float):
        return [_json_float(v) for v in values]
    return list(values)


def _json_features(features: dict[str, list[Any]]) -> dict[str, Any]:
    return {name: _json_values(values) for name, values in features.items()}


def decoded_record(record: bytes, record_type: str) -> dict[str, Any]:
    """Decode one record for ``head``. Raises SchemaError if it is not of the type."""
    from tfrecord_io import example  # noqa: PLC0415 - the example layer, for `head` only

    if record_type == "example":
        return _json_features(example.decode_example(record))
    context, lists = example.decode_sequence_example(record)
    if record_type == "auto" and not lists:
        return _json_features(context)
    return {
        "context": _json_features(context),
        "feature_lists": {
            name: [_json_values(step) for step in steps] for name, steps in lists.items()
        },
    }


def feature_spec_source(spec: FeatureSpec) -> str:
    """The ``tf.io`` parsing spec of a feature as Python source.

    Variable-length features print as ``tf.io.VarLenFeature`` (:func:`tfrecord_io.tf.infer_features`
    builds the same decision as a ``RaggedFeature``).
    """
    dtype = _TF_DTYPES[spec.dtype]
    if spec.shape is None:
        return f"tf.io.VarLenFeature({dtype})"
    shape = "[" + ", ".join(map(str, spec.shape)) + "]"
    if spec.sequence:
        missing = ", allow_missing=True" if spec.allow_missing else ""
        return f"tf.io.FixedLenSequenceFeature({shape}, {dtype}{missing})"
    return f"tf.io.FixedLenFeature({shape}, {dtype})"


def schema_description(spec: RecordSpec) -> dict[str, Any]:
    """The ``schema`` command's JSON document (without ``records_sampled``)."""
    context: dict[str, str | None] = {}
    sequence: dict[str, str | None] = {}
    for name, feature in spec.features.items():
        source = None if feature is None else feature_spec_source(feature)
        (sequence if spec.is_feature_list(name) else context)[name] = source
    description: dict[str, Any] = {"record_type": spec.record_type}
    if spec.record_type == "SequenceExample":
        description["context_features"] = context
        description["sequence_features"] = sequence
    else:
        description["feature_spec"] = context
    description["spark_schema"] = spec.spark_schema
    return description


def schema_source(description: dict[str, Any]) -> str:
    """The description as Python to paste next to ``import tensorflow as tf``."""
    lines = [
        f"# tf.train.{description['record_type']}, {description['records_sampled']} records sampled"
    ]
    names = ["context_features", "sequence_features", "feature_spec"]
    for variable in (n for n in names if n in description):
        lines.append(f"{variable} = {{")
        for name, spec in description[variable].items():
            if spec is None:
                lines.append(f"    # {json.dumps(name)}: no values in the records sampled")
            else:
                lines.append(f"    {json.dumps(name)}: {spec},")
        lines.append("}")
    lines.append(f"spark_schema = {json.dumps(description['spark_schema'])}")
    return "\n".join(lines)
