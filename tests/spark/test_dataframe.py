"""DataFrames as TFRecord Examples/SequenceExamples through the jar's JVM codec, on real
executors: round trips of every supported type, TensorFlow agreeing with what is written and
what is read, schema inference, partitioned output, raw byte records, compression, and errors.
The tests on ``any_spark`` run on a Spark Connect client too: save_dataframe and load_dataframe
keep their contract there (through the jar's data sources, on the Connect server).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf
from pyspark.ml.linalg import DenseVector, SparseVector, Vectors, VectorUDT
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from tfrecord_io import example as ex
from tfrecord_io import spark as tfs
from tfrecord_io.errors import SchemaError
from tfrecord_io.spark import load_dataframe, save_dataframe

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UNICODE = ["héllo wörld", "日本語のテキスト", "emoji 🎉🚀", "", "nul\x00inside", "ascii"]


def data_files(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.rglob("part-*") if not p.name.endswith(".crc"))


def to_arrow(df) -> pa.Table:
    """``df.toArrow()``; pyspark 3.5 (make test-spark35) lacks it, but has the collector behind
    it."""
    if hasattr(type(df), "toArrow"):
        return df.toArrow()
    return pa.Table.from_batches(df._collect_as_arrow())


def records_of(directory: Path, compression: str = "") -> list[bytes]:
    files = data_files(directory)
    return [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type=compression)]


def f32(x: float) -> float:
    return float(np.float32(x))


def field_types(df) -> dict:
    return {f.name: f.dataType for f in df.schema.fields}


def nullability(df) -> dict:
    return {f.name: f.nullable for f in df.schema.fields}


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------

ALL_TYPES = StructType(
    [
        StructField("id", LongType(), False),
        StructField("bool", BooleanType()),
        StructField("byte", ByteType()),
        StructField("short", ShortType()),
        StructField("int", IntegerType()),
        StructField("long", LongType()),
        StructField("float", FloatType()),
        StructField("double", DoubleType()),
        StructField("string", StringType()),
        StructField("binary", BinaryType()),
        StructField("decimal", DecimalType(12, 3)),
        StructField("date", DateType()),
        StructField("timestamp", TimestampType()),
        StructField("timestamp_ntz", TimestampNTZType()),
        StructField("bools", ArrayType(BooleanType())),
        StructField("bytes_", ArrayType(ByteType())),
        StructField("shorts", ArrayType(ShortType())),
        StructField("ints", ArrayType(IntegerType())),
        StructField("longs", ArrayType(LongType())),
        StructField("floats", ArrayType(FloatType())),
        StructField("doubles", ArrayType(DoubleType())),
        StructField("strings", ArrayType(StringType())),
        StructField("binaries", ArrayType(BinaryType())),
        StructField("decimals", ArrayType(DecimalType(12, 3))),
        StructField("dates", ArrayType(DateType())),
        StructField("timestamps", ArrayType(TimestampType())),
        StructField("vector", VectorUDT()),
    ]
)


def all_types_rows() -> list[tuple]:
    ts = dt.datetime(2024, 2, 29, 23, 59, 58, 123456)
    return [
        (
            1, True, 127, 32767, 2**31 - 1, INT64_MAX, 1.5, 0.25, "héllo 🎉", b"\x00\xff\x80",
            Decimal("-123456789.125"), dt.date(2024, 2, 29), ts, ts,
            [True, False], [-128, 0, 127], [-32768, 32767], [-(2**31), 2**31 - 1],
            [INT64_MIN, 0, INT64_MAX], [1.0, -2.5, float("inf")], [0.5, -0.125],
            UNICODE, [b"", b"\xff\xfe", b"abc"], [Decimal("0.001"), Decimal("-1.000")],
            [dt.date(1970, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31)],
            [dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)],
            DenseVector([1.0, 2.5, -3.0]),
        ),
        (
            2, False, -128, -32768, -(2**31), INT64_MIN, float("-inf"), float("nan"), "", b"",
            Decimal("0.000"), dt.date(1, 1, 1), dt.datetime(1800, 1, 1, 12),
            dt.datetime(9999, 12, 31),
            [], [], [], [], [], [], [], [], [], [], [], [],
            SparseVector(5, {1: 2.0, 4: -1.0}),
        ),
        (3,) + (None,) * (len(ALL_TYPES.fields) - 1),
    ]


def normalize(row) -> tuple:
    """Comparable form of a row: NaN made equal to itself, vectors as lists."""

    def norm(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, (DenseVector, SparseVector)):
            return [float(x) for x in v.toArray()]
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, bytearray):
            return bytes(v)
        return v

    return tuple(norm(v) for v in row)


def test_every_supported_type_round_trips_with_its_schema(any_spark, tmp_path):
    df = any_spark.createDataFrame(all_types_rows(), ALL_TYPES)
    save_dataframe(df, tmp_path / "out")
    back = load_dataframe(any_spark, tmp_path / "out", schema=ALL_TYPES)
    assert back.schema == ALL_TYPES
    assert sorted(map(normalize, back.collect())) == sorted(map(normalize, df.collect()))


@pytest.mark.parametrize("java8_api", ["true", "false"])
def test_dates_and_timestamps_with_either_datetime_api(spark, tmp_path, java8_api):
    """Rows hold java.time or java.sql values as spark.sql.datetime.java8API.enabled says."""
    key = "spark.sql.datetime.java8API.enabled"
    saved = spark.conf.get(key)
    spark.conf.set(key, java8_api)
    try:
        schema = "d date, ts timestamp, p date"
        df = spark.createDataFrame([
            (dt.date(2020, 5, 17), dt.datetime(1850, 3, 4, 5, 6, 7, 890), dt.date(1500, 1, 1)),
            (dt.date(1582, 10, 4), dt.datetime(2038, 1, 19, 3, 14, 8), dt.date(2000, 2, 29)),
            (None, None, None),
        ], schema)
        save_dataframe(df, tmp_path / "out", partition_by=["p"])
        assert (tmp_path / "out" / "p=1500-01-01").is_dir()
        back = load_dataframe(spark, tmp_path / "out", schema=schema)
        assert sorted(back.collect(), key=str) == sorted(df.collect(), key=str)
    finally:
        spark.conf.set(key, saved)


def test_doubles_are_stored_as_float32(spark, tmp_path):
    values = [0.1, 1 / 3, 1e300, -1e-300, 123456789.123]
    df = spark.createDataFrame([(v,) for v in values], "d double")
    save_dataframe(df.coalesce(1), tmp_path / "out")
    back = load_dataframe(spark, tmp_path / "out", schema="d double").collect()
    assert [r.d for r in back] == [f32(v) for v in values]
    assert back[2].d == math.inf and back[3].d == -0.0


def test_inferred_schema_of_saved_dataframe(spark, tmp_path):
    df = spark.createDataFrame(all_types_rows()[:2], ALL_TYPES)
    save_dataframe(df, tmp_path / "out")
    back = load_dataframe(spark, tmp_path / "out")
    types = field_types(back)
    assert list(types) == sorted(types)
    assert types["int"] == LongType() and types["bool"] == LongType()
    assert types["double"] == FloatType() and types["string"] == StringType()
    assert types["binary"] == BinaryType()  # b"\x00\xff\x80" is not UTF-8
    assert types["decimal"] == StringType()
    assert types["date"] == LongType() and types["timestamp"] == LongType()
    # Lists of length 1 in every record would be scalars; these vary, so arrays.
    assert types["longs"] == ArrayType(LongType(), False)
    assert types["vector"] == ArrayType(FloatType(), False)
    assert types["strings"] == ArrayType(StringType(), False)
    # Present in every record -> not nullable.
    assert not any(nullability(back).values())
    row = {r.id: r for r in back.collect()}
    assert row[1].decimal == "-123456789.125"
    assert row[1].date == (dt.date(2024, 2, 29) - dt.date(1970, 1, 1)).days
    assert row[2].vector == [0.0, 2.0, 0.0, 0.0, -1.0]
    assert row[1].strings == UNICODE


def test_sequence_example_round_trip(spark, tmp_path):
    schema = StructType(
        [
            StructField("id", LongType()),
            StructField("label", StringType()),
            StructField("tokens", ArrayType(ArrayType(StringType()))),
            StructField("ids", ArrayType(ArrayType(LongType()))),
            StructField("frames", ArrayType(ArrayType(FloatType()))),
            StructField("embeddings", ArrayType(VectorUDT())),
        ]
    )
    rows = [
        (1, "a", [["x", "ÿ"], [], ["z"]], [[1, 2], [INT64_MIN]], [[0.5]],
         [Vectors.dense([1.0, 2.0]), Vectors.sparse(3, {2: 1.0})]),
        (2, None, [], [[]], None, []),
        (3, "c", None, None, [[1.0, 2.0, 3.0], []], None),
    ]
    df = spark.createDataFrame(rows, schema)
    save_dataframe(df, tmp_path / "out", record_type="SequenceExample")
    back = load_dataframe(spark, tmp_path / "out", schema=schema, record_type="SequenceExample")
    assert sorted(map(normalize, back.collect())) == sorted(map(normalize, df.collect()))

    inferred = load_dataframe(spark, tmp_path / "out", record_type="SequenceExample")
    assert list(field_types(inferred).items()) == [
        ("id", LongType()),
        ("label", StringType()),
        ("embeddings", ArrayType(ArrayType(FloatType(), False), False)),
        ("frames", ArrayType(ArrayType(FloatType(), False), False)),
        ("ids", ArrayType(ArrayType(LongType(), False), False)),
        ("tokens", ArrayType(ArrayType(StringType(), False), False)),
    ]
    assert nullability(inferred) == {
        "id": False, "label": True, "embeddings": True, "frames": True, "ids": True,
        "tokens": True,
    }


def test_an_output_path_with_a_comma_is_one_path(spark, tmp_path):
    out = tmp_path / "day=2024-01-01,2024-01-02"
    save_dataframe(spark.range(3).coalesce(1), out)
    assert (out / "_SUCCESS").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_a_comma_list_holding_a_brace_glob_reads_every_path(spark, tmp_path):
    for name in ("a", "b", "c", "d"):
        save_dataframe(spark.createDataFrame([(name,)], "name string"), tmp_path / name)
    loaded = load_dataframe(spark, f"{tmp_path}/a,{tmp_path}/{{b,c}}")
    assert sorted(row.name for row in loaded.collect()) == ["a", "b", "c"]


def test_a_list_of_paths_reads_each(spark, tmp_path):
    for name in ("a", "b", "c"):
        save_dataframe(spark.createDataFrame([(name,)], "name string"), tmp_path / name)
    loaded = load_dataframe(spark, [tmp_path / "a", f"{tmp_path}/{{c}}"], "name string")
    assert sorted(row.name for row in loaded.collect()) == ["a", "c"]


def test_an_input_path_hadoop_cannot_name_is_a_value_error(spark):
    # "a:b" reads as the scheme "a" of a relative path: Hadoop refuses it.
    with pytest.raises(ValueError, match=r"'a:b' is not a path Hadoop can name.*Relative path"):
        load_dataframe(spark, "a:b")


def test_records_are_byte_identical_to_the_python_codec(spark, tmp_path):
    """The JVM encoder and tfrecord_io.example.from_arrow write the very same bytes."""
    columns = [f.name for f in ALL_TYPES.fields if f.name != "vector"]  # Arrow has no vectors
    df = spark.createDataFrame(all_types_rows(), ALL_TYPES).select(*columns).coalesce(1)
    save_dataframe(df, tmp_path / "out")
    ours = records_of(tmp_path / "out")
    theirs = list(ex.from_arrow(to_arrow(df)))
    assert sorted(ours) == sorted(theirs)

    seq = spark.createDataFrame(
        [(1, [[1, 2], []], ["a"]), (2, None, []), (3, [], None)],
        "n long, steps array<array<long>>, words array<string>",
    ).coalesce(1)
    save_dataframe(seq, tmp_path / "seq", record_type="SequenceExample")
    theirs = list(ex.from_arrow(to_arrow(seq), record_type="SequenceExample"))
    assert sorted(records_of(tmp_path / "seq")) == sorted(theirs)


def test_inference_agrees_with_the_python_codec(spark, tmp_path):
    records = [
        ex.encode_example({"a": 1, "b": [1.0, 2.0], "c": "x", "d": b"\xff", "e": []}),
        ex.encode_example({"a": 2, "b": [3.0], "c": "yy", "f": ["p", "q"]}),
    ]
    tfs.save_records(spark.sparkContext.parallelize(records, 2), str(tmp_path / "out"))
    arrow = ex.infer_schema(records)
    spark_types = field_types(load_dataframe(spark, tmp_path / "out"))
    to_spark = {"int64": LongType(), "float": FloatType(), "string": StringType(),
                "binary": BinaryType(), "null": NullType()}

    def convert(t):
        import pyarrow as pa

        if pa.types.is_list(t):
            return ArrayType(convert(t.value_type), False)
        return to_spark[str(t)]

    assert spark_types == {f.name: convert(f.type) for f in arrow}


# ---------------------------------------------------------------------------------------------
# TensorFlow reads what we write, we read what TensorFlow writes
# ---------------------------------------------------------------------------------------------


def test_tensorflow_parses_saved_examples(spark, tmp_path):
    df = spark.createDataFrame(
        [
            (1, INT64_MAX, 0.5, "héllo", b"\x00\x01", [1.0, 2.0], ["a", "b", "c"], True,
             dt.date(1970, 1, 11), Decimal("1.50")),
            (2, INT64_MIN, float("nan"), "日本", b"", [], [], False, dt.date(1969, 12, 31),
             Decimal("-0.25")),
            (3, 0, float("-inf"), "", b"\xff", [float("inf")], ["🎉"], None, None, None),
        ],
        "id long, big long, x double, s string, raw binary, fl array<float>, "
        "words array<string>, flag boolean, day date, price decimal(5,2)",
    ).coalesce(1)
    save_dataframe(df, tmp_path / "out")
    features = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "big": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([], tf.float32),
        "s": tf.io.FixedLenFeature([], tf.string),
        "raw": tf.io.FixedLenFeature([], tf.string),
        "fl": tf.io.VarLenFeature(tf.float32),
        "words": tf.io.VarLenFeature(tf.string),
        "flag": tf.io.VarLenFeature(tf.int64),
        "day": tf.io.VarLenFeature(tf.int64),
        "price": tf.io.VarLenFeature(tf.string),
    }
    parsed = tf.io.parse_example(records_of(tmp_path / "out"), features)
    order = np.argsort(parsed["id"].numpy())
    assert parsed["id"].numpy()[order].tolist() == [1, 2, 3]
    assert parsed["big"].numpy()[order].tolist() == [INT64_MAX, INT64_MIN, 0]
    x = parsed["x"].numpy()[order]
    assert x[0] == 0.5 and math.isnan(x[1]) and x[2] == -math.inf
    assert [v.decode() for v in parsed["s"].numpy()[order]] == ["héllo", "日本", ""]
    assert parsed["raw"].numpy()[order].tolist() == [b"\x00\x01", b"", b"\xff"]
    dense = {k: tf.sparse.to_dense(parsed[k]).numpy()[order] for k in ("fl", "flag", "day")}
    assert dense["fl"][0].tolist() == [1.0, 2.0] and dense["fl"][2][0] == math.inf
    words = tf.sparse.to_dense(parsed["words"], default_value=b"").numpy()[order]
    assert [list(w[w != b""]) for w in words] == [[b"a", b"b", b"c"], [], ["🎉".encode()]]
    flag_sizes = tf.sparse.to_dense(tf.sparse.map_values(tf.ones_like, parsed["flag"]))
    assert flag_sizes.numpy()[order].sum(axis=1).tolist() == [1, 1, 0]  # null -> absent
    assert dense["flag"][:2, 0].tolist() == [1, 0]
    assert dense["day"][:2, 0].tolist() == [10, -1]
    prices = tf.sparse.to_dense(parsed["price"], default_value=b"").numpy()[order]
    assert prices[:, 0].tolist() == [b"1.50", b"-0.25", b""]


def test_tensorflow_parses_saved_sequence_examples(spark, tmp_path):
    df = spark.createDataFrame(
        [(7, "ctx ü", [[1, 2], [3], []], [[0.5, 1.5], [-2.0]], [["a"], ["b", "c"]])],
        "id long, name string, ids array<array<long>>, vals array<array<double>>, "
        "toks array<array<string>>",
    )
    save_dataframe(df.coalesce(1), tmp_path / "out", record_type="SequenceExample")
    [record] = records_of(tmp_path / "out")
    context, lists = tf.io.parse_single_sequence_example(
        record,
        context_features={
            "id": tf.io.FixedLenFeature([], tf.int64),
            "name": tf.io.FixedLenFeature([], tf.string),
        },
        sequence_features={
            "ids": tf.io.RaggedFeature(tf.int64),
            "vals": tf.io.RaggedFeature(tf.float32),
            "toks": tf.io.RaggedFeature(tf.string),
        },
    )
    assert context["id"].numpy() == 7 and context["name"].numpy().decode() == "ctx ü"
    assert lists["ids"].to_list() == [[1, 2], [3], []]
    assert lists["vals"].to_list() == [[0.5, 1.5], [-2.0]]
    assert lists["toks"].to_list() == [[b"a"], [b"b", b"c"]]


def tf_example(**features) -> bytes:
    # None: the feature is present with no kind set.
    feature = {k: tf.train.Feature() if v is None else v for k, v in features.items()}
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def ints(*v):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(v)))


def floats(*v):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(v)))


def byts(*v):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(v)))


def write_tf(path: Path, records, compression: str = "") -> None:
    with tf.io.TFRecordWriter(str(path), options=compression or None) as writer:
        for r in records:
            writer.write(r)


def test_examples_written_by_tensorflow_load_with_the_inferred_schema(spark, tmp_path):
    (tmp_path / "tf").mkdir()
    write_tf(tmp_path / "tf" / "a.tfrecord", [
        tf_example(label=ints(1), score=floats(0.5), name=byts("ünï".encode()),
                   tags=byts(b"x", b"y"), emb=floats(1, 2, 3), raw=byts(b"\xff\x00"),
                   maybe=ints(5), empty=None, big=ints(INT64_MAX)),
        tf_example(label=ints(0), score=floats(float("nan")), name=byts(b""),
                   tags=byts(b"z"), emb=floats(), raw=byts(b"ok"), empty=None,
                   big=ints(INT64_MIN)),
    ])
    write_tf(tmp_path / "tf" / "b.tfrecord", [
        tf_example(label=ints(1), score=floats(float("inf")), name=byts("日本".encode()),
                   tags=byts(), emb=floats(4), raw=byts(b""), maybe=None, big=ints(0)),
    ])
    df = load_dataframe(spark, tmp_path / "tf")
    assert df.schema == StructType([
        StructField("big", LongType(), False),
        StructField("emb", ArrayType(FloatType(), False), False),
        StructField("empty", NullType(), True),
        StructField("label", LongType(), False),
        StructField("maybe", LongType(), True),
        StructField("name", StringType(), False),
        StructField("raw", BinaryType(), False),
        StructField("score", FloatType(), False),
        StructField("tags", ArrayType(StringType(), False), False),
    ])
    rows = sorted(df.collect(), key=lambda r: r.big)
    assert [r.big for r in rows] == [INT64_MIN, 0, INT64_MAX]
    assert [r.emb for r in rows] == [[], [4.0], [1.0, 2.0, 3.0]]
    assert [r.maybe for r in rows] == [None, None, 5]
    assert [r.name for r in rows] == ["", "日本", "ünï"]
    assert [r.raw for r in rows] == [b"ok", b"", b"\xff\x00"]
    assert math.isnan(rows[0].score) and rows[1].score == math.inf and rows[2].score == 0.5
    assert [r.tags for r in rows] == [["z"], [], ["x", "y"]]
    assert [r.empty for r in rows] == [None, None, None]

    typed = load_dataframe(spark, tmp_path / "tf", binary_features=["name"])
    assert field_types(typed)["name"] == BinaryType()
    assert sorted(r.name for r in typed.collect()) == sorted([b"", "日本".encode(), "ünï".encode()])


def test_sequence_examples_written_by_tensorflow_load(spark, tmp_path):
    def seq(ctx, lists):
        return tf.train.SequenceExample(
            context=tf.train.Features(feature=ctx),
            feature_lists=tf.train.FeatureLists(feature_list={
                k: tf.train.FeatureList(feature=v) for k, v in lists.items()
            }),
        ).SerializeToString()

    write_tf(tmp_path / "s.tfrecord", [
        seq({"len": ints(2)}, {"tok": [byts(b"a"), byts(b"b", b"c")], "w": [floats(0.5)]}),
        seq({"len": ints(0)}, {"tok": [], "w": [floats(), tf.train.Feature()]}),
    ])
    df = load_dataframe(spark, tmp_path / "s.tfrecord", record_type="SequenceExample")
    assert field_types(df) == {
        "len": LongType(),
        "tok": ArrayType(ArrayType(StringType(), False), False),
        "w": ArrayType(ArrayType(FloatType(), False), False),
    }
    rows = sorted(df.collect(), key=lambda r: r.len)
    assert [r.tok for r in rows] == [[], [["a"], ["b", "c"]]]
    assert [r.w for r in rows] == [[[], []], [[0.5]]]


def test_decoder_accepts_unpacked_numbers_and_merges_repeated_fields(spark, tmp_path):
    """Protobuf parsing rules: non-packed repeated numbers, unknown fields, duplicate keys."""

    def varint(v):
        v &= (1 << 64) - 1
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)

    def ld(tag, payload):
        return bytes([tag]) + varint(len(payload)) + payload

    unpacked_ints = ld(0x1A, b"\x08" + varint(5) + b"\x08" + varint(-1))  # Int64List, wt 0
    unpacked_floats = ld(0x12, b"\x0d" + np.float32(2.5).tobytes() + b"\x0d"
                         + np.float32(-1).tobytes())
    entry = lambda k, f: ld(0x0A, ld(0x0A, k) + ld(0x12, f))  # noqa: E731 - a one-line helper
    features = (
        entry(b"i", unpacked_ints)
        + entry(b"f", unpacked_floats)
        + entry(b"d", ld(0x1A, ld(0x0A, varint(1))))  # replaced by the next "d"
        + entry(b"d", ld(0x1A, ld(0x0A, varint(2))))
    )
    plain = ld(0x0A, features)
    parsed = tf.io.parse_single_example(plain, {
        "i": tf.io.VarLenFeature(tf.int64), "f": tf.io.VarLenFeature(tf.float32),
        "d": tf.io.FixedLenFeature([], tf.int64)})
    assert parsed["i"].values.numpy().tolist() == [5, -1] and parsed["d"].numpy() == 2
    # Unknown fields (TensorFlow's fast parser refuses them; protobuf skips them).
    record = ld(0x0A, features + b"\x18\x07") + ld(0x52, b"junk")
    assert ex.decode_example(record) == {"i": [5, -1], "f": [2.5, -1.0], "d": [2]}
    write_tf(tmp_path / "x.tfrecord", [record])
    [row] = load_dataframe(spark, tmp_path / "x.tfrecord").collect()
    assert row.asDict() == {"d": 2, "f": [2.5, -1.0], "i": [5, -1]}


# ---------------------------------------------------------------------------------------------
# Nulls, empty lists, special values
# ---------------------------------------------------------------------------------------------


def test_nulls_empty_lists_unicode_nan_infinities_and_int64_extremes(any_spark, tmp_path):
    rows = [
        (0, INT64_MIN, float("nan"), UNICODE[0], [], None),
        (1, INT64_MAX, float("inf"), UNICODE[1], [INT64_MIN, INT64_MAX], [float("-inf")]),
        (2, None, float("-inf"), UNICODE[2], None, []),
        (3, -1, None, UNICODE[3], [0], [float("nan"), 0.0, -0.0]),
        (4, 0, -0.0, UNICODE[4], [], [1.0]),
        (5, 1, 3.4028234663852886e38, None, [1, 2], None),
    ]
    schema = "id long, n long, x float, s string, ns array<long>, xs array<float>"
    df = any_spark.createDataFrame(rows, schema)
    save_dataframe(df, tmp_path / "out")
    for back in (load_dataframe(any_spark, tmp_path / "out", schema=schema),
                 load_dataframe(any_spark, tmp_path / "out").select(*df.columns)):
        got = sorted(back.collect(), key=lambda r: r.id)
        assert [normalize(r) for r in got] == [normalize(r) for r in df.orderBy("id").collect()]
        assert math.copysign(1, got[4].x) == -1.0  # negative zero kept
    inferred = load_dataframe(any_spark, tmp_path / "out")
    assert nullability(inferred) == {"id": False, "n": True, "ns": True, "s": True, "x": True,
                                     "xs": True}
    # An empty list is a feature with a kind and no values: arrays, not null.
    assert field_types(inferred)["ns"] == ArrayType(LongType(), False)


def test_null_cells_omit_features(spark, tmp_path):
    df = spark.createDataFrame([(1, None, None)], "a long, b string, c array<long>")
    save_dataframe(df, tmp_path / "out")
    [record] = records_of(tmp_path / "out")
    assert ex.decode_example(record) == {"a": [1]}


def test_column_of_type_null_is_not_written(spark, tmp_path):
    df = spark.createDataFrame([(1,)], "a long").withColumn("nothing", F.lit(None))
    assert field_types(df)["nothing"] == NullType()
    save_dataframe(df, tmp_path / "out")
    [record] = records_of(tmp_path / "out")
    assert ex.decode_example(record) == {"a": [1]}


def test_null_inside_an_array_fails_naming_the_column(any_spark, tmp_path):
    df = any_spark.createDataFrame([([1, None],)], "vals array<long>")
    with pytest.raises(SchemaError, match=r"column 'vals': a null inside a list has no TFRecord "
                       r"form: drop the nulls \(array_compact\) or replace them first"):
        save_dataframe(df, tmp_path / "out")
    assert not (tmp_path / "out" / "_SUCCESS").exists()
    assert not data_files(tmp_path / "out")
    # Partitioned: the good partition's files are not published either.
    parted = any_spark.createDataFrame([(1, [1]), (2, [2, None])], "p int, vals array<long>")
    with pytest.raises(SchemaError, match=r"column 'vals': a null inside a list"):
        save_dataframe(parted.coalesce(1), tmp_path / "parted", partition_by=["p"])
    assert not data_files(tmp_path / "parted")


def test_a_row_without_tfrecord_form_is_named_by_its_place_in_the_tasks_file(spark, tmp_path):
    # (A Spark 3.5 Connect server abbreviates the message of a task's failure: classic only.)
    df = spark.createDataFrame([([1],), ([1, None],)], "vals array<long>").coalesce(1)
    with pytest.raises(SchemaError, match=r"first \(row 2 of the task's file "
                       r"part-00000-\S+\.tfrecord\)$"):
        save_dataframe(df, tmp_path / "out")


def test_a_save_that_fails_leaves_no_directory_and_can_be_run_again(any_spark, tmp_path):
    # The committer made the directory before the tasks ran; the failed job must not leave it,
    # or the same call would be refused as FileExistsError once the data is fixed.
    bad = any_spark.createDataFrame([([1],), ([None],)], "a array<long>").repartition(2)
    with pytest.raises(SchemaError, match=r"column 'a': a null inside a list"):
        save_dataframe(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    save_dataframe(any_spark.createDataFrame([([1],), ([2],)], "a array<long>"), tmp_path / "out")
    loaded = load_dataframe(any_spark, tmp_path / "out", "a array<long>")
    assert sorted(r.a for r in loaded.collect()) == [[1], [2]]
    # Partitioned: no partition directory is left either.
    parted = any_spark.createDataFrame([(1, [1]), (2, [2, None])], "p int, vals array<long>")
    with pytest.raises(SchemaError, match=r"column 'vals': a null inside a list"):
        save_dataframe(parted.coalesce(1), tmp_path / "parted", partition_by=["p"])
    assert not (tmp_path / "parted").exists()
    good = any_spark.createDataFrame([(1, [1]), (2, [2])], "p int, vals array<long>")
    save_dataframe(good, tmp_path / "parted", partition_by=["p"])
    assert load_dataframe(any_spark, tmp_path / "parted").count() == 2


def test_a_refused_existing_directory_is_left_as_it_was(spark, tmp_path):
    # Even holding only what a committer leaves: it was there before the call.
    (tmp_path / "o" / "_temporary").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="already exists"):
        save_dataframe(spark.createDataFrame([(1,)], "a long"), tmp_path / "o")
    assert (tmp_path / "o" / "_temporary").is_dir()


# ---------------------------------------------------------------------------------------------
# Schema errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ddl, column, type_name",
    [
        ("ok long, m map<string,int>", "m", "map<string,int>"),
        ("ok long, st struct<a:int>", "st", "struct<a:int>"),
        ("ok long, nested array<array<long>>", "nested", "array<array<bigint>>"),
        ("ok long, deep array<array<array<long>>>", "deep", "array<array<array<bigint>>>"),
    ],
)
def test_unsupported_column_raises_before_any_task(spark, tmp_path, ddl, column, type_name):
    df = spark.createDataFrame([], ddl)
    sc = spark.sparkContext
    sc.setJobGroup("schema-check", "no job expected")
    try:
        with pytest.raises(
            SchemaError, match=rf"column '{column}' has type {re.escape(type_name)}"
        ):
            record_type = "SequenceExample" if column == "deep" else "Example"
            save_dataframe(df, tmp_path / "out", record_type=record_type)
        assert list(sc.statusTracker().getJobIdsForGroup("schema-check")) == []
    finally:
        sc.setJobGroup("", "")
    assert not (tmp_path / "out").exists()


def test_bad_given_schema_type_raises_at_once(any_spark, tmp_path):
    df = any_spark.createDataFrame([(1,)], "a long")
    save_dataframe(df, tmp_path / "out")
    with pytest.raises(SchemaError, match="field 'a' has type map<string,bigint>"):
        load_dataframe(any_spark, tmp_path / "out", schema="a map<string, long>")
    with pytest.raises(SchemaError, match="lists of lists have no Example form"):
        load_dataframe(any_spark, tmp_path / "out", schema="a array<array<long>>")


@pytest.mark.parametrize(
    "schema, message",
    [
        ("s long", r"feature 's' holds bytes values, which can't be read as bigint"),
        ("n string", r"feature 'n' holds int64 values, which can't be read as string"),
        ("f int", r"feature 'f' holds float values, which can't be read as int"),
        ("n int", r"feature 'n': value 9223372036854775807 is out of range for int"),
        ("l long", r"feature 'l' has 2 values in a record, but its type bigint holds exactly one"),
        ("raw string", r"feature 'raw' has values that are not valid UTF-8"),
        ("s decimal(5,2)", r"feature 's': 'abc' is not a decimal number"),
        ("n long not null, missing long not null", r"feature 'missing' is missing"),
    ],
)
def test_mismatched_schema_fails_naming_the_feature(spark, tmp_path, schema, message):
    df = spark.createDataFrame(
        [("abc", INT64_MAX, 1.5, [1, 2], b"\xff")], "s string, n long, f float, l array<long>, "
        "raw binary")
    save_dataframe(df, tmp_path / "out")
    loaded = load_dataframe(spark, tmp_path / "out", schema=schema)
    with pytest.raises(Exception, match=message):
        loaded.collect()


def test_conflicting_kinds_raise_schema_error(spark, tmp_path):
    records = [ex.encode_example({"x": 1}), ex.encode_example({"x": "one"})]
    tfs.save_records(spark.sparkContext.parallelize(records, 2), str(tmp_path / "out"))
    with pytest.raises(SchemaError, match=r"feature 'x' has conflicting kinds across records: "
                                          r"bytes and int64"):
        load_dataframe(spark, tmp_path / "out")


def test_unparseable_record_raises_schema_error(spark, tmp_path):
    tfs.save_records(spark.sparkContext.parallelize([b"\x0a\x05ab"], 1), str(tmp_path / "out"))
    with pytest.raises(SchemaError, match="not a valid Example"):
        load_dataframe(spark, tmp_path / "out")


def test_bad_arguments(any_spark, tmp_path):
    df = any_spark.createDataFrame([(1,)], "a long")
    with pytest.raises(ValueError, match="record_type"):
        save_dataframe(df, tmp_path / "o", record_type="Examples")
    with pytest.raises(ValueError, match="compression"):
        save_dataframe(df, tmp_path / "o", compression="lz4")
    with pytest.raises(ValueError, match="sample"):
        load_dataframe(any_spark, tmp_path, sample=0)
    with pytest.raises(FileNotFoundError):
        load_dataframe(any_spark, tmp_path / "does-not-exist")
    with pytest.raises(SchemaError, match="partition column 'nope'"):
        save_dataframe(df, tmp_path / "o", partition_by=["nope"])


def test_an_existing_path_is_refused_as_file_exists_saying_what_to_do(any_spark, tmp_path):
    # Not Spark's "Set mode as overwrite", which save_dataframe has no argument for.
    df = any_spark.createDataFrame([(1,)], "a long")
    save_dataframe(df, tmp_path / "o")
    with pytest.raises(FileExistsError, match=r"o already exists: .*\.mode\('overwrite'\)"):
        save_dataframe(df, tmp_path / "o")
    assert load_dataframe(any_spark, tmp_path / "o").count() == 1


# ---------------------------------------------------------------------------------------------
# Partitions, ByteArray, sampling, compression
# ---------------------------------------------------------------------------------------------


def test_partitioned_output_round_trip(any_spark, tmp_path):
    rows = [
        (
            i,
            f"v{i}",
            ["a/b", "x=y", "sp ace", "ü", None, ""][i % 6],
            2020 + i % 2,
            [float(i)] * (i % 3),
        )
        for i in range(60)
    ]
    df = any_spark.createDataFrame(rows,
                                   "id long, val string, kind string, year int, xs array<float>")
    save_dataframe(df.repartition(3), tmp_path / "out", partition_by=["year", "kind"])
    dirs = {
        str(p.relative_to(tmp_path / "out").parent) for p in map(Path, data_files(tmp_path / "out"))
    }
    assert dirs == {
        f"year={y}/kind={k}"
        for y, k in [(2020, "a%2Fb"), (2021, "x%3Dy"), (2020, "sp ace"), (2021, "ü"),
                     (2020, "__HIVE_DEFAULT_PARTITION__"), (2021, "__HIVE_DEFAULT_PARTITION__")]
    }
    assert (tmp_path / "out" / "_SUCCESS").exists()
    # Partition columns are not stored in the records.
    first = records_of(tmp_path / "out")[0]
    assert set(ex.decode_example(first)) == {"id", "val", "xs"}

    back = load_dataframe(any_spark, tmp_path / "out")
    assert back.columns == ["id", "val", "xs", "year", "kind"]
    assert field_types(back)["year"] == IntegerType()
    assert field_types(back)["kind"] == StringType()
    got = sorted((r.id, r.val, r.kind, r.year, r.xs) for r in back.collect())
    expected = [(i, v, None if k == "" else k, y, xs) for i, v, k, y, xs in rows]
    assert got == expected

    with_schema = load_dataframe(any_spark, tmp_path / "out",
                                 schema="year long, id int, val string")
    assert with_schema.columns == ["year", "id", "val", "kind"]
    assert field_types(with_schema)["year"] == LongType()
    assert with_schema.filter("year = 2021 and kind = 'ü'").count() == 10

    # TensorFlow reads the partition files as plain TFRecord files.
    assert len(records_of(tmp_path / "out")) == 60


def test_load_dataframe_reads_only_the_partitions_a_filter_selects(spark, tmp_path):
    rows = [(i, 2020 + i % 4, f"r{i % 3}") for i in range(80)]
    df = spark.createDataFrame(rows, "id long, year int, region string")
    save_dataframe(df.repartition(2), tmp_path / "out", partition_by=["year"])
    back = load_dataframe(spark, tmp_path / "out")

    got = sorted(r.id for r in back.filter("year = 2021").select("id").collect())
    assert got == [i for i, y, _ in rows if y == 2021]
    scan = spark.read.format("org.tfrecordio.spark.source.ReadMetricsSource").load().first()
    assert scan.read == 20  # the files of year=2021 only

    # Conditions partly on data columns, negated or alternative, still select exactly.
    query = "not (year = 2021 and id > 40) and (region = 'r1' or year in (2022, 2023))"
    got = sorted(r.id for r in back.filter(query).collect())
    assert got == [i for i, y, r in rows
                   if not (y == 2021 and i > 40) and (r == "r1" or y in (2022, 2023))]


def test_partition_value_types_are_inferred(any_spark, tmp_path):
    df = any_spark.createDataFrame(
        [(1, 10, 2**40, 1.5, "007", True), (2, -3, 5, 2.0, "8", False)],
        "id long, i int, l long, d double, s string, b boolean",
    )
    save_dataframe(df, tmp_path / "out", partition_by=["i", "l", "d", "s", "b"])
    back = load_dataframe(any_spark, tmp_path / "out")
    assert field_types(back) == {
        "id": LongType(), "i": IntegerType(), "l": LongType(), "d": DoubleType(),
        "s": StringType(), "b": StringType(),
    }
    assert sorted(tuple(r) for r in back.collect()) == [
        (1, 10, 2**40, 1.5, "007", "true"), (2, -3, 5, 2.0, "8", "false")]


def test_partitioned_sequence_examples(any_spark, tmp_path):
    df = any_spark.createDataFrame([(1, "a", [[1], [2, 3]]), (2, "b", [])],
                               "id long, part string, steps array<array<long>>")
    save_dataframe(df, tmp_path / "out", record_type="SequenceExample", partition_by=["part"])
    back = load_dataframe(any_spark, tmp_path / "out", record_type="SequenceExample")
    assert sorted(tuple(r) for r in back.collect()) == [(1, [[1], [2, 3]], "a"), (2, [], "b")]


def test_conflicting_partition_directories_raise(any_spark, tmp_path):
    df = any_spark.createDataFrame([(1, "a")], "id long, p string")
    save_dataframe(df, tmp_path / "t" / "p=a", partition_by=None)
    save_dataframe(df, tmp_path / "t" / "q=b", partition_by=None)
    with pytest.raises(SchemaError, match="conflicting directory structure"):
        load_dataframe(any_spark, tmp_path / "t")


def save_split_by_underscore_column(spark, out):
    """A tree partitioned by ``_split`` (directories ``_split=train``), as save_dataframe
    writes it, and its rows."""
    rows = [(i, "train" if i % 2 else "test") for i in range(10)]
    save_dataframe(spark.createDataFrame(rows, "id long, _split string"), out,
                   partition_by=["_split"])
    assert {p.name for p in out.iterdir() if p.is_dir()} == {"_split=train", "_split=test"}
    return rows


def test_load_dataframe_leaves_out_a_file_being_copied(any_spark, tmp_path):
    # `hadoop fs -put` writes NAME._COPYING_ until the copy is whole: inference read it
    save_dataframe(any_spark.createDataFrame([(1,)], "id long"), tmp_path / "out")
    (tmp_path / "out" / "part-9.tfrecord._COPYING_").write_bytes(b"half a file")
    back = load_dataframe(any_spark, tmp_path / "out")
    assert [tuple(r) for r in back.collect()] == [(1,)]


def test_a_partition_column_whose_name_starts_with_an_underscore_is_inferred(spark, tmp_path):
    rows = save_split_by_underscore_column(spark, tmp_path / "out")
    back = load_dataframe(spark, tmp_path / "out")
    assert back.columns == ["id", "_split"]
    assert sorted(tuple(r) for r in back.collect()) == rows


def test_a_partition_column_whose_name_starts_with_an_underscore_is_read_by_a_schema(
        spark, tmp_path):
    rows = save_split_by_underscore_column(spark, tmp_path / "out")
    back = load_dataframe(spark, tmp_path / "out", schema="id long, _split string")
    assert back.columns == ["id", "_split"]
    assert sorted(tuple(r) for r in back.collect()) == rows


def test_a_partition_directory_whose_name_starts_with_an_underscore_is_read_when_given(
        spark, tmp_path):
    rows = save_split_by_underscore_column(spark, tmp_path / "out")
    back = load_dataframe(spark, tmp_path / "out" / "_split=train")
    assert sorted(r.id for r in back.collect()) == [i for i, s in rows if s == "train"]


def test_a_feature_named_as_a_partition_column_in_another_case_is_refused(spark, tmp_path):
    df = spark.createDataFrame([(1, 1999)], "id long, Year long")
    save_dataframe(df, tmp_path / "t" / "year=2024")
    with pytest.raises(SchemaError, match="feature 'Year' has the name of a partition column; "
                                          "rename one of them"):
        load_dataframe(spark, tmp_path / "t")


def test_a_feature_named_as_a_partition_column_in_another_case_is_read_when_case_matters(
        spark, tmp_path):
    df = spark.createDataFrame([(1, 1999)], "id long, Year long")
    save_dataframe(df, tmp_path / "t" / "year=2024")
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        back = load_dataframe(spark, tmp_path / "t")
        assert back.columns == ["Year", "id", "year"]
        assert [tuple(r) for r in back.collect()] == [(1999, 1, 2024)]
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


def test_partition_by_names_a_column_in_another_case(spark, tmp_path):
    df = spark.createDataFrame([(1, "x"), (2, "y")], "id long, Year string")
    save_dataframe(df, tmp_path / "out", partition_by=["year"])
    back = load_dataframe(spark, tmp_path / "out")
    assert sorted(tuple(r) for r in back.collect()) == [(1, "x"), (2, "y")]
    records = records_of(tmp_path / "out")
    assert [set(ex.decode_example(r)) for r in records] == [{"id"}, {"id"}]


def test_byte_array_round_trip(any_spark, tmp_path):
    payloads = [b"", b"\x00\x01\xff", "ü".encode(), os.urandom(1000)]
    df = any_spark.createDataFrame([(p,) for p in payloads], "payload binary")
    save_dataframe(df, tmp_path / "out", record_type="ByteArray")
    assert sorted(records_of(tmp_path / "out")) == sorted(payloads)
    back = load_dataframe(any_spark, tmp_path / "out", record_type="ByteArray")
    assert back.schema == StructType([StructField("byte_array", BinaryType(), False)])
    assert sorted(r.byte_array for r in back.collect()) == sorted(payloads)

    with pytest.raises(SchemaError, match="ByteArray"):
        save_dataframe(df.withColumn("x", F.lit(1)), tmp_path / "bad", record_type="ByteArray")

    parted = any_spark.createDataFrame([(b"a", 1), (b"b", 2)], "data binary, p int")
    save_dataframe(parted, tmp_path / "parted", record_type="ByteArray", partition_by=["p"])
    back = load_dataframe(any_spark, tmp_path / "parted", record_type="ByteArray")
    assert sorted(tuple(r) for r in back.collect()) == [(b"a", 1), (b"b", 2)]


def test_sample_inference_reads_a_fraction_of_the_splits(any_spark, tmp_path):
    (tmp_path / "in").mkdir()
    write_tf(tmp_path / "in" / "a.tfrecord", [tf_example(x=ints(1), y=floats(1.0))] * 20)
    write_tf(tmp_path / "in" / "b.tfrecord", [tf_example(x=byts(b"one"), y=floats(2.0))] * 20)
    # All records: x's kinds conflict.
    with pytest.raises(SchemaError, match="conflicting kinds"):
        load_dataframe(any_spark, tmp_path / "in")
    # Half the splits: one file, so one kind; every field nullable.
    sampled = load_dataframe(any_spark, tmp_path / "in", sample=0.5)
    assert field_types(sampled)["y"] == FloatType()
    assert field_types(sampled)["x"] in (LongType(), StringType())
    assert all(nullability(sampled).values())

    full = any_spark.createDataFrame([(i, float(i)) for i in range(200)], "a long, b double")
    save_dataframe(full.repartition(8), tmp_path / "many")
    sampled = load_dataframe(any_spark, tmp_path / "many", sample=0.25)
    assert field_types(sampled) == {"a": LongType(), "b": FloatType()}
    assert sampled.count() == 200
    assert not any(nullability(load_dataframe(any_spark, tmp_path / "many")).values())


@pytest.mark.parametrize("compression, tf_type, suffix",
                         [("gzip", "GZIP", ".tfrecord.gz"), ("zlib", "ZLIB", ".tfrecord.deflate")])
def test_compressed_round_trip(any_spark, tmp_path, compression, tf_type, suffix):
    df = any_spark.createDataFrame([(i, f"s{i}", [i, i + 1]) for i in range(100)],
                               "id long, s string, l array<long>")
    save_dataframe(df.repartition(2), tmp_path / "out", compression=compression)
    files = data_files(tmp_path / "out")
    assert files and all(f.endswith(suffix) for f in files)
    assert len(records_of(tmp_path / "out", tf_type)) == 100
    back = load_dataframe(any_spark, tmp_path / "out", schema=df.schema)
    assert sorted(back.collect()) == sorted(df.collect())

    save_dataframe(df, tmp_path / "parted", compression=compression,
                   partition_by=["id"] if compression == "zlib" else None)
    assert load_dataframe(any_spark, tmp_path / "parted").count() == 100


def test_record_type_and_compression_are_taken_in_any_case(spark, tmp_path):
    payloads = [b"a", b"\x00\xff", b""]
    df = spark.createDataFrame([(p,) for p in payloads], "payload binary")
    save_dataframe(df.coalesce(1), tmp_path / "out", record_type="bytearray",
                   compression="Deflate")
    files = data_files(tmp_path / "out")
    assert len(files) == 1 and files[0].endswith(".tfrecord.deflate")
    assert sorted(records_of(tmp_path / "out", "ZLIB")) == sorted(payloads)
    back = load_dataframe(spark, tmp_path / "out", record_type="BYTEARRAY")
    assert sorted(r.byte_array for r in back.collect()) == sorted(payloads)


def test_conf_values_may_be_bools_and_ints(spark, tmp_path):
    df = spark.createDataFrame([(i,) for i in range(10)], "id long")
    save_dataframe(df.coalesce(1), tmp_path / "out", conf={"tfrecord.output.index": False})
    assert len(data_files(tmp_path / "out")) == 1
    assert not list((tmp_path / "out").glob("_*.tfindex"))
    back = load_dataframe(spark, tmp_path / "out", conf={"tfrecord.max.record.bytes": 1 << 30})
    assert sorted(r.id for r in back.collect()) == list(range(10))


def test_load_is_lazy_and_splits_by_index(spark, tmp_path):
    df = spark.range(5000).selectExpr("id", "cast(id as string) as s")
    save_dataframe(df.coalesce(1), tmp_path / "out")
    # Reads go through the data source, so Spark's split size applies (not Hadoop's).
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    saved = {k: spark.conf.get(k) for k in keys}
    spark.conf.set("spark.sql.files.maxPartitionBytes", "20000")
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        back = load_dataframe(spark, tmp_path / "out", schema=df.schema)
        assert back.rdd.getNumPartitions() > 1
        assert back.count() == 5000
        assert back.agg(F.sum("id")).first()[0] == sum(range(5000))
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)

