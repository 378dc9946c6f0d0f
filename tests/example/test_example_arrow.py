"""tfrecord_io.example: Arrow conversion (infer_schema, to_arrow, from_arrow)."""

from __future__ import annotations

import datetime
import decimal
import math
import random

import numpy as np
import pyarrow as pa
import pytest

import tfrecord_io.example.columns as example_mod
from tfrecord_io.errors import SchemaError
from tfrecord_io.example import (
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    from_arrow,
    infer_schema,
    to_arrow,
)
from tfrecord_io.example.wire import varint_bytes
from tfrecord_io.proto import example_pb2

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@pytest.fixture(params=[True, False], ids=["fast", "protobuf"])
def decoder(request, monkeypatch):
    """Run a test with the bulk numpy decoder and with the per-record protobuf decoder."""
    monkeypatch.setattr(example_mod, "_FAST_PATH", request.param)
    return request.param


# ------------------------------------------------------------------------------- infer_schema


def test_infer_rules(decoder):
    recs = [
        encode_example({"i": 1, "f": 0.5, "s": "a", "b": b"\xff", "il": [1, 2], "sl": ["x"]}),
        encode_example({"i": 2, "f": 1.5, "s": "b", "b": b"ok", "il": [3], "sl": ["y", "z"]}),
        encode_example({"i": 3, "s": "c", "il": [], "only_empty": [], "raw": b"utf8"}),
    ]
    schema = infer_schema(recs, binary_features=["raw"])
    assert schema == pa.schema(
        [
            ("b", pa.binary()),  # not valid UTF-8 somewhere
            ("f", pa.float32()),
            ("i", pa.int64()),
            ("il", pa.list_(pa.int64())),  # lengths 2, 1, 0
            ("only_empty", pa.null()),  # never has a kind
            ("raw", pa.binary()),  # binary_features
            ("s", pa.string()),
            ("sl", pa.list_(pa.string())),
        ]
    )
    assert all(f.nullable for f in schema)


def test_no_kind_does_not_make_a_list(decoder):
    recs = [encode_example({"x": 1}), encode_example({"x": []}), encode_example({})]
    assert infer_schema(recs) == pa.schema([("x", pa.int64())])
    assert to_arrow(recs).column("x").to_pylist() == [1, None, None]


def test_typed_empty_list_makes_a_list(decoder):
    recs = [encode_example({"x": 1}), encode_example({"x": np.array([], np.int64)})]
    assert infer_schema(recs) == pa.schema([("x", pa.list_(pa.int64()))])
    assert to_arrow(recs).column("x").to_pylist() == [[1], []]


def test_conflicting_kinds_name_the_feature(decoder):
    recs = [encode_example({"x": 1}), encode_example({"x": 1.5})]
    with pytest.raises(SchemaError, match="'x'.*float and int64"):
        infer_schema(recs)
    with pytest.raises(SchemaError, match="'x'"):
        to_arrow(recs)
    # not in the given schema: ignored
    assert to_arrow(recs, schema=pa.schema([("y", pa.int64())])).num_rows == 2


def test_sample_limits_the_records_looked_at(decoder):
    recs = [encode_example({"x": 1}), encode_example({"x": [1, 2]})]
    assert infer_schema(recs, sample=1) == pa.schema([("x", pa.int64())])
    assert infer_schema(iter(recs)) == pa.schema([("x", pa.list_(pa.int64()))])
    with pytest.raises(SchemaError, match="'x'.*2 values"):
        to_arrow(recs, schema=infer_schema(recs, sample=1))


def test_sequence_example_schema():
    recs = [
        encode_sequence_example({"id": 1}, {"t": [["a"], ["b", "c"]], "v": [[0.5]]}),
        encode_sequence_example({"id": 2, "tag": "x"}, {"t": []}),
    ]
    schema = infer_schema(recs, record_type="SequenceExample")
    assert schema == pa.schema(
        [
            ("id", pa.int64()),
            ("tag", pa.string()),
            ("t", pa.list_(pa.list_(pa.string()))),
            ("v", pa.list_(pa.list_(pa.float32()))),
        ]
    )
    table = to_arrow(recs, record_type="SequenceExample")
    assert table.to_pylist() == [
        {"id": 1, "tag": None, "t": [["a"], ["b", "c"]], "v": [[0.5]]},
        {"id": 2, "tag": "x", "t": [], "v": None},
    ]


def test_sequence_name_in_context_and_lists_is_an_error():
    rec = encode_sequence_example({"x": 1}, {"x": [[1]]})
    with pytest.raises(SchemaError, match="'x'"):
        infer_schema([rec], record_type="SequenceExample")


