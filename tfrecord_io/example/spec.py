"""The feature spec of sampled records, without TensorFlow: what each feature parses as.

One inference, two renderings: :func:`tfrecord_io.tf.infer_features` turns a
:class:`RecordSpec` into ``tf.io`` feature objects, and ``tfrecord-io schema`` prints it as
Python source and a Spark DDL schema. Both therefore decide fixed and variable lengths alike.

The types are :func:`~tfrecord_io.example.infer_schema`'s (``int64_list`` -> ``int64``,
``float_list`` -> ``float32``, ``bytes_list`` -> ``string``). The shapes:

* an Example (or context) feature present with the same number of values L > 0 in every sampled
  record has the fixed shape ``()`` for L = 1, ``(L,)`` otherwise; any other feature (lengths
  vary, absent from some records, no kind set somewhere, no values) is variable-length;
* a feature list whose steps all have the same number of values L > 0 has the fixed per-step
  shape ``()`` or ``(L,)``, with ``allow_missing`` when some records lack it; otherwise it is
  variable-length;
* a feature that never has a value kind in the sample has no spec (``None``): its type is
  unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from tfrecord_io.example.arrow import to_arrow
from tfrecord_io.example.inference import infer_schema
from tfrecord_io.example.values import parse_message
from tfrecord_io.proto import example_pb2 as _pb

__all__ = ["FeatureSpec", "RecordSpec", "infer_spec", "has_feature_lists", "spark_ddl",
           "sql_identifier"]

#: Arrow leaf type (as ``str(type)``) -> dtype name of a spec (TensorFlow's names).
_DTYPES = {"int64": "int64", "float": "float32", "string": "string", "binary": "string"}
#: Arrow leaf type -> Spark SQL type, as the DataFrame reader maps them.
_SPARK_TYPES = {
    "int64": "BIGINT",
    "float": "FLOAT",
    "string": "STRING",
    "binary": "BINARY",
    "null": "VOID",
}
_PLAIN_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True)
class FeatureSpec:
    """How one feature parses.

    Attributes:
        dtype: ``"int64"``, ``"float32"`` or ``"string"``.
        shape: the fixed shape of the feature in a record (of one step, for a feature list),
            ``()`` or ``(L,)``; None when its length varies.
        sequence: whether this is a SequenceExample feature list.
        allow_missing: (fixed-shape feature lists) some records lack the feature list.
    """

    dtype: str
    shape: tuple[int, ...] | None
    sequence: bool = False
    allow_missing: bool = False


@dataclass(frozen=True)
class RecordSpec:
    """The spec of sampled records.

    Attributes:
        record_type: ``"Example"`` or ``"SequenceExample"``.
        schema: the Arrow schema :func:`~tfrecord_io.example.infer_schema` gives.
        features: name -> spec, in schema order; None for a feature with no values in the
            sample. For a SequenceExample, the context features are those with
            ``sequence=False``.
    """

    record_type: str
    schema: pa.Schema
    features: dict[str, FeatureSpec | None]

    def is_feature_list(self, name: str) -> bool:
        """Whether feature *name* is a SequenceExample feature list (not a context feature)."""
        return self.record_type == "SequenceExample" and _is_list_of_lists(
            self.schema.field(name).type
        )

    @property
    def spark_schema(self) -> str:
        """The schema as a Spark DDL string, e.g. ``"label BIGINT, image ARRAY<BIGINT>"``."""
        return spark_ddl(self.schema)


def has_feature_lists(record: bytes) -> bool:
    """Whether a serialized record is a SequenceExample with at least one feature list."""
    try:  # a name that is not UTF-8 is skipped (infer_schema warns of it), not the record
        message = parse_message(_pb.SequenceExample, record, "SequenceExample", skipped=[])
    except Exception:  # noqa: BLE001 - not parseable: infer_schema will say so
        return False
    return len(message.feature_lists.feature_list) > 0


def _leaf(t: pa.DataType) -> pa.DataType:
    while pa.types.is_list(t):
        t = t.value_type
    return t


def _is_list_of_lists(t: pa.DataType) -> bool:
    return pa.types.is_list(t) and pa.types.is_list(t.value_type)


def _lengths_range(column: pa.Array) -> tuple[int, int] | None:
    """(min, max) of the list lengths of a list column's non-null cells; None if none."""
    bounds = pc.min_max(pc.list_value_length(column)).as_py()
    if bounds["min"] is None:
        return None
    return bounds["min"], bounds["max"]


def _fixed(bounds: tuple[int, int] | None) -> tuple[int, ...] | None:
    if bounds is not None and bounds[0] == bounds[1] > 0:
        return () if bounds[0] == 1 else (bounds[0],)
    return None


def _context_spec(column: pa.Array, t: pa.DataType) -> FeatureSpec | None:
    leaf = _leaf(t)
    if pa.types.is_null(leaf):
        return None
    dtype = _DTYPES[str(leaf)]
    shape = None
    if column.null_count == 0:
        shape = _fixed(_lengths_range(column)) if pa.types.is_list(t) else ()
    return FeatureSpec(dtype, shape)


def _sequence_spec(column: pa.Array, t: pa.DataType) -> FeatureSpec | None:
    leaf = _leaf(t)
    if pa.types.is_null(leaf):
        return None
    steps = pc.list_flatten(column)
    shape = _fixed(_lengths_range(steps) if len(steps) else None)
    missing = shape is not None and column.null_count > 0
    return FeatureSpec(_DTYPES[str(leaf)], shape, sequence=True, allow_missing=missing)


def infer_spec(records: Sequence[bytes], record_type: str = "auto") -> RecordSpec:
    """The spec of sampled serialized records (see the module docs for the rules).

    Args:
        records: the sample, serialized records.
        record_type: ``"Example"``, ``"SequenceExample"``, or ``"auto"`` (SequenceExample if
            some record has a feature list, else Example).

    Raises:
        SchemaError: a record that is not of the type, or a feature whose value kind differs
            between records.
        ValueError: an unknown ``record_type``.
    """
    if record_type == "auto":
        record_type = "SequenceExample" if any(map(has_feature_lists, records)) else "Example"
    schema = infer_schema(records, record_type)
    table = to_arrow(records, schema, record_type)
    features: dict[str, FeatureSpec | None] = {}
    for field in schema:
        column = table.column(field.name).combine_chunks()
        if record_type == "SequenceExample" and _is_list_of_lists(field.type):  # feature list
            features[field.name] = _sequence_spec(column, field.type)
        else:
            features[field.name] = _context_spec(column, field.type)
    return RecordSpec(record_type, schema, features)


def sql_identifier(name: str) -> str:
    """*name* as Spark SQL names a column: as it is when plain (letters, digits, ``_``, not
    starting with a digit), else in backticks with each backtick doubled, so that a dot
    (``meta.source``) or a ``/`` (``image/encoded``) is part of the name, not a struct path."""
    if name and not name[0].isdigit() and _PLAIN_NAME.issuperset(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"ARRAY<{_spark_type(t.value_type)}>"
    return _SPARK_TYPES[str(t)]


def spark_ddl(schema: pa.Schema) -> str:
    """An inferred Arrow schema as a Spark DDL string (names quoted with backticks if needed)."""
    return ", ".join(f"{sql_identifier(f.name)} {_spark_type(f.type)}" for f in schema)
