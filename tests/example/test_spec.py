"""tfrecord_io.example.spec: the TensorFlow-free feature spec of sampled records."""

from __future__ import annotations

import numpy as np
import pytest

from tfrecord_io.errors import SchemaError
from tfrecord_io.example import encode_example, encode_sequence_example
from tfrecord_io.example.spec import FeatureSpec, infer_spec
from tfrecord_io.proto import example_pb2


def records() -> list[bytes]:
    out = []
    for i in range(6):
        features = {
            "id": i,
            "vec": np.arange(3, dtype=np.float32) + i,
            "name": f"n{i}",
            "tokens": list(range(i % 3)),  # lengths 0, 1, 2
        }
        if i % 2:
            features["sometimes"] = i
        out.append(encode_example(features))
    return out


def test_fixed_where_every_record_has_the_same_length_else_variable():
    spec = infer_spec(records())
    assert spec.record_type == "Example"
    assert spec.features == {
        "id": FeatureSpec("int64", ()),
        "name": FeatureSpec("string", ()),
        "sometimes": FeatureSpec("int64", None),
        "tokens": FeatureSpec("int64", None),
        "vec": FeatureSpec("float32", (3,)),
    }


def test_a_feature_without_values_has_no_spec():
    empty = example_pb2.Example()
    empty.features.feature["nothing"].SetInParent()  # a Feature with no kind set
    spec = infer_spec([empty.SerializeToString()] * 2, "Example")
    assert spec.features == {"nothing": None}


def test_sequence_examples_are_detected_and_their_steps_specified():
    recs = [
        encode_sequence_example({"len": 2}, {"tok": [[1], [2]], "vec": [[1.0, 2.0], [3.0, 4.0]]}),
        encode_sequence_example({"len": 1}, {"tok": [[3]], "vec": [[5.0, 6.0]], "w": [[b"a"]]}),
    ]
    spec = infer_spec(recs)
    assert spec.record_type == "SequenceExample"
    assert spec.features == {
        "len": FeatureSpec("int64", ()),
        "tok": FeatureSpec("int64", (), sequence=True),
        "vec": FeatureSpec("float32", (2,), sequence=True),
        "w": FeatureSpec("string", (), sequence=True, allow_missing=True),
    }
    assert [name for name in spec.features if spec.is_feature_list(name)] == ["tok", "vec", "w"]


def test_spark_schema_quotes_names_that_need_it():
    recs = [encode_example({"my col": [1, 2], "x": 1.5, "raw": b"\xff"})]
    assert infer_spec(recs).spark_schema == "`my col` ARRAY<BIGINT>, raw BINARY, x FLOAT"


def test_records_that_are_not_examples_are_a_schema_error():
    with pytest.raises(SchemaError):
        infer_spec([b"\xff\xff not an example"], "Example")