def test_bad_record_type():
    with pytest.raises(ValueError):
        infer_schema([], record_type="example")
    with pytest.raises(ValueError):
        from_arrow(pa.table({"a": [1]}), record_type="Sequence")


def test_corrupt_record_is_a_schema_error(decoder):
    with pytest.raises(SchemaError, match="record 1"):
        to_arrow([encode_example({"x": 1}), b"\x0a\xff"])


# ------------------------------------------------------------------------------- to_arrow


def test_to_arrow_values(decoder):
    recs = [
        encode_example({"i": I64_MIN, "f": math.nan, "s": "日本", "l": [1.5, 2.5]}),
        encode_example({"i": I64_MAX, "f": math.inf, "l": []}),
        encode_example({"i": 0, "f": -math.inf, "s": "", "l": np.array([], np.float32)}),
    ]
    table = to_arrow(recs)
    assert table.schema == pa.schema(
        [("f", pa.float32()), ("i", pa.int64()), ("l", pa.list_(pa.float32())), ("s", pa.string())]
    )
    rows = table.to_pylist()
    assert [r["i"] for r in rows] == [I64_MIN, I64_MAX, 0]
    assert math.isnan(rows[0]["f"]) and rows[1]["f"] == math.inf and rows[2]["f"] == -math.inf
    assert [r["s"] for r in rows] == ["日本", None, ""]
    assert [r["l"] for r in rows] == [[1.5, 2.5], [], []]


def test_to_arrow_empty(decoder):
    assert to_arrow([]).num_rows == 0
    table = to_arrow([], schema=pa.schema([("x", pa.int64())]))
    assert table.num_rows == 0 and table.schema.names == ["x"]
    assert to_arrow([b"", b"\n\x00"]).num_rows == 2


def test_to_arrow_accepts_an_arrow_binary_array(decoder):
    recs = pa.array([encode_example({"x": 1}), encode_example({"x": 2})], pa.binary())
    assert to_arrow(recs).column("x").to_pylist() == [1, 2]


@pytest.mark.parametrize(
    "value, arrow_type, expected",
    [
        ([-5], pa.int8(), [-5]),
        ([300, -300], pa.list_(pa.int16()), [[300, -300]]),
        ([2**31 - 1], pa.int32(), [2**31 - 1]),
        ([255], pa.uint8(), [255]),
        ([2**63 - 1], pa.uint64(), [2**63 - 1]),
        ([1, 0, 2], pa.list_(pa.bool_()), [[True, False, True]]),
        ([3], pa.float64(), [3.0]),
        ([0.25], pa.float64(), [0.25]),
        ([0.25], pa.float16(), [0.25]),
        ([19000], pa.date32(), [datetime.date(2022, 1, 8)]),
        ([19000], pa.date64(), [datetime.date(2022, 1, 8)]),
        ([1_500_000], pa.timestamp("us"), [datetime.datetime(1970, 1, 1, 0, 0, 1, 500_000)]),
        ([1_500_000], pa.timestamp("ns"), [datetime.datetime(1970, 1, 1, 0, 0, 1, 500_000)]),
        (
            [3_000_000],
            pa.timestamp("s", "UTC"),
            [datetime.datetime(1970, 1, 1, 0, 0, 3, tzinfo=datetime.timezone.utc)],
        ),
        ([12], pa.decimal128(5, 2), [decimal.Decimal("12.00")]),
        (["-12.50"], pa.decimal128(5, 2), [decimal.Decimal("-12.50")]),
        ([b"\xff\x00"], pa.binary(), [b"\xff\x00"]),
        ([b"ab"], pa.large_binary(), [b"ab"]),
        ([b"ab"], pa.binary(2), [b"ab"]),
        (["é"], pa.large_string(), ["é"]),
        ([1, 2], pa.large_list(pa.int32()), [[1, 2]]),
        ([1, 2], pa.list_(pa.int64(), 2), [[1, 2]]),
        ([], pa.list_(pa.int64()), [[]]),
    ],
)
def test_to_arrow_converts_to_the_schema(decoder, value, arrow_type, expected):
    table = to_arrow([encode_example({"x": value})], schema=pa.schema([("x", arrow_type)]))
    assert table.schema.field("x").type == arrow_type
    assert table.column("x").to_pylist() == expected


