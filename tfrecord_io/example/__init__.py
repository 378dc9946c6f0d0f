"""tf.train.Example and tf.train.SequenceExample without TensorFlow, and their Arrow forms.

Encode and decode the two record formats TensorFlow keeps in TFRecord files, using
tfrecord-io's own protobuf messages (:mod:`tfrecord_io.proto.example_pb2`, wire-compatible with
TensorFlow's, in another proto package so both load in one process), and convert whole batches
of serialized records to and from :class:`pyarrow.Table`.

The package, layer by layer:

* :mod:`~tfrecord_io.example.values`: Python values <-> one serialized record
  (:func:`encode_example`, :func:`decode_example`, and the SequenceExample pair).
* :mod:`~tfrecord_io.example.wire`: protobuf wire primitives on numpy arrays.
* :mod:`~tfrecord_io.example.columns`: a batch of records -> per-feature columns.
* :mod:`~tfrecord_io.example.inference`: the columns' Arrow schema (:func:`infer_schema`).
* :mod:`~tfrecord_io.example.arrow`: records -> :class:`pyarrow.Table` (:func:`to_arrow`).
* :mod:`~tfrecord_io.example.encoder`: :class:`pyarrow.Table` -> records (:func:`from_arrow`).
* :mod:`~tfrecord_io.example.spec`: the feature spec of sampled records (TensorFlow-free),
  shared by :func:`tfrecord_io.tf.infer_features` and ``tfrecord-io schema``.

Every public name is importable from :mod:`tfrecord_io.example` itself.
"""

from __future__ import annotations

from tfrecord_io.example.arrow import to_arrow
from tfrecord_io.example.encoder import from_arrow
from tfrecord_io.example.inference import infer_schema
from tfrecord_io.example.values import (
    FeatureValue,
    RecordBytes,
    Scalar,
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
)

__all__ = [
    "encode_example",
    "decode_example",
    "encode_sequence_example",
    "decode_sequence_example",
    "infer_schema",
    "to_arrow",
    "from_arrow",
    "Scalar",
    "FeatureValue",
    "RecordBytes",
]
