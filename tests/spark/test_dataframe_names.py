"""Feature names that are not valid UTF-8, read through the jar's data source on real executors:
such a feature is skipped (as TensorFlow's parsers and the Python codec skip it), in schema
inference and in reading, never merged with another feature into one column.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tfrecord_io import example as ex
from tfrecord_io import records
from tfrecord_io.example.wire import varint_bytes
from tfrecord_io.spark import load_dataframe


def ld(tag: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return bytes([tag]) + varint_bytes(len(payload)) + payload


def feature(value: int | float) -> bytes:
    """The bytes of a Feature holding one int64 (an int) or one float (a float)."""
    if isinstance(value, float):
        return ld(0x12, ld(0x0A, struct.pack("<f", value)))
    return ld(0x1A, ld(0x0A, varint_bytes(value)))


def entries(features: list[tuple[bytes, int | float]]) -> bytes:
    """Map entries of features by their byte names (any bytes)."""
    return b"".join(ld(0x0A, ld(0x0A, name) + ld(0x12, feature(value)))
                    for name, value in features)


def example(*features: tuple[bytes, int | float]) -> bytes:
    """The bytes of an Example whose features (byte names, any bytes) hold one value each."""
    return ld(0x0A, entries(list(features)))


def sequence_example(context: list[tuple[bytes, int]],
                     lists: list[tuple[bytes, int]]) -> bytes:
    """The bytes of a SequenceExample: context features and feature lists (one step of one
    int64 each), by byte names."""
    ctx = ld(0x0A, entries(context))
    fls = ld(0x12, b"".join(
        ld(0x0A, ld(0x0A, name) + ld(0x12, ld(0x0A, feature(value)))) for name, value in lists))
    return ctx + fls


REPLACEMENT = "a\ufffd"  # what both b"a\xff" and b"a\xfe" decode to with replacement


@pytest.fixture
def undecodable(tmp_path) -> Path:
    """A file of Examples with features whose names are not UTF-8 (b"a\\xff", b"a\\xfe",
    one of them holding floats) and one named by the valid "a\\ufffd" (what both would decode
    to), holding int64s."""
    path = tmp_path / "names.tfrecord"
    records.write(path, [
        example((b"a\xff", 1.5), (b"a\xfe", 2), (REPLACEMENT.encode(), 3), (b"ok", 10)),
        example((b"a\xff", 4.5), (REPLACEMENT.encode(), 6), (b"ok", 11)),
    ])
    return path


def test_the_python_codec_skips_undecodable_names(undecodable):
    # The reference the data source must agree with.
    assert [ex.decode_example(r) for r in records.read(undecodable)] == [
        {REPLACEMENT: [3], "ok": [10]}, {REPLACEMENT: [6], "ok": [11]}]


def test_inference_skips_features_whose_names_are_not_utf8(spark, undecodable):
    df = load_dataframe(spark, undecodable)
    assert df.columns == ["a\ufffd", "ok"]
    assert sorted(tuple(r) for r in df.collect()) == [(3, 10), (6, 11)]


def test_the_data_source_skips_features_whose_names_are_not_utf8(spark, undecodable):
    df = spark.read.format("tfrecord").load(str(undecodable))
    assert df.columns == ["a\ufffd", "ok"]
    assert sorted(tuple(r) for r in df.collect()) == [(3, 10), (6, 11)]


def test_a_feature_with_only_undecodable_names_is_no_column(spark, tmp_path):
    path = tmp_path / "only.tfrecord"
    records.write(path, [example((b"\xc3\x28", 1), (b"ok", 2))])
    df = load_dataframe(spark, path)
    assert df.columns == ["ok"]
    assert [tuple(r) for r in df.collect()] == [(2,)]


def test_sequence_example_names_that_are_not_utf8_are_skipped(spark, tmp_path):
    path = tmp_path / "seq.tfrecord"
    records.write(path, [sequence_example(
        [(b"c\xff", 1), (b"c", 2)], [(b"l\xff", 3), (b"l\xfe", 4), (b"l", 5)])])
    df = load_dataframe(spark, path, record_type="SequenceExample")
    assert df.columns == ["c", "l"]
    assert [tuple(r) for r in df.collect()] == [(2, [[5]])]