@pytest.mark.parametrize(
    "value, arrow_type, match",
    [
        ([1.5], pa.string(), "float values"),  # a float feature where the schema says string
        ([1], pa.string(), "int64 values"),
        (["a"], pa.int64(), "bytes values"),
        ([1.5], pa.int64(), "float values"),
        ([b"\xff"], pa.string(), "UTF-8"),
        ([1, 2], pa.int64(), "2 values"),  # a list where a scalar is required
        (np.array([], np.int64), pa.int64(), "0 values"),
        ([128], pa.int8(), "out of range"),
        ([-1], pa.uint32(), "out of range"),
        ([2**40], pa.date32(), "out of range"),
        ([1, 2, 3], pa.list_(pa.int64(), 2), "3 values"),
        ([b"abc"], pa.binary(2), "3 bytes"),
        (["1.234"], pa.decimal128(5, 2), "'x'"),
        ([1], pa.struct([("a", pa.int64())]), "'x'"),
        ([1], pa.null(), "int64 values"),
    ],
)
def test_to_arrow_mismatch_names_the_feature(decoder, value, arrow_type, match):
    rec = encode_example({"x": value})
    with pytest.raises(SchemaError, match=match) as info:
        to_arrow([rec], schema=pa.schema([("x", arrow_type)]))
    assert "'x'" in str(info.value)


def test_a_decimal_string_with_a_huge_exponent_is_decided_without_arrow_crashing(decoder):
    # Arrow's cast of "1E-10000000" to a decimal crashes the process (a 12-byte feature).
    schema = pa.schema([("x", pa.decimal128(10, 2))])
    for text in ("1E-10000000", "1E99999999", "12345E-99999"):
        with pytest.raises(SchemaError, match=rf"'x': value {text} doesn't fit decimal128"):
            to_arrow([encode_example({"x": [text]})], schema=schema)
    exact = [encode_example({"x": [text]})
             for text in ("0E-99999999", "-15" + "0" * 10_000 + "E-10000")]
    assert to_arrow(exact, schema=schema).column("x").to_pylist() == [
        decimal.Decimal("0.00"), decimal.Decimal("-15.00")]


def test_to_arrow_missing_and_extra_features(decoder):
    recs = [encode_example({"a": 1, "extra": "z"}), encode_example({"b": 2.5})]
    schema = pa.schema([("b", pa.float64()), ("a", pa.int32()), ("nowhere", pa.string())])
    table = to_arrow(recs, schema=schema)
    assert table.schema == schema
    assert table.to_pylist() == [
        {"b": None, "a": 1, "nowhere": None},
        {"b": 2.5, "a": None, "nowhere": None},
    ]


def test_to_arrow_non_nullable_field(decoder):
    recs = [encode_example({"a": 1}), encode_example({})]
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False)])
    with pytest.raises(SchemaError, match="'a'.*not nullable"):
        to_arrow(recs, schema=schema)
    assert to_arrow(recs[:1], schema=schema).column("a").to_pylist() == [1]


def test_to_arrow_list_of_list_needs_sequence_example(decoder):
    with pytest.raises(SchemaError, match="'x'"):
        to_arrow(
            [encode_example({"x": 1})], schema=pa.schema([("x", pa.list_(pa.list_(pa.int64())))])
        )


def test_to_arrow_sequence_example_with_schema():
    recs = [encode_sequence_example({"id": 1}, {"v": [[1, 2], [3]]})]
    schema = pa.schema([("id", pa.int32()), ("v", pa.list_(pa.list_(pa.int16(), 1)))])
    with pytest.raises(SchemaError, match="'v'"):
        to_arrow(recs, schema=schema, record_type="SequenceExample")
    schema = pa.schema([("id", pa.int32()), ("v", pa.large_list(pa.list_(pa.int16())))])
    table = to_arrow(recs, schema=schema, record_type="SequenceExample")
    assert table.to_pylist() == [{"id": 1, "v": [[1, 2], [3]]}]


# ------------------------------------------------------------------------------- from_arrow


