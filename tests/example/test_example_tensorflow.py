"""tfrecord_io.example against real TensorFlow: wire compatibility both ways."""

from __future__ import annotations

import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pyarrow as pa
import tensorflow as tf

from tfrecord_io.example import (
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    from_arrow,
    infer_schema,
    to_arrow,
)
from tfrecord_io.proto import example_pb2

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def parse(records, spec):
    return tf.io.parse_example(tf.constant(records), spec)


def test_both_descriptor_sets_live_in_one_process():
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.Default()
    assert pool.FindMessageTypeByName("tensorflow.Example") is tf.train.Example.DESCRIPTOR
    assert pool.FindMessageTypeByName("tfrecord_io.proto.Example") is example_pb2.Example.DESCRIPTOR
    assert tf.train.Example.DESCRIPTOR.full_name != example_pb2.Example.DESCRIPTOR.full_name
    # and the two messages read each other's bytes
    ours = example_pb2.Example()
    ours.features.feature["x"].int64_list.value.append(1)
    theirs = tf.train.Example.FromString(ours.SerializeToString())
    assert list(theirs.features.feature["x"].int64_list.value) == [1]


def test_encode_example_parses_with_tensorflow():
    text = "héllo ✓ 日本"
    recs = [
        encode_example(
            {"i": I64_MIN, "f": math.nan, "s": text, "v": [0.5, 1.5, 2.5], "t": ["a", "b"]}
        ),
        encode_example(
            {"i": I64_MAX, "f": math.inf, "s": b"\xff", "v": np.array([1, 2, 3], np.float32),
             "t": []}
        ),
        encode_example(
            {"i": 0, "f": -math.inf, "s": "", "v": (7.0, 8.0, 9.0), "t": np.array(["c"])}
        ),
    ]
    out = parse(
        recs,
        {
            "i": tf.io.FixedLenFeature([], tf.int64),
            "f": tf.io.FixedLenFeature([], tf.float32),
            "s": tf.io.FixedLenFeature([], tf.string),
            "v": tf.io.FixedLenFeature([3], tf.float32),
            "t": tf.io.VarLenFeature(tf.string),
        },
    )
    assert out["i"].numpy().tolist() == [I64_MIN, I64_MAX, 0]
    f = out["f"].numpy()
    assert math.isnan(f[0]) and f[1] == math.inf and f[2] == -math.inf
    assert out["s"].numpy().tolist() == [text.encode(), b"\xff", b""]
    assert out["v"].numpy().tolist() == [[0.5, 1.5, 2.5], [1, 2, 3], [7, 8, 9]]
    assert tf.sparse.to_dense(out["t"], default_value=b"").numpy().tolist() == [
        [b"a", b"b"],
        [b"", b""],
        [b"c", b""],
    ]


def test_feature_with_no_kind_parses_as_empty():
    recs = [encode_example({"e": []}), encode_example({"e": [5, 6]})]
    out = parse(recs, {"e": tf.io.VarLenFeature(tf.int64)})
    assert out["e"].values.numpy().tolist() == [5, 6]
    assert out["e"].indices.numpy()[:, 0].tolist() == [1, 1]
    ragged = parse(recs[:1], {"e": tf.io.RaggedFeature(tf.float32)})
    assert ragged["e"].to_list() == [[]]
    ragged = parse(recs[:1], {"e": tf.io.RaggedFeature(tf.string)})
    assert ragged["e"].to_list() == [[]]


