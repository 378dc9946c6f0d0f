"""Schema inference: the Arrow schema of serialized Examples/SequenceExamples, from their
columns (:mod:`tfrecord_io.example.columns`).

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
* A feature whose name is not valid UTF-8 has no column: it is skipped, with one logged warning
  naming it and the first record that has it (TensorFlow's parsers skip it too; protobuf's
  refuses the whole record).
* Fields are sorted by name. For SequenceExample: the context features (rules above), then the
  feature lists, each ``list<list<type>>`` (outer: steps; a step with no kind set is ``[]``);
  a name that is both a context feature and a feature list -> :class:`SchemaError`.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from tfrecord_io.example.columns import Column, collect
from tfrecord_io.example.values import FLOAT_LIST, INT64_LIST, RecordBytes

__all__ = ["infer_schema", "infer"]


def _leaf_type(col: Column, kind: str | None, binary: bool) -> pa.DataType:
    if kind == INT64_LIST:
        return pa.int64()
    if kind == FLOAT_LIST:
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


def infer(
    ctx: dict[str, Column], fls: dict[str, Column], binary_features: Iterable[str]
) -> pa.Schema:
    """The Arrow schema of collected columns (see :func:`infer_schema`)."""
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
    * A name that is not valid UTF-8 -> skipped, with a logged warning naming it and the first
      record that has it.
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
    _, ctx, fls = collect(records, record_type, sample)
    return infer(ctx, fls, binary_features)