def test_from_arrow_type_mapping():
    table = pa.table(
        {
            "bool": pa.array([True, False]),
            "i8": pa.array([-128, 127], pa.int8()),
            "i16": pa.array([1, 2], pa.int16()),
            "i32": pa.array([-(2**31), 2**31 - 1], pa.int32()),
            "i64": pa.array([I64_MIN, I64_MAX], pa.int64()),
            "u8": pa.array([0, 255], pa.uint8()),
            "u16": pa.array([0, 65535], pa.uint16()),
            "u32": pa.array([0, 2**32 - 1], pa.uint32()),
            "u64": pa.array([0, 2**63 - 1], pa.uint64()),
            "f16": pa.array(np.array([0.5, -1], np.float16)),
            "f32": pa.array([1.5, math.nan], pa.float32()),
            "f64": pa.array([math.inf, -math.inf], pa.float64()),
            "str": pa.array(["héllo", ""], pa.string()),
            "lstr": pa.array(["a", "🎉"], pa.large_string()),
            "vstr": pa.array(["v", "w"], pa.string_view()),
            "bin": pa.array([b"\x00\xff", b""], pa.binary()),
            "lbin": pa.array([b"x", b"y"], pa.large_binary()),
            "fbin": pa.array([b"ab", b"cd"], pa.binary(2)),
            "dec": pa.array(
                [decimal.Decimal("1.50"), decimal.Decimal("-0.01")], pa.decimal128(5, 2)
            ),
            "date": pa.array([datetime.date(1970, 1, 2), datetime.date(1969, 12, 31)], pa.date32()),
            "date64": pa.array([datetime.date(2000, 1, 1), None], pa.date64()),
            "ts": pa.array([1, -1], pa.timestamp("us")),
            "ts_ns": pa.array([5000, 0], pa.timestamp("ns", tz="Europe/Paris")),
            "ts_s": pa.array([2, 0], pa.timestamp("s")),
            "dict": pa.array(["a", "b"]).dictionary_encode(),
            "list": pa.array([[1, 2], []], pa.list_(pa.int32())),
            "llist": pa.array([[0.5], [1.5, 2.5]], pa.large_list(pa.float64())),
            "flist": pa.array([[b"a", b"b"], [b"c", b"d"]], pa.list_(pa.binary(), 2)),
            "slist": pa.array([["x"], None], pa.list_(pa.string())),
            "nulls": pa.nulls(2),
        }
    )
    recs = list(from_arrow(table))
    assert len(recs) == 2
    first, second = decode_example(recs[0]), decode_example(recs[1])
    assert first == {
        "bool": [1], "i8": [-128], "i16": [1], "i32": [-(2**31)], "i64": [I64_MIN],
        "u8": [0], "u16": [0], "u32": [0], "u64": [0], "f16": [0.5], "f32": [1.5],
        "f64": [math.inf], "str": ["héllo".encode()], "lstr": [b"a"], "vstr": [b"v"],
        "bin": [b"\x00\xff"], "lbin": [b"x"], "fbin": [b"ab"], "dec": [b"1.50"],
        "date": [1], "date64": [10957], "ts": [1], "ts_ns": [5], "ts_s": [2_000_000],
        "dict": [b"a"], "list": [1, 2], "llist": [0.5], "flist": [b"a", b"b"], "slist": [b"x"],
    }  # fmt: skip
    assert math.isnan(second.pop("f32")[0])
    assert second == {
        "bool": [0], "i8": [127], "i16": [2], "i32": [2**31 - 1], "i64": [I64_MAX],
        "u8": [255], "u16": [65535], "u32": [2**32 - 1], "u64": [2**63 - 1], "f16": [-1.0],
        "f64": [-math.inf], "str": [b""], "lstr": ["🎉".encode()], "vstr": [b"w"],
        "bin": [b""], "lbin": [b"y"], "fbin": [b"cd"], "dec": [b"-0.01"], "date": [-1],
        "ts": [-1], "ts_ns": [0], "ts_s": [0], "dict": [b"b"], "list": [], "llist": [1.5, 2.5],
        "flist": [b"c", b"d"],
    }  # fmt: skip
    # a typed empty list keeps its kind
    msg = example_pb2.Example.FromString(recs[1])
    assert msg.features.feature["list"].WhichOneof("kind") == "int64_list"


def test_from_arrow_float_precision_is_float32():
    (rec,) = from_arrow(pa.table({"f": [0.1]}))
    assert decode_example(rec)["f"] == [float(np.float32(0.1))]
    (rec,) = from_arrow(pa.table({"f": [1e300]}))
    assert decode_example(rec)["f"] == [math.inf]


@pytest.mark.parametrize(
    "column, match",
    [
        (pa.array([{"a": 1}]), "struct"),
        (pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())), "map"),
        (pa.array([datetime.time(1, 2)]), "time"),
        (pa.array([datetime.timedelta(1)]), "duration"),
        (pa.array([[[1]]], pa.list_(pa.list_(pa.int64()))), "nested lists"),
        (pa.array([[{"a": 1}]]), "struct"),
    ],
)
def test_from_arrow_unsupported_types_name_the_column(column, match):
    with pytest.raises(SchemaError, match=match) as info:
        from_arrow(pa.table({"bad": column}))  # raised before any record is produced
    assert "'bad'" in str(info.value)


