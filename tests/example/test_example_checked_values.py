"""tfrecord_io.example: names that are not UTF-8, and conversions that would change values.

A feature whose name is not valid UTF-8 is skipped (TensorFlow's parsers skip it too) instead
of failing its whole record; a value that a column type can't hold is an error naming the
feature (column) and the record (row), never a silently changed value.
"""

from __future__ import annotations

import datetime
import logging

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
from tfrecord_io.example.spec import FeatureSpec, infer_spec

LOGGER = "tfrecord_io.example"


@pytest.fixture(params=[True, False], ids=["fast", "protobuf"])
def decoder(request, monkeypatch):
    """Run a test with the bulk numpy decoder and with the per-record protobuf decoder."""
    monkeypatch.setattr(example_mod, "_FAST_PATH", request.param)
    return request.param


def _renamed(record: bytes, old: bytes, new: bytes) -> bytes:
    """*record* with the map key *old* replaced by *new* (of the same length)."""
    assert len(old) == len(new)
    key = b"\x0a" + bytes([len(old)]) + old
    assert record.count(key) == 1
    return record.replace(key, b"\x0a" + bytes([len(new)]) + new)


def _bad_name_records() -> list[bytes]:
    """Three Examples; the second has a feature named b"\\xff\\xfe" (not UTF-8)."""
    return [
        encode_example({"a": 1, "s": "x"}),
        _renamed(encode_example({"a": 2, "s": "y", "zz": [1.5]}), b"zz", b"\xff\xfe"),
        encode_example({"a": 3, "s": "z"}),
    ]


# ------------------------------------------------------------------ names that are not UTF-8


def test_to_arrow_reads_the_requested_features_of_a_record_with_a_name_not_utf8(decoder, caplog):
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        table = to_arrow(_bad_name_records(), schema)
    assert table.to_pydict() == {"a": [1, 2, 3], "s": ["x", "y", "z"]}
    assert not caplog.records  # a name no schema can ask for, like any feature not asked for


def test_infer_schema_skips_a_name_not_utf8_with_a_warning_naming_it_and_its_record(
    decoder, caplog
):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        schema = infer_schema(_bad_name_records())
    assert schema == pa.schema([("a", pa.int64()), ("s", pa.string())])
    [warning] = [r for r in caplog.records if r.name == LOGGER]
    assert r"b'\xff\xfe'" in warning.getMessage()
    assert "record 1" in warning.getMessage()
    assert "not valid UTF-8" in warning.getMessage()


