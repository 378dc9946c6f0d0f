"""``tf.io`` feature specs inferred from sampled records.

The inference itself is TensorFlow-free (:func:`tfrecord_io.example.spec.infer_spec`, which
``tfrecord-io schema`` prints too); this module only turns its result into ``tf.io`` objects.
"""

from __future__ import annotations

import logging
from itertools import islice
from typing import Any

from tfrecord_io.errors import SchemaError
from tfrecord_io.example.spec import infer_spec
from tfrecord_io.tf.runtime import import_tensorflow

__all__ = ["DEFAULT_SAMPLE", "infer_features"]

log = logging.getLogger(__name__)

#: Default number of records :func:`infer_features` looks at to infer a feature spec.
DEFAULT_SAMPLE = 1000


def _sample_records(records: Any, sample: int) -> list[bytes]:
    tf = import_tensorflow()
    if isinstance(records, tf.data.Dataset):
        spec = records.element_spec
        scalar_strings = (
            isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string and spec.shape.rank == 0
        )
        if not scalar_strings:
            raise ValueError(
                f"expected a dataset of scalar tf.string records, not elements {spec}"
            )
        return [r.numpy() for r in records.take(sample)]
    out = []
    for r in islice(records, sample):
        out.append(r.numpy() if hasattr(r, "numpy") else bytes(r))
    return out


def infer_features(records: Any, sample: int = DEFAULT_SAMPLE) -> dict[str, Any]:
    """Infer a ``tf.io`` feature spec from the first *sample* serialized ``tf.train.Example``s.

    The rules are :func:`tfrecord_io.example.spec.infer_spec`'s. The types are
    :func:`tfrecord_io.example.infer_schema`'s: ``int64_list`` -> ``tf.int64``,
    ``float_list`` -> ``tf.float32``, ``bytes_list`` -> ``tf.string``. The shapes:

    * present with the same number of values L in every sampled record:
      ``FixedLenFeature([], dtype)`` for L = 1, ``FixedLenFeature([L], dtype)`` for L > 1;
    * otherwise (lengths vary, absent from some records, or no values):
      ``RaggedFeature(dtype, row_splits_dtype=tf.int64)`` (an absent feature reads as empty).

    A feature that never has a value kind in the sample is left out (with a warning): its type
    is unknown. A record later in the data that breaks the inferred spec (a fixed-length feature
    with another length, or missing) fails parsing: pass an explicit spec when the sample is not
    representative.

    Args:
        records: a dataset of scalar ``tf.string`` records, or an iterable of bytes.
        sample: how many records to look at.

    Raises:
        SchemaError: no records, a record that is not an Example, or a feature whose value
            kind differs between records.
    """
    tf = import_tensorflow()
    if not isinstance(sample, int) or sample < 1:
        raise ValueError(f"sample must be a positive int, not {sample!r}")
    recs = _sample_records(records, sample)
    if not recs:
        raise SchemaError("no records to infer a feature spec from: pass `features`")
    spec = infer_spec(recs, "Example")
    features: dict[str, Any] = {}
    for name, feature in spec.features.items():
        if feature is None:
            log.warning("feature %r has no values in the sampled records: left out", name)
            continue
        dtype = getattr(tf, feature.dtype)
        if feature.shape is None:
            features[name] = tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)
        else:
            features[name] = tf.io.FixedLenFeature(list(feature.shape), dtype)
    return features