@pytest.mark.parametrize(
    "column, match",
    [
        (pa.array([2**63], pa.uint64()), "exceeds int64"),
        (pa.array([[1, None]]), "null inside a list"),
        (pa.array([1001], pa.timestamp("ns")), "microseconds"),
    ],
)
def test_from_arrow_bad_values_name_the_column(column, match):
    with pytest.raises(SchemaError, match=match) as info:
        list(from_arrow(pa.table({"bad": column})))
    assert "'bad'" in str(info.value)


def test_from_arrow_nulls_omit_features():
    table = pa.table({"a": [1, None, 3], "s": [None, "x", None], "l": [[1.5], None, []]})
    got = [decode_example(r) for r in from_arrow(table)]
    assert got == [{"a": [1], "l": [1.5]}, {"s": [b"x"]}, {"a": [3], "l": []}]


def test_from_arrow_equals_encode_example_bytes():
    rows = [
        {"id": 1, "name": "a", "vec": [0.5, 1.5], "tags": ["x", "y"], "big": I64_MIN},
        {"id": 2, "name": None, "vec": [], "tags": ["z" * 300], "big": I64_MAX},
        {
            "id": None,
            "name": "日本語",
            "vec": [float(i) for i in range(100)],
            "tags": None,
            "big": -1,
        },
    ]
    table = pa.Table.from_pylist(rows)
    expected = []
    for row in rows:
        feats = {k: v for k, v in row.items()}
        if feats["vec"] == []:
            feats["vec"] = np.array([], np.float64)  # Arrow knows the type of an empty list
        expected.append(encode_example(feats))
    assert list(from_arrow(table)) == expected


def test_from_arrow_inputs_and_batches():
    table = pa.table({"x": list(range(10)), "s": [str(i) for i in range(10)]})
    expected = [encode_example(r) for r in table.to_pylist()]
    assert list(from_arrow(table, batch_size=3)) == expected
    assert list(from_arrow(table.to_batches()[0])) == expected
    assert list(from_arrow(table.to_pandas())) == expected
    assert list(from_arrow(table.slice(4, 3))) == expected[4:7]
    chunked = pa.Table.from_batches([table.slice(i, 1).to_batches()[0] for i in range(10)])
    assert list(from_arrow(chunked)) == expected
    assert list(from_arrow(table.slice(0, 0))) == []
    with pytest.raises(TypeError):
        from_arrow([{"x": 1}])


def test_from_arrow_sliced_nested_arrays():
    col = pa.array([[b"a"], None, [b"bc", b"d"], [], [b"e"]])
    table = pa.table({"l": col}).slice(1)
    assert [decode_example(r) for r in from_arrow(table)] == [
        {},
        {"l": [b"bc", b"d"]},
        {"l": []},
        {"l": [b"e"]},
    ]


def test_from_arrow_duplicate_columns():
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(SchemaError, match="'a'"):
        from_arrow(table)


def test_from_arrow_list_of_lists_needs_sequence_example():
    table = pa.table({"seq": pa.array([[[1, 2], [3]]])})
    with pytest.raises(SchemaError, match="'seq'"):
        from_arrow(table)


def test_from_arrow_sequence_example():
    table = pa.table(
        {
            "id": [1, 2, 3],
            "tokens": pa.array(
                [[["a", "b"], [], ["c"]], None, []], pa.list_(pa.list_(pa.string()))
            ),
            "vec": pa.array([[[0.5, 1.5]], [[2.5]], None], pa.list_(pa.list_(pa.float32()))),
            "flat": pa.array([[1, 2], [3], None]),
        }
    )
    recs = list(from_arrow(table, record_type="SequenceExample"))
    assert decode_sequence_example(recs[0]) == (
        {"flat": [1, 2], "id": [1]},
        {"tokens": [[b"a", b"b"], [], [b"c"]], "vec": [[0.5, 1.5]]},
    )
    assert decode_sequence_example(recs[1]) == ({"flat": [3], "id": [2]}, {"vec": [[2.5]]})
    assert decode_sequence_example(recs[2]) == ({"id": [3]}, {"tokens": []})
    expected = encode_sequence_example(
        {"id": 1, "flat": [1, 2]},
        {
            "tokens": [["a", "b"], np.array([], "U1"), ["c"]],
            "vec": [np.array([0.5, 1.5], np.float32)],
        },
    )
    assert recs[0] == expected
    back = to_arrow(recs, schema=table.schema, record_type="SequenceExample")
    assert back.equals(table)


def test_from_arrow_sequence_null_step_is_an_error():
    table = pa.table({"s": pa.array([[[1], None]], pa.list_(pa.list_(pa.int64())))})
    with pytest.raises(SchemaError, match="'s'"):
        list(from_arrow(table, record_type="SequenceExample"))


# ------------------------------------------------------------------------------- round trips


