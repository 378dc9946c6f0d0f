"""The Spark data source ``format("tfrecord")`` on real executors: save modes, partitions, SQL
tables, column pruning, counts from indexes, exact splits, linkedin/spark-tfrecord's option
spellings, and damaged input. TensorFlow-free (records are checked with tfrecord_io.records), so
it runs in a Spark-only environment too; tests/spark/test_source_tensorflow.py has TensorFlow
reading what the source writes and the other way round.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from tfrecord_io import example as ex
from tfrecord_io import records
from tfrecord_io.spark.jvm import is_connect

FORMAT_CLASS = "org.tfrecordio.spark.source.TFRecordFileFormat"


def data_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("part-*") if p.is_file())


def index_files(directory: Path) -> list[Path]:
    return sorted(directory.rglob("_part-*.tfindex"))


def file_records(directory: Path, compression: str | None = None) -> list[bytes]:
    return [r for p in data_files(directory) for r in records.read(str(p), compression)]


def metrics(spark):
    """What the most recent tfrecord scan of *spark*'s driver did (records read, counted from
    indexes, features decoded), as the jar's ReadMetricsSource answers it on the driver: the
    same read on a classic session and over Spark Connect."""
    row = spark.read.format("org.tfrecordio.spark.source.ReadMetricsSource").load().collect()[0]
    return {"read": row.read, "counted": row.counted, "decoded": row.decoded}


def partitions(df) -> int:
    """The partitions that hold rows of *df* (no RDD needed: also over Spark Connect)."""
    return df.select(F.spark_partition_id().alias("p")).distinct().count()


def people(spark, n: int = 100, partitions: int = 2):
    rows = [(i, f"name{i}", float(i) / 2, [i, i + 1]) for i in range(n)]
    return spark.createDataFrame(rows, "id long, name string, score double, tags array<long>") \
        .repartition(partitions)


def read(spark, path: Path, schema=None, **options):
    reader = spark.read.format("tfrecord").options(**options)
    if schema is not None:
        reader = reader.schema(schema)
    return reader.load(str(path))


def ids(df) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


# ---------------------------------------------------------------------------------------------
# Writing: save modes, partitions, the committer
# ---------------------------------------------------------------------------------------------


def test_errorifexists_refuses_an_existing_path(any_spark, tmp_path):
    people(any_spark, 10).write.format("tfrecord").save(str(tmp_path / "t"))
    with pytest.raises(Exception, match="already exists"):
        # "error": Spark Connect's Python client refuses the "errorifexists" spelling.
        people(any_spark, 10).write.format("tfrecord").mode("error").save(str(tmp_path / "t"))
    assert ids(read(any_spark, tmp_path / "t")) == list(range(10))


def test_append_adds_files(any_spark, tmp_path):
    people(any_spark, 10).write.format("tfrecord").save(str(tmp_path / "t"))
    people(any_spark, 5).write.format("tfrecord").mode("append").save(str(tmp_path / "t"))
    assert ids(read(any_spark, tmp_path / "t")) == sorted(list(range(10)) + list(range(5)))


def test_overwrite_replaces_the_data(any_spark, tmp_path):
    people(any_spark, 10).write.format("tfrecord").save(str(tmp_path / "t"))
    people(any_spark, 3).write.format("tfrecord").mode("overwrite").save(str(tmp_path / "t"))
    assert ids(read(any_spark, tmp_path / "t")) == [0, 1, 2]


def test_ignore_leaves_existing_data_alone(any_spark, tmp_path):
    people(any_spark, 10).write.format("tfrecord").save(str(tmp_path / "t"))
    people(any_spark, 3).write.format("tfrecord").mode("ignore").save(str(tmp_path / "t"))
    assert ids(read(any_spark, tmp_path / "t")) == list(range(10))


def test_output_is_committed_with_an_index_beside_each_file(any_spark, tmp_path):
    people(any_spark, 50, partitions=3).write.format("tfrecord").save(str(tmp_path / "t"))
    files = data_files(tmp_path / "t")
    assert (tmp_path / "t" / "_SUCCESS").exists()
    assert files and all(p.name.endswith(".tfrecord") for p in files)
    assert [p.name for p in index_files(tmp_path / "t")] == [f"_{p.name}.tfindex" for p in files]
    assert not list((tmp_path / "t").rglob("_temporary"))


def test_partitioned_write_and_read(any_spark, tmp_path):
    df = people(any_spark, 60).withColumn("bucket", (F.col("id") % 3).cast("int")) \
        .withColumn("kind", F.when(F.col("id") % 2 == 0, "even").otherwise("odd"))
    df.write.format("tfrecord").partitionBy("bucket", "kind").save(str(tmp_path / "t"))
    dirs = {p.parent.relative_to(tmp_path / "t").as_posix() for p in data_files(tmp_path / "t")}
    assert dirs == {f"bucket={b}/kind={k}" for b in range(3) for k in ("even", "odd")}
    # Partition columns live in the directory names, not in the records.
    names = {"id", "name", "score", "tags"}
    assert set(ex.decode_example(file_records(tmp_path / "t")[0])) == names

    back = read(any_spark, tmp_path / "t")
    assert back.columns == ["id", "name", "score", "tags", "bucket", "kind"]
    assert dict(back.dtypes)["bucket"] == "int"
    one = back.where("bucket = 1 and kind = 'odd'")
    assert ids(one) == [i for i in range(60) if i % 3 == 1 and i % 2 == 1]
    assert one.count() == 10


# ---------------------------------------------------------------------------------------------
# SQL
# ---------------------------------------------------------------------------------------------


def test_sql_create_table_insert_and_select(any_spark, tmp_path):
    location = tmp_path / "table"
    any_spark.sql(f"CREATE TABLE source_people (id BIGINT, name STRING, part INT) USING tfrecord "
              f"PARTITIONED BY (part) LOCATION '{location}'")
    try:
        any_spark.sql("INSERT INTO source_people VALUES (1, 'one', 0), (2, 'two', 1)")
        any_spark.sql("INSERT INTO source_people SELECT id + 10, name, part FROM source_people")
        rows = any_spark.sql("SELECT id, name, part FROM source_people ORDER BY id").collect()
        assert [tuple(r) for r in rows] == [(1, "one", 0), (2, "two", 1), (11, "one", 0),
                                            (12, "two", 1)]
        assert any_spark.sql("SELECT count(*) FROM source_people WHERE part = 1").first()[0] == 2
        assert {p.parent.name for p in data_files(location)} == {"part=0", "part=1"}
    finally:
        any_spark.sql("DROP TABLE source_people")


def test_sql_on_files(any_spark, tmp_path):
    people(any_spark, 20).write.format("tfrecord").save(str(tmp_path / "t"))
    total = any_spark.sql(f"SELECT sum(id), count(*) FROM tfrecord.`{tmp_path / 't'}`").first()
    assert tuple(total) == (sum(range(20)), 20)


def test_format_by_class_name(any_spark, tmp_path):
    people(any_spark, 7).write.format(FORMAT_CLASS).save(str(tmp_path / "t"))
    assert any_spark.read.format(FORMAT_CLASS).load(str(tmp_path / "t")).count() == 7


# ---------------------------------------------------------------------------------------------
# Reading: pruning, counts from indexes, splits
# ---------------------------------------------------------------------------------------------


def test_a_one_column_query_decodes_only_that_feature(any_spark, tmp_path):
    spark = any_spark
    people(spark, 100).write.format("tfrecord").save(str(tmp_path / "t"))
    df = read(spark, tmp_path / "t")
    assert sorted(r.name for r in df.select("name").collect()) == sorted(
        f"name{i}" for i in range(100))
    assert metrics(spark) == {"read": 100, "counted": 0, "decoded": 100}

    assert len(df.collect()) == 100
    assert metrics(spark) == {"read": 100, "counted": 0, "decoded": 400}


def test_a_one_column_query_reads_a_one_column_schema(spark, tmp_path):
    people(spark, 100).write.format("tfrecord").save(str(tmp_path / "t"))
    plan = read(spark, tmp_path / "t").select("name")._jdf.queryExecution().executedPlan()
    assert "ReadSchema: struct<name:string>" in plan.toString()


def test_inference_and_scan_leave_out_parquet_metadata_and_files_being_copied(any_spark, tmp_path):
    # Spark lists _metadata with the data (Parquet's summary); `hadoop fs -put` writes
    # NAME._COPYING_ until the copy is whole.
    records.write(str(tmp_path / "part-0.tfrecord"), [ex.encode_example({"id": 1})])
    records.write(str(tmp_path / "_metadata"), [ex.encode_example({"other": "x"})])
    (tmp_path / "part-1.tfrecord._COPYING_").write_bytes(b"half a file")
    df = read(any_spark, tmp_path)
    assert df.schema == StructType([StructField("id", LongType())])
    assert [r.id for r in df.collect()] == [1]


def test_count_is_answered_from_the_indexes(any_spark, tmp_path):
    spark = any_spark
    people(spark, 300, partitions=3).write.format("tfrecord").save(str(tmp_path / "t"))
    assert read(spark, tmp_path / "t").count() == 300
    assert metrics(spark) == {"read": 0, "counted": 300, "decoded": 0}


def test_count_reads_a_file_whose_index_is_deleted(any_spark, tmp_path):
    spark = any_spark
    people(spark, 300, partitions=3).write.format("tfrecord").save(str(tmp_path / "t"))
    first = data_files(tmp_path / "t")[0]
    in_first = len(records_of(first))
    (first.parent / f"_{first.name}.tfindex").unlink()
    assert read(spark, tmp_path / "t").count() == 300
    assert metrics(spark) == {"read": in_first, "counted": 300 - in_first, "decoded": 0}


def test_count_reads_a_file_appended_to_after_its_index(any_spark, tmp_path):
    spark = any_spark
    people(spark, 300, partitions=3).write.format("tfrecord").save(str(tmp_path / "t"))
    first = data_files(tmp_path / "t")[0]
    in_first = len(records_of(first))
    extra = tmp_path / "extra.tfrecord"
    records.write(str(extra), [ex.encode_example({"id": [1000 + i]}) for i in range(7)],
                  index=False)
    with open(first, "ab") as out:
        out.write(extra.read_bytes())
    df = read(spark, tmp_path / "t")
    assert df.count() == 307
    assert metrics(spark) == {"read": in_first + 7, "counted": 300 - in_first, "decoded": 0}
    assert sorted(ids(df))[-7:] == list(range(1000, 1007))


def test_a_file_gone_since_the_listing_fails_the_count_or_is_skipped_as_spark_says(
        spark, tmp_path):
    people(spark, 300, partitions=3).write.format("tfrecord").save(str(tmp_path / "t"))
    df = read(spark, tmp_path / "t")  # the files are listed now
    first = data_files(tmp_path / "t")[0]
    in_first = len(records_of(first))
    first.unlink()  # its index stays
    with pytest.raises(Exception, match=f"FileNotFoundException.*{first.name}"):
        df.count()
    spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
    try:
        assert df.count() == 300 - in_first
        assert len(df.collect()) == 300 - in_first
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")


def records_of(path: Path) -> list[bytes]:
    return list(records.read(str(path)))


@pytest.mark.parametrize("indexed", [True, False])
def test_small_splits_read_every_record_once(any_spark, tmp_path, indexed):
    spark = any_spark
    spark.range(5000).selectExpr("id", "cast(id as string) as s").coalesce(1) \
        .write.format("tfrecord").save(str(tmp_path / "t"))
    if not indexed:
        for p in index_files(tmp_path / "t"):
            p.unlink()
    saved = {k: spark.conf.get(k) for k in ("spark.sql.files.maxPartitionBytes",
                                           "spark.sql.files.openCostInBytes")}
    spark.conf.set("spark.sql.files.maxPartitionBytes", "20000")
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        df = read(spark, tmp_path / "t")
        if not is_connect(spark):
            assert df.rdd.getNumPartitions() > 1
        if indexed:  # split at the indexed record boundaries: the records spread over them
            assert partitions(df) > 1
        assert sorted(r.id for r in df.select("id").collect()) == list(range(5000))
        assert df.count() == 5000
        assert metrics(spark)["counted"] == (5000 if indexed else 0)
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)


# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------


def test_spark_tfrecord_spellings_record_type_and_codec(any_spark, tmp_path):
    people(any_spark, 40).write.format("tfrecord").option("recordType", "Example") \
        .option("codec", "org.apache.hadoop.io.compress.GzipCodec").save(str(tmp_path / "t"))
    files = data_files(tmp_path / "t")
    assert files and all(p.name.endswith(".tfrecord.gz") for p in files)
    assert not index_files(tmp_path / "t")
    assert len(file_records(tmp_path / "t", "gzip")) == 40
    back = any_spark.read.format("tfrecord").option("recordType", "Example") \
        .load(str(tmp_path / "t"))
    assert ids(back) == list(range(40))
    assert back.count() == 40  # compressed: no index, counted by reading


def test_sequence_examples_and_byte_arrays(any_spark, tmp_path):
    seq = any_spark.createDataFrame([(1, [[1, 2], [3]]), (2, [])],
                                    "id long, steps array<array<long>>")
    seq.write.format("tfrecord").option("recordType", "SequenceExample").save(str(tmp_path / "s"))
    back = read(any_spark, tmp_path / "s", recordType="SequenceExample")
    assert sorted(tuple(r) for r in back.collect()) == [(1, [[1, 2], [3]]), (2, [])]

    raw = any_spark.createDataFrame([(b"\x00\x01",), (b"",)], "byteArray binary")
    raw.write.format("tfrecord").option("recordType", "ByteArray").save(str(tmp_path / "b"))
    assert sorted(file_records(tmp_path / "b")) == [b"", b"\x00\x01"]
    back = read(any_spark, tmp_path / "b", recordType="ByteArray")
    assert back.schema == StructType([StructField("byte_array", BinaryType(), True)])
    assert sorted(r.byte_array for r in back.collect()) == [b"", b"\x00\x01"]
    given = read(any_spark, tmp_path / "b", schema="byteArray binary", recordType="ByteArray")
    assert sorted(r.byteArray for r in given.collect()) == [b"", b"\x00\x01"]


def test_compression_option_and_inference_options(any_spark, tmp_path):
    df = any_spark.createDataFrame([(1, b"ab"), (2, b"cd")], "n long, blob binary")
    df.write.format("tfrecord").option("compression", "zlib").save(str(tmp_path / "t"))
    assert all(p.name.endswith(".tfrecord.deflate") for p in data_files(tmp_path / "t"))
    # "ab" is valid UTF-8: a string unless binaryFeatures says otherwise.
    assert dict(read(any_spark, tmp_path / "t").dtypes)["blob"] == "string"
    typed = read(any_spark, tmp_path / "t", binaryFeatures="blob", samplingRatio="0.5")
    assert dict(typed.dtypes)["blob"] == "binary"
    with pytest.raises(Exception, match="compression must be"):
        df.write.format("tfrecord").option("compression", "lz9").save(str(tmp_path / "bad"))


def test_tfrecord_keys_go_to_the_hadoop_configuration(any_spark, tmp_path):
    people(any_spark, 10).write.format("tfrecord").option("tfrecord.output.index", "false") \
        .option("tfrecord.output.extension", ".rec").save(str(tmp_path / "t"))
    assert all(p.name.endswith(".rec") for p in data_files(tmp_path / "t"))
    assert not index_files(tmp_path / "t")
    assert read(any_spark, tmp_path / "t").count() == 10


def test_hadoop_output_compression_keys_apply_without_a_compression_option(any_spark, tmp_path):
    people(any_spark, 10).write.format("tfrecord") \
        .option("mapreduce.output.fileoutputformat.compress", "true") \
        .option("mapreduce.output.fileoutputformat.compress.codec",
                "org.apache.hadoop.io.compress.GzipCodec").save(str(tmp_path / "t"))
    files = data_files(tmp_path / "t")
    assert files and all(p.name.endswith(".tfrecord.gz") for p in files)
    assert read(any_spark, tmp_path / "t").count() == 10


def test_unsupported_column_type_fails_naming_it(any_spark, tmp_path):
    df = any_spark.createDataFrame([(1, {"a": 1})], "id long, m map<string,int>")
    with pytest.raises(Exception, match=r"column 'm' has type map<string,int>"):
        df.write.format("tfrecord").save(str(tmp_path / "t"))
    assert not (tmp_path / "t").exists()


# ---------------------------------------------------------------------------------------------
# Damaged data
# ---------------------------------------------------------------------------------------------


def test_damaged_file_fails_naming_file_and_offset_or_is_skipped(any_spark, tmp_path):
    people(any_spark, 50, partitions=1).write.format("tfrecord").save(str(tmp_path / "t"))
    [data] = data_files(tmp_path / "t")
    raw = bytearray(data.read_bytes())
    middle = len(raw) // 2
    raw[middle] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(Exception, match=rf"corrupt TFRecord in \S*{data.name} at byte offset \d+"):
        read(any_spark, tmp_path / "t", schema="id long").collect()
    skipped = read(any_spark, tmp_path / "t", schema="id long",
                   **{"tfrecord.input.corrupt.policy": "skip"}).collect()
    assert len(skipped) == 49


def test_undecodable_record_fails_naming_file_and_offset(any_spark, tmp_path):
    (tmp_path / "t").mkdir()
    records.write(str(tmp_path / "t" / "x.tfrecord"),
                  [ex.encode_example({"id": [1]}), ex.encode_example({"id": ["not a number"]})])
    with pytest.raises(Exception, match=r"feature 'id' holds bytes values.*byte offset \d+ "
                                         r"of \S*x.tfrecord"):
        read(any_spark, tmp_path / "t", schema="id long").collect()


def test_a_given_schema_reads_a_subset_of_the_features(any_spark, tmp_path):
    people(any_spark, 5).write.format("tfrecord").save(str(tmp_path / "t"))
    df = read(any_spark, tmp_path / "t", schema=StructType([StructField("id", LongType()),
                                                         StructField("name", StringType())]))
    assert sorted(tuple(r) for r in df.collect()) == [(i, f"name{i}") for i in range(5)]
