"""tfrecord_io.records against real TensorFlow: files interchange both ways, byte for byte."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf

from tfrecord_io import index, records

DATA = [b"", b"x", os.urandom(1000), os.urandom(70_000), b"last record"] + [
    os.urandom(n) for n in range(0, 3000, 37)
]

TF_TYPES = {"gzip": "GZIP", "zlib": "ZLIB"}


def tf_write(path: str, data, compression_type: str = "") -> None:
    options = tf.io.TFRecordOptions(compression_type=compression_type)
    with tf.io.TFRecordWriter(path, options) as writer:
        for record in data:
            writer.write(record)


def tf_read(path: str, compression_type: str = "") -> list[bytes]:
    dataset = tf.data.TFRecordDataset(path, compression_type=compression_type)
    return [t.numpy() for t in dataset]


def test_reads_a_tensorflow_written_file(tmp_path):
    path = str(tmp_path / "tf.tfrecord")
    tf_write(path, DATA)
    assert list(records.read(path)) == DATA


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_reads_a_tensorflow_written_compressed_file(tmp_path, compression):
    path = str(tmp_path / "tf.tfrecord")
    tf_write(path, DATA, TF_TYPES[compression])
    assert list(records.read(path, compression=compression)) == DATA
    assert list(records.read(path, compression=TF_TYPES[compression])) == DATA


@pytest.mark.parametrize("name, compression", [("tf.tfrecord.gz", "GZIP"), ("tf.deflate", "ZLIB")])
def test_detects_the_compression_of_tensorflow_files_by_name(tmp_path, name, compression):
    path = str(tmp_path / name)
    tf_write(path, DATA, compression)
    assert list(records.read(path)) == DATA


def test_tensorflow_reads_our_file(tmp_path):
    path = str(tmp_path / "ours.tfrecord")
    records.write(path, DATA)
    assert tf_read(path) == DATA


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_tensorflow_reads_our_compressed_file(tmp_path, compression):
    path = str(tmp_path / "ours.tfrecord")
    records.write(path, DATA, compression=compression)
    assert tf_read(path, TF_TYPES[compression]) == DATA


def test_uncompressed_output_is_byte_identical_to_tensorflow(tmp_path):
    ours, theirs = str(tmp_path / "ours.tfrecord"), str(tmp_path / "tf.tfrecord")
    records.write(ours, DATA)
    tf_write(theirs, DATA)
    with open(ours, "rb") as a, open(theirs, "rb") as b:
        assert a.read() == b.read()


def test_empty_files_are_identical_to_tensorflow(tmp_path):
    ours, theirs = str(tmp_path / "ours.tfrecord"), str(tmp_path / "tf.tfrecord")
    records.write(ours, [])
    tf_write(theirs, [])
    assert os.path.getsize(ours) == os.path.getsize(theirs) == 0
    assert list(records.read(theirs)) == []


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_empty_compressed_files_interchange_with_tensorflow(tmp_path, compression):
    ours, theirs = str(tmp_path / "ours.tfrecord"), str(tmp_path / "tf.tfrecord")
    records.write(ours, [], compression=compression)
    tf_write(theirs, [], TF_TYPES[compression])
    assert tf_read(ours, TF_TYPES[compression]) == []
    assert list(records.read(theirs, compression=compression)) == []


def test_index_of_a_tensorflow_file_splits_it_for_tensorflow(tmp_path):
    path = str(tmp_path / "tf.tfrecord")
    tf_write(path, DATA)
    index.write_index(path)
    entries = index.load_index(path)
    assert entries is not None and len(entries) == len(DATA)
    got = []
    for start, end in index.split_ranges(entries, 4):
        got.extend(records.read(path, start=start, end=end))
    assert got == DATA


def test_serialized_examples_round_trip(tmp_path):
    examples = [
        tf.train.Example(
            features=tf.train.Features(
                feature={
                    "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                    "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"n%d" % i])),
                }
            )
        )
        for i in range(50)
    ]
    path = str(tmp_path / "examples.tfrecord")
    records.write(path, (e.SerializeToString() for e in examples))
    parsed = [tf.train.Example.FromString(r) for r in records.read(path)]
    assert parsed == examples
    from_tf = [tf.train.Example.FromString(t.numpy()) for t in tf.data.TFRecordDataset(path)]
    assert from_tf == examples