ROUNDTRIP_TABLE = pa.table(
    {
        "bool": pa.array([True, None, False]),
        "i8": pa.array([-128, 127, None], pa.int8()),
        "i16": pa.array([None, -(2**15), 2**15 - 1], pa.int16()),
        "i32": pa.array([-(2**31), 0, 2**31 - 1], pa.int32()),
        "i64": pa.array([I64_MIN, I64_MAX, 0], pa.int64()),
        "u8": pa.array([0, 255, 1], pa.uint8()),
        "u32": pa.array([2**32 - 1, 0, None], pa.uint32()),
        "u64": pa.array([2**63 - 1, 0, 1], pa.uint64()),
        "f16": pa.array(np.array([0.5, np.inf, -2], np.float16)),
        "f32": pa.array([math.nan, math.inf, -math.inf], pa.float32()),
        # exact in float32 only when representable
        "f64": pa.array([0.25, None, -1e30], pa.float64()),
        "str": pa.array(["", "héllo ✓", "🎉" * 50]),
        "lstr": pa.array(["a", None, "b"], pa.large_string()),
        "bin": pa.array([b"\xff\xfe", b"", None]),
        "fbin": pa.array([b"abc", b"def", b"ghi"], pa.binary(3)),
        "dec": pa.array(
            [decimal.Decimal("123.45"), None, decimal.Decimal("-0.01")], pa.decimal128(10, 2)
        ),
        "date": pa.array([datetime.date(2024, 2, 29), datetime.date(1900, 1, 1), None]),
        "ts": pa.array(
            [datetime.datetime(2024, 1, 1, 12, 0, 0, 123456), None, datetime.datetime(1960, 1, 1)]
        ),
        "tsz": pa.array([0, 10**13, -(10**12)], pa.timestamp("ms", tz="UTC")),
        "list_i": pa.array([[1, 2, 3], [], None], pa.list_(pa.int64())),
        "list_f": pa.array([[0.5] * 200, [1.5], []], pa.list_(pa.float32())),
        "list_s": pa.array([["a", "b"], None, ["x" * 1000]], pa.list_(pa.string())),
        "fsl": pa.array([[1, 2], [3, 4], None], pa.list_(pa.int32(), 2)),
        "llist": pa.array([[b"a"], [b"b", b"c"], []], pa.large_list(pa.binary())),
    }
)


def test_arrow_roundtrip_every_type(decoder):
    recs = list(from_arrow(ROUNDTRIP_TABLE))
    back = to_arrow(recs, schema=ROUNDTRIP_TABLE.schema)
    expected = ROUNDTRIP_TABLE.set_column(
        ROUNDTRIP_TABLE.schema.get_field_index("f64"),
        "f64",
        pa.array([0.25, None, float(np.float32(-1e30))], pa.float64()),
    )
    assert back.schema == expected.schema
    for name in expected.column_names:
        want, got = expected.column(name).to_pylist(), back.column(name).to_pylist()
        if name == "f32":
            assert math.isnan(got[0]) and got[1:] == want[1:]
        else:
            assert got == want, name


def test_arrow_roundtrip_inferred_schema(decoder):
    table = pa.table(
        {
            "i": pa.array([1, None, I64_MIN]),
            "f": pa.array([0.5, 1.5, None], pa.float32()),
            "s": pa.array(["a", "日本", None]),
            "b": pa.array([b"\xff", None, b"x"]),
            "li": pa.array([[1], [2, 3], None]),
            "ls": pa.array([["a"], ["b", "c"], []]),
        }
    )
    back = to_arrow(list(from_arrow(table)))
    assert back.schema == pa.schema(
        [
            ("b", pa.binary()),
            ("f", pa.float32()),
            ("i", pa.int64()),
            ("li", pa.list_(pa.int64())),
            ("ls", pa.list_(pa.string())),
            ("s", pa.string()),
        ]
    )
    assert back.equals(table.select(back.schema.names))


def test_arrow_roundtrip_sequence_example():
    table = pa.table(
        {
            "ctx": pa.array([1, None]),
            "frames": pa.array([[[0.5, 1.5], [2.5]], [[]]], pa.list_(pa.list_(pa.float32()))),
            "words": pa.array([None, [["a"], ["b", "c"]]], pa.list_(pa.list_(pa.string()))),
        }
    )
    recs = list(from_arrow(table, record_type="SequenceExample"))
    assert to_arrow(recs, record_type="SequenceExample").equals(table)


# ------------------------------------------------------------------------------- decoders agree


