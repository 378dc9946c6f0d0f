"""Spark writes and reads TFRecords through the bundled Hadoop formats, on real executors,
and TensorFlow agrees with every byte."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
import tensorflow as tf
from py4j.protocol import Py4JJavaError

from tfrecord_io import spark as tfs

BYTES = "org.apache.hadoop.io.BytesWritable"
NULL = "org.apache.hadoop.io.NullWritable"


def sample_records(n: int = 500, seed: int = 7) -> list[bytes]:
    rnd = random.Random(seed)
    return [b""] + [rnd.randbytes(rnd.randrange(0, 300)) for _ in range(n - 1)]


def tf_read(paths, compression: str = "") -> list[bytes]:
    return [r.numpy() for r in tf.data.TFRecordDataset(paths, compression_type=compression)]


def tf_write(path: Path, records, compression: str = "") -> None:
    with tf.io.TFRecordWriter(str(path), options=compression or None) as writer:
        for record in records:
            writer.write(record)


def data_files(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.glob("part-*"))


def test_records_round_trip_through_spark(sc, tmp_path):
    records = sample_records()
    tfs.save_records(sc.parallelize(records, 3), str(tmp_path / "out"))
    assert sorted(tfs.load_records(sc, str(tmp_path / "out")).collect()) == sorted(records)


def test_loaded_records_are_bytes(sc, tmp_path):
    tfs.save_records(sc.parallelize([b"\x00\xff"], 1), str(tmp_path / "out"))
    assert tfs.load_records(sc, str(tmp_path / "out")).collect() == [b"\x00\xff"]


def test_output_is_one_indexed_part_file_per_partition_and_success_marker(sc, tmp_path):
    tfs.save_records(sc.parallelize(sample_records(), 3), str(tmp_path / "out"))
    names = {p.name for p in (tmp_path / "out").iterdir() if not p.name.endswith(".crc")}
    assert names == {
        "_SUCCESS",
        *(f"part-r-0000{i}.tfrecord" for i in range(3)),
        *(f"_part-r-0000{i}.tfrecord.tfindex" for i in range(3)),
    }


def test_bytearrays_and_memoryviews_are_written_as_their_bytes(sc, tmp_path):
    data = [bytearray(b"ab"), memoryview(b"cd"), b"ef"]
    tfs.save_records(sc.parallelize(data, 1), str(tmp_path / "out"))
    assert tfs.load_records(sc, str(tmp_path / "out")).collect() == [b"ab", b"cd", b"ef"]


@pytest.mark.parametrize("value", [3, [104, 105], "text"], ids=["int", "list", "str"])
def test_a_record_that_is_not_bytes_like_fails_naming_its_type(sc, tmp_path, value):
    with pytest.raises(Exception, match=f"bytes-like records .*not {type(value).__name__}"):
        tfs.save_records(sc.parallelize([value], 1), str(tmp_path / "out"))


def test_an_output_path_with_a_comma_is_one_path(sc, tmp_path):
    out = tmp_path / "day=2024-01-01,2024-01-02"
    tfs.save_records(sc.parallelize([b"x"], 1), str(out))
    assert (out / "_SUCCESS").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_pathlib_paths_are_accepted(sc, tmp_path):
    tfs.save_records(sc.parallelize([b"x"], 1), tmp_path / "out")
    assert tfs.load_records(sc, tmp_path / "out").collect() == [b"x"]


def test_tensorflow_reads_what_spark_writes(sc, tmp_path):
    records = sample_records()
    tfs.save_records(sc.parallelize(records, 2), str(tmp_path / "out"))
    assert sorted(tf_read(data_files(tmp_path / "out"))) == sorted(records)


def test_uncompressed_output_is_byte_identical_to_tensorflow_writer(sc, tmp_path):
    records = sample_records()
    tfs.save_records(sc.parallelize(records, 1), str(tmp_path / "out"))
    tf_write(tmp_path / "tf.tfrecord", records)
    ours = (tmp_path / "out" / "part-r-00000.tfrecord").read_bytes()
    assert ours == (tmp_path / "tf.tfrecord").read_bytes()


@pytest.mark.parametrize(
    "compression, tf_type, suffix",
    [("gzip", "GZIP", ".tfrecord.gz"), ("zlib", "ZLIB", ".tfrecord.deflate"),
     ("DEFLATE", "ZLIB", ".tfrecord.deflate")],
)
def test_tensorflow_reads_compressed_spark_output(sc, tmp_path, compression, tf_type, suffix):
    records = sample_records()
    tfs.save_records(sc.parallelize(records, 2), str(tmp_path / "out"), compression=compression)
    files = data_files(tmp_path / "out")
    assert files and all(f.endswith(suffix) for f in files)
    assert not list((tmp_path / "out").glob("_*.tfindex"))
    assert sorted(tf_read(files, tf_type)) == sorted(records)


@pytest.mark.parametrize("tf_type, name", [("", "a.tfrecord"), ("GZIP", "a.tfrecord.gz"),
                                           ("ZLIB", "a.tfrecord.deflate")])
def test_spark_reads_what_tensorflow_writes_with_both_apis(sc, tmp_path, tf_type, name):
    records = sample_records()
    tf_write(tmp_path / name, records, tf_type)
    path = str(tmp_path / name)
    new_api = tfs.load_records(sc, path).collect()
    old_api = sc.hadoopFile(path, tfs.MAPRED_INPUT_FORMAT, BYTES, NULL).keys().map(bytes).collect()
    assert new_api == records
    assert old_api == records


def test_compression_none_writes_indexed_uncompressed_files(sc, tmp_path):
    records = sample_records(50)
    tfs.save_records(sc.parallelize(records, 1), str(tmp_path / "out"), compression="None")
    assert [os.path.basename(f) for f in data_files(tmp_path / "out")] == ["part-r-00000.tfrecord"]
    assert (tmp_path / "out" / "_part-r-00000.tfrecord.tfindex").exists()
    assert tf_read(data_files(tmp_path / "out")) == records


def test_conf_values_may_be_bools_and_ints(sc, tmp_path):
    records = sample_records(50)
    tfs.save_records(sc.parallelize(records, 2), str(tmp_path / "out"),
                     conf={"tfrecord.output.index": False})
    assert len(data_files(tmp_path / "out")) == 2
    assert not list((tmp_path / "out").glob("_*.tfindex"))  # False reached the OutputFormat
    loaded = tfs.load_records(sc, str(tmp_path / "out"),
                              conf={"tfrecord.max.record.bytes": 1 << 30})
    assert sorted(loaded.collect()) == sorted(records)


def test_an_int_conf_value_reaches_the_reader(sc, tmp_path):
    tfs.save_records(sc.parallelize([b"x" * 200], 1), str(tmp_path / "out"))
    with pytest.raises(Py4JJavaError) as error:
        tfs.load_records(sc, str(tmp_path / "out"),
                         conf={"tfrecord.max.record.bytes": 100}).collect()
    assert "exceeds the maximum of 100 bytes (tfrecord.max.record.bytes; " in str(error.value)


def test_input_compression_setting_overrides_the_file_name(sc, tmp_path):
    records = sample_records(50)
    tf_write(tmp_path / "zlib-without-suffix.tfrecord", records, "ZLIB")
    loaded = tfs.load_records(
        sc, str(tmp_path / "zlib-without-suffix.tfrecord"),
        conf={"tfrecord.input.compression": "zlib"},
    )
    assert loaded.collect() == records


def test_mapred_api_writes_and_reads(sc, tmp_path):
    records = sample_records()
    out = str(tmp_path / "out")
    sc.parallelize(records, 2).map(lambda r: (r, None)).saveAsHadoopFile(
        out, tfs.MAPRED_OUTPUT_FORMAT, BYTES, NULL)
    assert sorted(tf_read(data_files(tmp_path / "out"))) == sorted(records)
    loaded = sc.hadoopFile(out, tfs.MAPRED_INPUT_FORMAT, BYTES, NULL).keys().map(bytes)
    assert sorted(loaded.collect()) == sorted(records)


def test_big_file_is_read_in_several_splits_each_record_once(sc, tmp_path):
    records = [i.to_bytes(4, "little") + os.urandom(1020) for i in range(6000)]
    tfs.save_records(sc.parallelize(records, 1), str(tmp_path / "out"))
    split_conf = {"mapreduce.input.fileinputformat.split.maxsize": str(1 << 20)}
    loaded = tfs.load_records(sc, str(tmp_path / "out"), conf=split_conf)
    assert loaded.getNumPartitions() >= 6
    per_split = loaded.glom().map(len).collect()
    assert all(n > 0 for n in per_split)
    assert loaded.collect() == records


def test_without_index_a_file_is_one_split(sc, tmp_path):
    records = [os.urandom(1000) for _ in range(3000)]
    tf_write(tmp_path / "tf.tfrecord", records)
    split_conf = {"mapreduce.input.fileinputformat.split.maxsize": str(1 << 20)}
    loaded = tfs.load_records(sc, str(tmp_path / "tf.tfrecord"), conf=split_conf)
    assert loaded.getNumPartitions() == 1
    assert loaded.collect() == records


def test_resync_splits_unindexed_file_each_record_once(sc, tmp_path):
    records = [os.urandom(1000) for _ in range(3000)]
    tf_write(tmp_path / "tf.tfrecord", records)
    conf = {"mapreduce.input.fileinputformat.split.maxsize": str(1 << 20),
            "tfrecord.input.split.resync": "true"}
    loaded = tfs.load_records(sc, str(tmp_path / "tf.tfrecord"), conf=conf)
    assert loaded.getNumPartitions() >= 3
    assert loaded.collect() == records


def corrupt_copy(tmp_path: Path, records, damage) -> tuple[Path, list[int]]:
    path = tmp_path / "bad.tfrecord"
    tf_write(path, records)
    data = bytearray(path.read_bytes())
    offsets, pos = [], 0
    for r in records:
        offsets.append(pos)
        pos += 16 + len(r)
    path.write_bytes(damage(data, offsets))
    return path, offsets


def test_corrupt_data_fails_with_file_and_byte_offset(sc, tmp_path):
    records = [bytes([i]) * 100 for i in range(20)]

    def flip(data, offsets):
        data[offsets[7] + 12 + 5] ^= 0xFF
        return data

    path, offsets = corrupt_copy(tmp_path, records, flip)
    with pytest.raises(Py4JJavaError) as error:
        tfs.load_records(sc, str(path)).collect()
    message = str(error.value)
    assert str(path) in message
    assert f"byte offset {offsets[7]}: data checksum mismatch" in message


def test_truncated_file_fails_with_file_and_byte_offset(sc, tmp_path):
    records = [bytes([i]) * 100 for i in range(20)]
    path, offsets = corrupt_copy(tmp_path, records, lambda data, offsets: data[:-50])
    with pytest.raises(Py4JJavaError) as error:
        tfs.load_records(sc, str(path)).collect()
    message = str(error.value)
    assert str(path) in message
    assert f"byte offset {offsets[19]}: truncated record" in message


def test_skip_policy_reads_every_undamaged_record(sc, tmp_path):
    records = [bytes([i]) * 100 for i in range(20)]

    def flip(data, offsets):
        data[offsets[3] + 2] ^= 0x01  # the length field of record 3
        return data

    path, _ = corrupt_copy(tmp_path, records, flip)
    loaded = tfs.load_records(sc, str(path), conf={"tfrecord.input.corrupt.policy": "skip"})
    assert loaded.collect() == records[:3] + records[4:]


def test_failed_task_attempt_leaves_no_partial_or_duplicate_output(sc, tmp_path):
    marker = tmp_path / "failed-once"

    def fail_first_attempt(index, iterator):
        from pyspark import TaskContext

        for n, record in enumerate(iterator):
            if index == 1 and n == 50 and TaskContext.get().attemptNumber() == 0:
                marker.touch()
                raise RuntimeError("injected failure after writing part of the partition")
            yield record

    records = [i.to_bytes(4, "little") * 10 for i in range(400)]
    rdd = sc.parallelize(records, 4).mapPartitionsWithIndex(fail_first_attempt)
    tfs.save_records(rdd, str(tmp_path / "out"))
    files = data_files(tmp_path / "out")
    assert len(files) == 4
    assert sorted(tf_read(files)) == sorted(records)
    assert marker.exists(), "the first attempt of partition 1 should have failed"
    assert not (tmp_path / "out" / "_temporary").exists()


def test_existing_output_directory_is_refused(sc, tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(FileExistsError, match="already exists"):
        tfs.save_records(sc.parallelize([b"x"], 1), str(tmp_path / "out"))


def test_an_existing_output_directory_is_named_and_left_as_it_was(sc, tmp_path):
    # Even holding only what a committer leaves: it was there before the call.
    (tmp_path / "out" / "_temporary").mkdir(parents=True)
    with pytest.raises(FileExistsError, match=r"out already exists: save_records writes a new"):
        tfs.save_records(sc.parallelize([b"x"], 1), tmp_path / "out")
    assert (tmp_path / "out" / "_temporary").is_dir()


def test_a_save_that_fails_leaves_no_directory_and_can_be_run_again(sc, tmp_path):
    # The committer made the directory before the tasks ran; the failed job must not leave it,
    # or the same call would be refused as FileExistsError once the data is fixed.
    out = tmp_path / "out"
    with pytest.raises(Exception, match="bytes-like records .*not int"):
        tfs.save_records(sc.parallelize([b"a", b"b", b"c", 5], 2), str(out))
    assert not out.exists()
    tfs.save_records(sc.parallelize([b"a", b"b", b"c", b"d"], 2), str(out))
    assert sorted(tfs.load_records(sc, str(out)).collect()) == [b"a", b"b", b"c", b"d"]


def test_an_output_path_hadoop_cannot_name_is_a_value_error(sc):
    # Hadoop's IllegalArgumentException, raised before any job, as a Connect server reports it.
    with pytest.raises(ValueError, match=r"'' is not a path Hadoop can name"):
        tfs.save_records(sc.parallelize([b"x"], 1), "")


@pytest.mark.parametrize("name", ["missing", "none-*.tfrecord"], ids=["path", "glob"])
def test_loading_a_path_that_does_not_exist_fails_at_once_naming_it(sc, tmp_path, name):
    with pytest.raises(FileNotFoundError, match="does not exist|matches 0 files") as raised:
        tfs.load_records(sc, str(tmp_path / name))
    assert str(tmp_path / name) in str(raised.value)


def test_unknown_compression_is_refused(sc, tmp_path):
    with pytest.raises(ValueError, match="compression"):
        tfs.save_records(sc.parallelize([b"x"], 1), str(tmp_path / "out"), compression="lz4")


def test_hadoop_brace_globs_select_directories(sc, tmp_path):
    for name, data in (("a", b"1"), ("b", b"2"), ("c", b"3")):
        tfs.save_records(sc.parallelize([data], 1), str(tmp_path / name))
    loaded = tfs.load_records(sc, f"{tmp_path}/{{a,c}}")
    assert sorted(loaded.collect()) == [b"1", b"3"]


def test_a_comma_list_holding_a_brace_glob_and_a_list_of_paths_read_the_same(sc, tmp_path):
    for name, data in (("a", b"1"), ("b", b"2"), ("c", b"3"), ("d", b"4")):
        tfs.save_records(sc.parallelize([data], 1), str(tmp_path / name))
    as_text = tfs.load_records(sc, f"{tmp_path}/a,{tmp_path}/{{b,c}}")
    as_list = tfs.load_records(sc, [tmp_path / "a", f"{tmp_path}/{{b,c}}"])
    assert sorted(as_text.collect()) == sorted(as_list.collect()) == [b"1", b"2", b"3"]