def test_from_arrow_parses_with_tensorflow():
    table = pa.table(
        {
            "id": pa.array([1, 2, None], pa.int32()),
            "ok": pa.array([True, False, True]),
            "score": pa.array([0.5, -1.5, 2.0]),
            "name": pa.array(["a", "ü", "long" * 100]),
            "vec": pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.float32(), 2)),
            "tags": pa.array([["x"], [], None]),
            "ts": pa.array([1_000_000, 2, 3], pa.timestamp("us")),
        }
    )
    recs = list(from_arrow(table))
    out = parse(
        recs,
        {
            "id": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
            "ok": tf.io.FixedLenFeature([], tf.int64),
            "score": tf.io.FixedLenFeature([], tf.float32),
            "name": tf.io.FixedLenFeature([], tf.string),
            "vec": tf.io.FixedLenFeature([2], tf.float32),
            "tags": tf.io.RaggedFeature(tf.string),
            "ts": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    assert out["id"].numpy().tolist() == [1, 2, -1]
    assert out["ok"].numpy().tolist() == [1, 0, 1]
    assert out["score"].numpy().tolist() == [0.5, -1.5, 2.0]
    assert out["name"].numpy().tolist() == [b"a", "ü".encode(), b"long" * 100]
    assert out["vec"].numpy().tolist() == [[1, 2], [3, 4], [5, 6]]
    assert out["tags"].to_list() == [[b"x"], [], []]
    assert out["ts"].numpy().tolist() == [1_000_000, 2, 3]


def test_sequence_example_parses_with_tensorflow():
    rec = encode_sequence_example(
        {"id": 7, "lang": "en"},
        {"tokens": [["a", "b"], [], ["c"]], "frames": [[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]]},
    )
    ctx, seq = tf.io.parse_single_sequence_example(
        rec,
        context_features={
            "id": tf.io.FixedLenFeature([], tf.int64),
            "lang": tf.io.FixedLenFeature([], tf.string),
        },
        sequence_features={
            "tokens": tf.io.RaggedFeature(tf.string),
            "frames": tf.io.FixedLenSequenceFeature([2], tf.float32),
        },
    )
    assert ctx["id"].numpy() == 7 and ctx["lang"].numpy() == b"en"
    assert seq["tokens"].to_list() == [[b"a", b"b"], [], [b"c"]]
    assert seq["frames"].numpy().tolist() == [[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]]


def test_sequence_example_from_arrow_parses_with_tensorflow():
    table = pa.table(
        {
            "id": [1],
            "frames": pa.array([[[0.5, 1.5], [2.5, 3.5]]], pa.list_(pa.list_(pa.float32()))),
            "words": pa.array([[["x"], ["y", "z"]]], pa.list_(pa.list_(pa.string()))),
        }
    )
    (rec,) = from_arrow(table, record_type="SequenceExample")
    ctx, seq = tf.io.parse_single_sequence_example(
        rec,
        context_features={"id": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={
            "frames": tf.io.FixedLenSequenceFeature([2], tf.float32),
            "words": tf.io.VarLenFeature(tf.string),
        },
    )
    assert ctx["id"].numpy() == 1
    assert seq["frames"].numpy().tolist() == [[0.5, 1.5], [2.5, 3.5]]
    assert tf.sparse.to_dense(seq["words"], default_value=b"").numpy().tolist() == [
        [b"x", b""],
        [b"y", b"z"],
    ]


def tf_example(**features) -> bytes:
    def feature(v):
        if isinstance(v, list) and v and isinstance(v[0], bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
        if isinstance(v, list) and v and isinstance(v[0], float):
            return tf.train.Feature(float_list=tf.train.FloatList(value=v))
        if isinstance(v, list) and v:
            return tf.train.Feature(int64_list=tf.train.Int64List(value=v))
        return tf.train.Feature()

    ex = tf.train.Example(
        features=tf.train.Features(feature={k: feature(v) for k, v in features.items()})
    )
    return ex.SerializeToString()


def test_tensorflow_records_decode():
    recs = [
        tf_example(i=[I64_MIN], f=[0.25], s=["日本".encode()], b=[b"\xff"], l=[1, 2, 3], e=[]),
        tf_example(i=[I64_MAX], f=[math.inf], s=[b"x"], b=[b"ok"], l=[4]),
        tf_example(i=[0], s=[b""], l=[]),
    ]
    assert decode_example(recs[0]) == {
        "b": [b"\xff"],
        "e": [],
        "f": [0.25],
        "i": [I64_MIN],
        "l": [1, 2, 3],
        "s": ["日本".encode()],
    }
    assert infer_schema(recs) == pa.schema(
        [
            ("b", pa.binary()),
            ("e", pa.null()),
            ("f", pa.float32()),
            ("i", pa.int64()),
            ("l", pa.list_(pa.int64())),
            ("s", pa.string()),
        ]
    )
    table = to_arrow(recs)
    assert table.to_pylist() == [
        {"b": b"\xff", "e": None, "f": 0.25, "i": I64_MIN, "l": [1, 2, 3], "s": "日本"},
        {"b": b"ok", "e": None, "f": math.inf, "i": I64_MAX, "l": [4], "s": "x"},
        {"b": None, "e": None, "f": None, "i": 0, "l": [], "s": ""},
    ]


def test_tensorflow_sequence_examples_decode():
    seq = tf.train.SequenceExample(
        context=tf.train.Features(
            feature={"id": tf.train.Feature(int64_list=tf.train.Int64List(value=[9]))}
        ),
        feature_lists=tf.train.FeatureLists(
            feature_list={
                "w": tf.train.FeatureList(
                    feature=[
                        tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"a"])),
                        tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"b", b"c"])),
                    ]
                )
            }
        ),
    )
    rec = seq.SerializeToString()
    assert decode_sequence_example(rec) == ({"id": [9]}, {"w": [[b"a"], [b"b", b"c"]]})
    table = to_arrow([rec], record_type="SequenceExample")
    assert table.schema == pa.schema([("id", pa.int64()), ("w", pa.list_(pa.list_(pa.string())))])
    assert table.to_pylist() == [{"id": 9, "w": [["a"], ["b", "c"]]}]