def _random_value(rng: random.Random, kind: str):
    length = rng.choice([0, 1, 1, 1, 2, 5, 130])
    if kind == "int":
        pool = [0, 1, -1, 127, 128, 300, 2**31, I64_MIN, I64_MAX, -(2**40)]
        values = [rng.choice(pool) for _ in range(length)]
        return np.array(values, np.int64) if length == 0 else values
    if kind == "float":
        pool = [0.0, -0.0, 1.5, math.inf, -math.inf, 3.25e10]
        return np.array([rng.choice(pool) for _ in range(length)], np.float32)
    pool = [b"", b"a", "é".encode(), b"x" * 200, b"\xff\xfe"]
    return (
        np.array([rng.choice(pool) for _ in range(length)], dtype=object)
        if length
        else np.array([], "S1")
    )


def test_fast_and_protobuf_decoders_agree(monkeypatch):
    rng = random.Random(7)
    names = ["a", "b", "ключ", "x" * 150, "z"]
    kinds = {name: rng.choice(["int", "float", "bytes"]) for name in names}
    recs = []
    for _ in range(300):
        feats = {}
        for name in names:
            r = rng.random()
            if r < 0.15:
                continue  # missing
            feats[name] = [] if r < 0.25 else _random_value(rng, kinds[name])
        recs.append(encode_example(feats))
    recs.append(b"")
    fast = to_arrow(recs)
    assert example_mod._collect_example_fast(recs) is not None
    monkeypatch.setattr(example_mod, "_FAST_PATH", False)
    slow = to_arrow(recs)
    assert fast.equals(slow)
    assert fast.num_rows == len(recs)


def _entry(key: bytes, feature: bytes) -> bytes:
    body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
    return b"\x0a" + bytes([len(body)]) + body


