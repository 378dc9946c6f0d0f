"""tfrecord_io.example: encoding and decoding Example / SequenceExample (no TensorFlow here)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tfrecord_io.errors import SchemaError
from tfrecord_io.example import (
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
)
from tfrecord_io.proto import example_pb2

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def roundtrip(features):
    return decode_example(encode_example(features))


def test_scalars_become_one_value_lists():
    got = roundtrip({"i": 7, "f": 1.5, "b": True, "s": "abc", "y": b"\x00\xff"})
    assert got == {"b": [1], "f": [1.5], "i": [7], "s": [b"abc"], "y": [b"\x00\xff"]}


def test_lists_and_tuples():
    got = roundtrip({"i": [1, -2, 3], "f": (0.5, 2.0), "s": ["a", b"b"], "mixed": [1, 2.5]})
    assert got == {"f": [0.5, 2.0], "i": [1, -2, 3], "mixed": [1.0, 2.5], "s": [b"a", b"b"]}


def test_int64_extremes():
    got = roundtrip({"x": [I64_MIN, -1, 0, 1, I64_MAX], "lo": I64_MIN, "hi": I64_MAX})
    assert got == {"hi": [I64_MAX], "lo": [I64_MIN], "x": [I64_MIN, -1, 0, 1, I64_MAX]}


@pytest.mark.parametrize("bad", [2**63, I64_MIN - 1, [1, 2**64]])
def test_int_outside_int64_is_an_error(bad):
    with pytest.raises(SchemaError, match="'big'"):
        encode_example({"big": bad})


def test_nan_and_infinities():
    got = roundtrip({"f": [math.nan, math.inf, -math.inf, -0.0]})["f"]
    assert math.isnan(got[0]) and got[1] == math.inf and got[2] == -math.inf
    assert got[3] == 0.0 and math.copysign(1, got[3]) == -1


def test_floats_are_float32():
    assert roundtrip({"f": 0.1})["f"] == [float(np.float32(0.1))]
    assert roundtrip({"f": 1e300})["f"] == [math.inf]  # beyond float32: infinity
    assert roundtrip({"f": -1e300})["f"] == [-math.inf]


def test_an_int_beyond_float64_in_a_float_list_is_infinity():
    got = roundtrip({"f": [0.5, 10**400, -(10**400), 3]})["f"]
    assert got == [0.5, math.inf, -math.inf, 3.0]


def test_unicode_strings_are_utf8():
    text = "héllo wörld ✓ 日本語 🎉"
    assert roundtrip({"s": text})["s"] == [text.encode("utf-8")]
    assert roundtrip({"ключ": 1}) == {"ключ": [1]}


def test_lone_surrogate_is_an_error():
    with pytest.raises(SchemaError, match="'s'"):
        encode_example({"s": "\ud800"})


def test_lone_surrogate_in_a_feature_name_is_a_schema_error():
    # e.g. a name from os.listdir of a file name that is not UTF-8 (surrogateescape)
    with pytest.raises(SchemaError, match="not encodable as UTF-8"):
        encode_example({"img\udcff": 1})
    with pytest.raises(SchemaError, match="not encodable as UTF-8"):
        encode_sequence_example(None, {"steps\udcff": [[1]]})


def test_none_is_omitted():
    assert roundtrip({"a": None, "b": 1}) == {"b": [1]}


def test_empty_list_has_no_kind():
    data = encode_example({"e": [], "t": ()})
    msg = example_pb2.Example.FromString(data)
    assert msg.features.feature["e"].WhichOneof("kind") is None
    assert "e" in msg.features.feature
    assert decode_example(data) == {"e": [], "t": []}


def test_empty_numpy_array_keeps_its_kind():
    data = encode_example(
        {"i": np.array([], np.int32), "f": np.zeros(0, np.float64), "s": np.array([], "U1")}
    )
    fmap = example_pb2.Example.FromString(data).features.feature
    assert fmap["i"].WhichOneof("kind") == "int64_list"
    assert fmap["f"].WhichOneof("kind") == "float_list"
    assert fmap["s"].WhichOneof("kind") == "bytes_list"
    assert decode_example(data) == {"f": [], "i": [], "s": []}


@pytest.mark.parametrize(
    "array, expected",
    [
        (np.array([True, False]), [1, 0]),
        (np.array([-128, 127], np.int8), [-128, 127]),
        (np.array([-(2**15), 2**15 - 1], np.int16), [-(2**15), 2**15 - 1]),
        (np.array([-(2**31), 2**31 - 1], np.int32), [-(2**31), 2**31 - 1]),
        (np.array([I64_MIN, I64_MAX], np.int64), [I64_MIN, I64_MAX]),
        (np.array([0, 255], np.uint8), [0, 255]),
        (np.array([0, 2**32 - 1], np.uint32), [0, 2**32 - 1]),
        (np.array([0, 2**63 - 1], np.uint64), [0, 2**63 - 1]),
        (np.array([0.5, -2.25], np.float16), [0.5, -2.25]),
        (np.array([0.5, -2.25], np.float32), [0.5, -2.25]),
        (np.array([0.5, -2.25], np.float64), [0.5, -2.25]),
        (np.array(["a", "é"]), [b"a", "é".encode()]),
        (np.array([b"a", b"bc"]), [b"a", b"bc"]),
        (np.array(["x", b"y"], dtype=object), [b"x", b"y"]),
        (np.array([[1, 2], [3, 4]]), [1, 2, 3, 4]),  # flattened in C order
        (np.int64(5), [5]),
        (np.float32(0.5), [0.5]),
        (np.str_("s"), [b"s"]),
        (np.bool_(True), [1]),
        (np.array(3), [3]),  # 0-d
    ],
)
def test_numpy_values(array, expected):
    assert roundtrip({"x": array})["x"] == expected


def test_uint64_overflow_is_an_error():
    with pytest.raises(SchemaError, match="'u'"):
        encode_example({"u": np.array([2**63], np.uint64)})


@pytest.mark.parametrize(
    "value",
    [{"a": 1}, [[1, 2]], [1, "a"], [1, None], object(), np.array([1 + 2j]), {1, 2}, 1 + 2j],
)
def test_unsupported_values_name_the_feature(value):
    with pytest.raises(SchemaError, match="'feat'"):
        encode_example({"feat": value})


def test_non_string_feature_name():
    with pytest.raises(SchemaError):
        encode_example({1: 2})


def test_deterministic_bytes():
    a = encode_example({"b": 1, "a": [1.0], "c": "x"})
    b = encode_example({"c": "x", "a": [1.0], "b": 1})
    assert a == b


def test_empty_example():
    assert encode_example({}) == b"\n\x00"
    assert decode_example(encode_example({})) == {}
    assert decode_example(b"") == {}


def test_decode_numpy():
    data = encode_example({"i": [1, 2], "f": [0.5], "s": ["a", "b"], "e": []})
    got = decode_example(data, numpy=True)
    assert got["i"].dtype == np.int64 and got["i"].tolist() == [1, 2]
    assert got["f"].dtype == np.float32 and got["f"].tolist() == [0.5]
    assert got["s"].dtype == object and got["s"].tolist() == [b"a", b"b"]
    assert got["e"].dtype == object and got["e"].shape == (0,)


def test_decode_accepts_bytes_like():
    data = encode_example({"x": [1, 2]})
    assert decode_example(bytearray(data)) == {"x": [1, 2]}
    assert decode_example(memoryview(data)) == {"x": [1, 2]}


def test_decode_garbage_is_a_schema_error():
    with pytest.raises(SchemaError):
        decode_example(b"\x0a\xff\xff")
    with pytest.raises(SchemaError):
        decode_sequence_example(b"\x0a\x05ab")


def test_sequence_example_roundtrip():
    data = encode_sequence_example(
        {"id": 3, "name": "x"},
        {
            "tokens": [["a", "b"], [], ["c"]],
            "ints": [1, [2, 3], np.array([4, 5, 6])],
            "vec": np.array([[0.5, 1.5], [2.5, 3.5]], np.float32),
            "none": None,
            "zero": [],
        },
    )
    ctx, lists = decode_sequence_example(data)
    assert ctx == {"id": [3], "name": [b"x"]}
    assert lists == {
        "ints": [[1], [2, 3], [4, 5, 6]],
        "tokens": [[b"a", b"b"], [], [b"c"]],
        "vec": [[0.5, 1.5], [2.5, 3.5]],
        "zero": [],
    }
    ctx, lists = decode_sequence_example(data, numpy=True)
    assert ctx["id"].dtype == np.int64
    assert lists["vec"][1].dtype == np.float32 and lists["vec"][1].tolist() == [2.5, 3.5]


def test_sequence_example_without_context():
    ctx, lists = decode_sequence_example(encode_sequence_example(None, {"x": [[1]]}))
    assert ctx == {} and lists == {"x": [[1]]}


@pytest.mark.parametrize("steps", ["abc", b"abc", 5, [1, None]])
def test_bad_feature_lists_name_it(steps):
    with pytest.raises(SchemaError, match="'fl'"):
        encode_sequence_example({}, {"fl": steps})


def test_proto_package_and_fields_match_tensorflow_layout():
    d = example_pb2.DESCRIPTOR
    assert d.package == "tfrecord_io.proto"
    assert d.name == "tfrecord_io/proto/example.proto"
    feature = example_pb2.Feature.DESCRIPTOR
    assert {f.name: f.number for f in feature.fields} == {
        "bytes_list": 1,
        "float_list": 2,
        "int64_list": 3,
    }
    assert example_pb2.Example.DESCRIPTOR.fields_by_name["features"].number == 1
    seq = example_pb2.SequenceExample.DESCRIPTOR.fields_by_name
    assert seq["context"].number == 1 and seq["feature_lists"].number == 2
    for cls in (example_pb2.FloatList, example_pb2.Int64List):
        assert cls.DESCRIPTOR.fields_by_name["value"].GetOptions().packed