def test_to_arrow_without_a_schema_warns_of_a_name_not_utf8_once_per_batch(decoder, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        table = to_arrow(_bad_name_records() * 3)
    assert table.column_names == ["a", "s"]
    assert table.column("a").to_pylist() == [1, 2, 3] * 3
    assert len([r for r in caplog.records if r.name == LOGGER]) == 1


def test_decode_example_skips_a_name_not_utf8_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        values = decode_example(_bad_name_records()[1])
    assert values == {"a": [2], "s": [b"y"]}
    [warning] = [r for r in caplog.records if r.name == LOGGER]
    assert r"b'\xff\xfe'" in warning.getMessage()


def test_a_sequence_example_with_names_not_utf8_reads_its_other_features(caplog):
    record = encode_sequence_example({"c": 1, "cx": 2}, {"f": [[1.0], [2.0]], "fx": [[3]]})
    record = _renamed(_renamed(record, b"cx", b"\xc3\x28"), b"fx", b"\xe2\x28")
    schema = pa.schema([("c", pa.int64()), ("f", pa.list_(pa.list_(pa.float32())))])
    table = to_arrow([record], schema, record_type="SequenceExample")
    assert table.to_pydict() == {"c": [1], "f": [[[1.0], [2.0]]]}
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert decode_sequence_example(record) == ({"c": [1]}, {"f": [[1.0], [2.0]]})
    [warning] = [r for r in caplog.records if r.name == LOGGER]
    assert r"b'\xc3('" in warning.getMessage() and r"b'\xe2('" in warning.getMessage()


def test_a_record_that_is_not_an_example_still_fails_naming_its_index(decoder):
    bad = _bad_name_records()[1][:-1]  # truncated: not wire format, whatever its names
    with pytest.raises(SchemaError, match=r"not a serialized Example \(record 1\)"):
        to_arrow([encode_example({"a": 1}), bad], pa.schema([("a", pa.int64())]))


# --------------------------------------------------------------- to_arrow: values that change


def test_a_float_beyond_float16_is_an_error_naming_the_feature_and_record(decoder):
    records = [encode_example({"f": 1.5}), encode_example({"f": 70000.0})]
    with pytest.raises(SchemaError, match=r"feature 'f': value 70000.0 in record 1 is out of"):
        to_arrow(records, pa.schema([("f", pa.float16())]))


def test_an_int64_beyond_float16_is_an_error_naming_the_feature_and_record(decoder):
    records = [encode_example({"i": [1, -65536]})]
    with pytest.raises(SchemaError, match=r"feature 'i': value -65536 in record 0 is out of range"):
        to_arrow(records, pa.schema([("i", pa.list_(pa.float16()))]))


def test_an_out_of_range_value_in_a_feature_list_names_its_record_and_step():
    records = [
        encode_sequence_example({}, {"f": [[1.0]]}),
        encode_sequence_example({}, {"f": [[2.0], [3.0, 1e6]]}),
    ]
    schema = pa.schema([("f", pa.list_(pa.list_(pa.float16())))])
    with pytest.raises(SchemaError, match=r"value 1000000.0 in record 1 \(step 1\) is out of"):
        to_arrow(records, schema, record_type="SequenceExample")


def test_an_out_of_range_int_names_its_record(decoder):
    records = [encode_example({"i": 5}), encode_example({"i": 5}), encode_example({"i": 300})]
    with pytest.raises(SchemaError, match=r"feature 'i': value 300 in record 2 is out of range"):
        to_arrow(records, pa.schema([("i", pa.uint8())]))


def test_nan_inf_and_float16_values_read_as_float16_are_kept(decoder):
    records = [encode_example({"f": [float("nan"), float("-inf"), 65504.0, 0.1]})]
    table = to_arrow(records, pa.schema([("f", pa.list_(pa.float16()))]))
    values = table.column("f").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    assert np.isnan(values[0]) and values[1] == -np.inf and values[2] == 65504
    assert values[3] == np.float16(0.1)  # rounded to the nearest float16, as documented


def test_an_int64_read_as_float32_rounds_to_the_nearest_as_documented(decoder):
    big = 2**24 + 1  # the first integer float32 can't hold
    table = to_arrow([encode_example({"i": big})], pa.schema([("i", pa.float32())]))
    assert table.column("i").to_pylist() == [float(np.float32(big))] == [2.0**24]


# ------------------------------------------------------------- from_arrow: values that change


def test_from_arrow_refuses_a_date64_with_a_time_of_day_naming_the_column_and_row():
    day = 86_400_000
    dates = pa.array([0, day, 2 * day + 3_600_000], pa.date64())
    with pytest.raises(SchemaError, match=r"column 'd': date64 value 1970-01-03T01:00.* \(row 2\)"):
        list(from_arrow(pa.table({"d": dates}), batch_size=2))  # row 2 is in the second batch


def test_from_arrow_writes_a_date64_at_midnight_as_its_day():
    dates = pa.array([datetime.date(1969, 12, 31), datetime.date(2000, 1, 1)], pa.date64())
    records = list(from_arrow(pa.table({"d": dates})))
    assert [decode_example(r)["d"] for r in records] == [[-1], [10957]]


def test_from_arrow_names_the_row_of_a_date64_with_a_time_of_day_in_a_list():
    day = 86_400_000
    dates = pa.array([[0], None, [day, day + 1]], pa.list_(pa.date64()))
    with pytest.raises(SchemaError, match=r"\(row 2\)"):
        list(from_arrow(pa.table({"d": dates})))


def test_from_arrow_names_the_row_of_a_uint64_above_int64():
    values = pa.array([1, None, 2**63], pa.uint64())
    with pytest.raises(SchemaError, match=r"column 'u': uint64 value 9223372036854775808 \(row 2"):
        list(from_arrow(pa.table({"u": values})))


def test_infer_spec_finds_the_feature_lists_of_records_with_names_not_utf8(caplog):
    record = encode_sequence_example({"c": 1, "cx": 2}, {"f": [[1.0], [2.0]]})
    record = _renamed(record, b"cx", b"\xc3\x28")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        spec = infer_spec([record])  # record_type "auto"
    assert spec.record_type == "SequenceExample"
    assert spec.features["f"] == FeatureSpec("float32", (), sequence=True)
    assert spec.features["c"] == FeatureSpec("int64", ())
