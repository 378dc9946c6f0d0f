"""The write side of the jar's data source on real executors, against the Python encoder it
must agree with byte for byte (``tfrecord_io.example.from_arrow``): decimals of every
magnitude, partition directory values that need escaping, dynamic partition overwrite.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
import tensorflow as tf

from tfrecord_io import example as ex
from tfrecord_io.errors import SchemaError
from tfrecord_io.spark import load_dataframe, save_dataframe


def data_files(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.rglob("part-*") if not p.name.endswith(".crc"))


def records_of(directory: Path) -> list[bytes]:
    return [r.numpy() for r in tf.data.TFRecordDataset(data_files(directory))]


def to_arrow(df) -> pa.Table:
    """``df.toArrow()``; pyspark 3.5 lacks it, but has the collector behind it."""
    if hasattr(type(df), "toArrow"):
        return df.toArrow()
    return pa.Table.from_batches(df._collect_as_arrow())


SMALL_DECIMALS = [Decimal("0.0000001000"), Decimal("0E-10"), Decimal("-0.0000001200"),
                  Decimal("123.4500000000"), Decimal("0.0000010000"), Decimal("9999999999")]


def test_small_decimals_are_written_as_the_python_encoder_writes_them(spark, tmp_path):
    # Java's plain string and Arrow's (the general decimal arithmetic spec's, scientific
    # below 1E-6) differ for these; the two encoders must write the same bytes.
    df = spark.createDataFrame([(i, d, [d]) for i, d in enumerate(SMALL_DECIMALS)],
                               "id long, d decimal(20,10), ds array<decimal(20,10)>").coalesce(1)
    save_dataframe(df, tmp_path / "out")
    assert sorted(records_of(tmp_path / "out")) == sorted(ex.from_arrow(to_arrow(df)))


def test_small_decimals_read_back_exactly(spark, tmp_path):
    df = spark.createDataFrame([(i, d) for i, d in enumerate(SMALL_DECIMALS)],
                               "id long, d decimal(20,10)")
    save_dataframe(df, tmp_path / "out")
    back = load_dataframe(spark, tmp_path / "out", schema="id long, d decimal(20,10)")
    assert sorted(tuple(r) for r in back.collect()) == list(enumerate(SMALL_DECIMALS))


PARTITION_VALUES = ["100%", "a%2Fb", "%", "x%y=z/w", "tab\there", "日本", "a b", "#?*"]


def test_partition_values_with_escapes_read_back_as_written(spark, tmp_path):
    rows = [(i, v) for i, v in enumerate(PARTITION_VALUES)]
    df = spark.createDataFrame(rows, "id long, kind string")
    save_dataframe(df, tmp_path / "out", partition_by=["kind"])
    for back in (load_dataframe(spark, tmp_path / "out"),
                 spark.read.format("tfrecord").load(str(tmp_path / "out"))):
        assert sorted((r.id, r.kind) for r in back.collect()) == rows
    back = load_dataframe(spark, tmp_path / "out")
    assert back.filter(back.kind == "100%").count() == 1


def test_dynamic_partition_overwrite_replaces_only_the_partitions_written(spark, tmp_path):
    out = str(tmp_path / "out")
    spark.createDataFrame([(1, 1), (2, 2), (3, 3)], "id long, p int").write.format(
        "tfrecord").partitionBy("p").save(out)
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.createDataFrame([(20, 2)], "id long, p int").write.format("tfrecord").mode(
            "overwrite").partitionBy("p").save(out)
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    back = spark.read.format("tfrecord").load(out)
    assert sorted((r.id, r.p) for r in back.collect()) == [(1, 1), (3, 3), (20, 2)]
    # The replaced partition's index is the new file's, not the old one's.
    p2 = sorted(q.name for q in (tmp_path / "out" / "p=2").iterdir()
                if not q.name.endswith(".crc"))
    assert len(p2) == 2 and p2[0].startswith("_part-") and p2[1].startswith("part-")
    assert p2[0] == "_" + p2[1] + ".tfindex"


def test_partition_columns_whose_names_need_escaping_read_back_by_name(spark, tmp_path):
    rows = [(1, "x"), (2, "y=1")]
    df = spark.createDataFrame(rows, "id long, `a=b/c %d` string")
    save_dataframe(df, tmp_path / "out", partition_by=["a=b/c %d"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == [
        "a%3Db%2Fc %25d=x", "a%3Db%2Fc %25d=y%3D1"]
    for back in (load_dataframe(spark, tmp_path / "out"),
                 spark.read.format("tfrecord").load(str(tmp_path / "out"))):
        assert back.columns == ["id", "a=b/c %d"]
        assert sorted(tuple(r) for r in back.collect()) == rows


def test_a_bad_row_of_a_partitioned_write_is_named_by_its_partition_directory(spark, tmp_path):
    # One task writes a file of the same name into each partition directory.
    df = spark.createDataFrame([(1, [1]), (2, [2, None])], "p int, vals array<long>").coalesce(1)
    with pytest.raises(SchemaError, match=r"\(row 1 of the task's file p=2/part-00000-\S+"
                       r"\.tfrecord\)$"):
        save_dataframe(df, tmp_path / "out", partition_by=["p"])