def test_single_feature_bytes_identical_to_tensorflow():
    cases = [
        ({"x": 1}, dict(x=[1])),
        ({"x": [I64_MIN, I64_MAX, -1]}, dict(x=[I64_MIN, I64_MAX, -1])),
        ({"x": 0.5}, dict(x=[0.5])),
        ({"x": [1.5, -2.5]}, dict(x=[1.5, -2.5])),
        ({"x": "é"}, dict(x=["é".encode()])),
        ({"x": [b"a", b"\xff" * 200]}, dict(x=[b"a", b"\xff" * 200])),
        ({"x": []}, dict(x=[])),
    ]
    for ours, theirs in cases:
        assert encode_example(ours) == tf_example(**theirs), ours
    table = pa.table({"x": pa.array([[1.5, -2.5]], pa.list_(pa.float32()))})
    assert next(from_arrow(table)) == tf_example(x=[1.5, -2.5])


def test_many_features_bytes_identical_to_deterministic_tensorflow():
    feats = {"b": [b"x"], "a": [1, 2], "c": [0.5], "é": [3]}
    ex = tf.train.Example.FromString(tf_example(**{"b": [b"x"], "a": [1, 2], "c": [0.5]}))
    ex.features.feature["é"].int64_list.value.append(3)
    assert encode_example(feats) == ex.SerializeToString(deterministic=True)
    table = pa.Table.from_pylist([{"a": [1, 2], "b": "x", "c": 0.5, "é": 3}])
    assert next(from_arrow(table)) == ex.SerializeToString(deterministic=True)


def test_a_name_not_utf8_is_skipped_as_tensorflow_skips_it():
    # TensorFlow's parsers read the features asked for of a record that also has a feature
    # whose name is not UTF-8 (protobuf's own parser refuses the whole record); so does to_arrow.
    record = encode_example({"a": [1, 2], "s": "x", "zz": [0.5]})
    record = record.replace(b"\x0a\x02zz", b"\x0a\x02\xff\xfe")
    records = [encode_example({"a": [3], "s": "y"}), record]
    spec = {"a": tf.io.VarLenFeature(tf.int64), "s": tf.io.FixedLenFeature([], tf.string)}
    theirs = parse(records, spec)
    schema = pa.schema([("a", pa.list_(pa.int64())), ("s", pa.binary())])
    ours = to_arrow(records, schema)
    assert ours.column("a").to_pylist() == [[3], [1, 2]]
    assert tf.sparse.to_dense(theirs["a"]).numpy().tolist() == [[3, 0], [1, 2]]
    assert ours.column("s").to_pylist() == theirs["s"].numpy().tolist() == [b"y", b"x"]
    assert infer_schema(records).names == ["a", "s"]


def test_a_sequence_example_name_not_utf8_is_skipped_as_tensorflow_skips_it():
    record = encode_sequence_example({"c": 1, "cx": 2}, {"f": [[1.0], [2.0]], "fx": [[3]]})
    record = record.replace(b"\x0a\x02cx", b"\x0a\x02\xc3\x28")
    record = record.replace(b"\x0a\x02fx", b"\x0a\x02\xe2\x28")
    context, lists = tf.io.parse_single_sequence_example(
        record,
        context_features={"c": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={"f": tf.io.FixedLenSequenceFeature([], tf.float32)},
    )
    schema = pa.schema([("c", pa.int64()), ("f", pa.list_(pa.list_(pa.float32())))])
    ours = to_arrow([record], schema, record_type="SequenceExample")
    assert ours.column("c").to_pylist() == [int(context["c"].numpy())] == [1]
    assert [v for [v] in ours.column("f").to_pylist()[0]] == lists["f"].numpy().tolist()
