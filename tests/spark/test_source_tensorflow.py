"""TensorFlow and the Spark data source ``format("tfrecord")`` agree: TensorFlow parses what the
source writes, and the source reads what TensorFlow writes (real executors, real TensorFlow).
"""

from __future__ import annotations

from pathlib import Path

import tensorflow as tf


def data_files(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.rglob("part-*") if p.is_file())


def tf_records(directory: Path) -> list[bytes]:
    return [r.numpy() for r in tf.data.TFRecordDataset(data_files(directory))]


def people(spark, n: int):
    rows = [(i, f"name{i}", float(i) / 2, [i, i + 1]) for i in range(n)]
    return spark.createDataFrame(rows, "id long, name string, score double, tags array<long>") \
        .repartition(2)


def read(spark, path: Path):
    return spark.read.format("tfrecord").load(str(path))


def test_tensorflow_parses_what_the_source_writes(spark, tmp_path):
    people(spark, 30).write.format("tfrecord").save(str(tmp_path / "t"))
    parsed = tf.io.parse_example(tf_records(tmp_path / "t"), {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "name": tf.io.FixedLenFeature([], tf.string),
        "score": tf.io.FixedLenFeature([], tf.float32),
        "tags": tf.io.FixedLenFeature([2], tf.int64),
    })
    got = sorted(zip(parsed["id"].numpy().tolist(), parsed["name"].numpy().tolist(),
                     parsed["score"].numpy().tolist(), parsed["tags"].numpy().tolist(),
                     strict=True))
    assert got == [(i, f"name{i}".encode(), i / 2, [i, i + 1]) for i in range(30)]


def test_the_source_reads_what_tensorflow_writes(spark, tmp_path):
    (tmp_path / "tf").mkdir()
    with tf.io.TFRecordWriter(str(tmp_path / "tf" / "data.tfrecord")) as w:
        for i in range(25):
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
                "pixels": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i + 0.5])),
                "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"t%d" % i])),
            })).SerializeToString())
    df = read(spark, tmp_path / "tf")
    assert df.dtypes == [("label", "bigint"), ("pixels", "array<float>"), ("text", "string")]
    rows = sorted(df.collect(), key=lambda r: r.text)
    assert len(rows) == 25 and rows[0].pixels == [0.0, 0.5] and rows[0].label == 0
    assert df.where("label = 1").count() == 12