def _example(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return b"\x0a" + bytes([len(body)]) + body


@pytest.mark.parametrize(
    "record, expected",
    [
        # unpacked int64s (tag 0x08 per value)
        (_example(_entry(b"x", b"\x1a\x04\x08\x01\x08\x02")), [1, 2]),
        # a name twice in one record: the last one wins, as in a protobuf map
        (
            _example(_entry(b"x", b"\x1a\x03\x0a\x01\x01"), _entry(b"x", b"\x1a\x03\x0a\x01\x05")),
            [5],
        ),
        # an unknown field in the Example
        (_example(_entry(b"x", b"\x1a\x03\x0a\x01\x07")) + b"\x10\x01", [7]),
        # the map entry's value before its key
        (b"\x0a\x0c\x0a\x0a\x12\x05\x1a\x03\x0a\x01\x09\x0a\x01x", [9]),
        # Features split over two fields (merged)
        (_example(_entry(b"y", b"")) + _example(_entry(b"x", b"\x1a\x03\x0a\x01\x03")), [3]),
        # unpacked floats (tag 0x0d)
        (_example(_entry(b"x", b"\x12\x05\x0d\x00\x00\xc0\x3f")), [1.5]),
    ],
)
def test_non_canonical_encodings_decode_via_protobuf(decoder, record, expected):
    assert example_mod._collect_example_fast([record]) is None
    assert decode_example(record)["x"] == expected
    got = to_arrow([record, encode_example({"x": expected})]).column("x").to_pylist()
    assert got[0] == got[1]


_NEGATIVE_ONE = b"\xff" * 9 + b"\x01"  # a 10-byte varint: -1 as an int64


def _length_delimited(tag: int, payload: bytes) -> bytes:
    return bytes([tag]) + varint_bytes(len(payload)) + payload


def _negative_key_length_pointing_back() -> bytes:
    """An Example whose second map entry's key length is -k (a 10-byte varint), k chosen so
    that the key would end inside the first entry's bytes value, on bytes laid out as a Feature
    there: read without checking the sign, they made a feature named '' with made-up values."""
    for k in range(1, 60):
        second = bytes([0x0A, 11, 0x0A]) + varint_bytes((1 << 64) - k)
        payload = b"\x05" + second
        hidden = (b"\x12" + varint_bytes(len(payload) + 4) + b"\x1a"
                  + varint_bytes(len(payload) + 2) + b"\x0a" + varint_bytes(len(payload)) + b"\x05")
        first = _length_delimited(0x0A, _length_delimited(0x0A, b"a") + _length_delimited(
            0x12, _length_delimited(0x0A, _length_delimited(0x0A, hidden))))
        body = first + second
        if len(body) - k == len(first) - len(hidden):
            return _length_delimited(0x0A, body)
    raise AssertionError("no k lays the key over the hidden Feature")


@pytest.mark.parametrize(
    "record",
    [
        # a packed int64 list whose last varint is unfinished, before another int64 list: read
        # as one stream, the two ran together (a: [5], b: [129] instead of an error)
        _example(_entry(b"a", b"\x1a\x04\x0a\x02\x05\x81"), _entry(b"b", b"\x1a\x03\x0a\x01\x01")),
        # ... and the same across two records of one batch
        _example(_entry(b"a", b"\x1a\x03\x0a\x01\x81")),
        # a key length of -1: the key ended before it began
        _example(b"\x0a\x10\x0a" + _NEGATIVE_ONE + b"\x12\x03\x1a\x01\x00"),
        _negative_key_length_pointing_back(),
    ],
    ids=["unfinished-varint", "unfinished-varint-last", "negative-key-length",
         "negative-key-length-pointing-back"],
)
def test_malformed_records_are_schema_errors_not_values(decoder, record):
    batch = [record, _example(_entry(b"b", b"\x1a\x03\x0a\x01\x01"))]
    with pytest.raises(SchemaError, match="record 0"):
        to_arrow(batch)
    with pytest.raises(SchemaError):
        decode_example(record)


def test_a_decimal_string_of_more_digits_than_arrow_holds_is_refused_not_wrapped(decoder):
    # Arrow's cast wraps such a number around: 10**128 read as 0.00, 2**64 + 5 as 5.
    cases = [("1" + "0" * 128, pa.decimal128(10, 2)),
             ("18446744073709551621", pa.decimal64(18, 0))]
    for text, t in cases:
        with pytest.raises(SchemaError, match=r"'x': value 1[0-9.]* .*doesn't fit"):
            to_arrow([encode_example({"x": [text]})], schema=pa.schema([("x", t)]))


def test_a_decimal_string_whose_scale_is_far_from_the_types_is_decided_exactly(decoder):
    # Arrow's cast reads these as 0.00 (a rescale past its table of powers of ten).
    schema = pa.schema([("x", pa.decimal128(10, 2))])
    for text in ("1E-41", "0.5E-40", "0." + "0" * 40 + "1"):
        with pytest.raises(SchemaError, match=r"'x': value .* doesn't fit decimal128"):
            to_arrow([encode_example({"x": [text]})], schema=schema)
    exact = [encode_example({"x": ["1" + "0" * 50 + "E-50"]})]
    assert to_arrow(exact, schema=schema).column("x").to_pylist() == [decimal.Decimal("1.00")]


def test_a_decimal_string_with_millions_of_fraction_digits_is_decided_without_arrow_crashing(
    decoder,
):
    # Arrow's cast of "0.000...001" (ten million zeros) crashes the process.
    schema = pa.schema([("x", pa.decimal128(10, 2))])
    rec = encode_example({"x": ["0." + "0" * 10_000_000 + "1"]})
    with pytest.raises(SchemaError, match=r"'x': value 0\.0+\.\.\.0+1 \(10000003 chars\)"):
        to_arrow([rec], schema=schema)


def test_a_decimal_type_whose_scale_arrow_cannot_rescale_to_is_refused(decoder):
    schema = pa.schema([("x", pa.decimal128(10, -50))])
    for value in (0, "0"):
        with pytest.raises(SchemaError, match=r"'x': decimal128\(10, -50\) has a scale"):
            to_arrow([encode_example({"x": value})], schema=schema)


def test_an_error_arrow_raises_quotes_a_long_value_shortened(decoder):
    # Arrow's message quotes the string whole: a 10 MB value made a 10 MB error message.
    rec = encode_example({"x": ["1" * 10_000_000 + "x"]})
    with pytest.raises(SchemaError, match=r"'x': can't convert .*\.\.\..* chars\)") as info:
        to_arrow([rec], schema=pa.schema([("x", pa.decimal128(10, 2))]))
    assert len(str(info.value)) < 400


def test_from_arrow_omits_a_cell_whose_dictionary_value_is_null():
    # dictionary_encode(null_encoding="encode") keeps a null in the dictionary behind a valid
    # index: it was written as a value (b"", INT64_MIN, NaN) instead of omitted.
    strings = pa.array(["a", None, "b"]).dictionary_encode(null_encoding="encode")
    ints = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()), pa.array([None, 7]))
    recs = list(from_arrow(pa.table({"s": strings, "i": ints})))
    assert [decode_example(r) for r in recs] == [
        {"i": [7], "s": [b"a"]}, {}, {"i": [7], "s": [b"b"]}]


def test_from_arrow_refuses_a_null_dictionary_value_inside_a_list():
    values = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array([None, 1.5]))
    column = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), values)
    with pytest.raises(SchemaError, match=r"column 'x': a null inside a list"):
        list(from_arrow(pa.table({"x": column})))
