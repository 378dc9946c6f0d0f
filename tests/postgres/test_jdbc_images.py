"""Spark's JDBC source reads the table of images in parallel partitions, and its rows become
TFRecord shards on HDFS in the layout of TensorFlow's build_image_data.py, whose PNGs TensorFlow
decodes to the MNIST pixels they were made from."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tfrecord_io import tf as tfr
from tfrecord_io.datasets import images

# The image layout of TensorFlow's models/research/inception/data/build_image_data.py, from a
# row (id, filename, label, class, image). Height, width and channels are read from the PNG's
# IHDR chunk (big-endian width at byte 16, height at 20, colour type at 25).
IMAGE_LAYOUT = [
    "image AS `image/encoded`",
    "'PNG' AS `image/format`",
    "CAST(conv(hex(substring(image, 21, 4)), 16, 10) AS INT) AS `image/height`",
    "CAST(conv(hex(substring(image, 17, 4)), 16, 10) AS INT) AS `image/width`",
    "CASE CAST(conv(hex(substring(image, 26, 1)), 16, 10) AS INT) "
    "WHEN 0 THEN 1 WHEN 2 THEN 3 WHEN 3 THEN 3 WHEN 4 THEN 2 WHEN 6 THEN 4 END "
    "AS `image/channels`",
    "label AS `image/class/label`",
    "class AS `image/class/text`",
    "filename AS `image/filename`",
]

SPEC = images.feature_spec()  # build_image_data.py's layout, as tfrecord-io images writes it


def read_images(spark, jdbc, partitions, n):
    """The table as Spark's JDBC source reads it: *partitions* queries over ids 1..n."""
    return (spark.read.format("jdbc").options(**jdbc)
            .option("dbtable", "images")
            .option("partitionColumn", "id")
            .option("lowerBound", 1)
            .option("upperBound", n + 1)
            .option("numPartitions", partitions)
            .option("fetchsize", 1000)
            .load())


@pytest.fixture(scope="module")
def shards(spark, hdfs, jdbc, images_db):
    """The rows written by format("tfrecord") to HDFS in the image layout, 4 shards."""
    url = f"{hdfs.url}/postgres/images-tfr"
    examples = read_images(spark, jdbc, 4, len(images_db)).selectExpr(*IMAGE_LAYOUT)
    examples.write.format("tfrecord").mode("overwrite").save(url)
    return url


def test_jdbc_reads_the_table_in_the_partitions_asked_each_row_once(spark, jdbc, images_db):
    images = read_images(spark, jdbc, 4, len(images_db))
    assert dict(images.dtypes) == {"id": "int", "filename": "string", "label": "int",
                                   "class": "string", "image": "binary"}
    per_partition = images.rdd.mapPartitions(lambda rows: [[r.id for r in rows]]).collect()
    assert len(per_partition) == images.rdd.getNumPartitions() == 4
    assert [len(ids) for ids in per_partition] == [2500] * 4  # id ranges of equal width
    assert sorted(i for ids in per_partition for i in ids) == list(range(1, 10_001))


def test_jdbc_rows_carry_labels_and_png_files_of_the_source(spark, jdbc, images_db):
    rows = read_images(spark, jdbc, 2, len(images_db)).where("id IN (1, 5000)").collect()
    for row in sorted(rows, key=lambda r: r.id):
        k = row.id - 1
        assert row.label == images_db.labels[k] and row["class"] == str(row.label)
        pixels = tf.io.decode_png(bytes(row.image)).numpy()
        assert np.array_equal(pixels[:, :, 0], images_db.images[k])


def test_image_shards_on_hdfs_are_one_per_jdbc_partition(hdfs, shards):
    from tfrecord_io import fs

    names = sorted(u.rsplit("/", 1)[1] for u in fs.ls(shards))
    parts = [n for n in names if n.startswith("part-")]
    assert [n[:10] for n in parts] == [f"part-0000{k}" for k in range(4)]
    assert all(n.endswith(".tfrecord") for n in parts)


def test_image_shards_decode_with_tensorflow_to_the_mnist_pixels(shards, images_db):
    records = tfr.dataset(shards).map(lambda r: tf.io.parse_single_example(r, SPEC))
    seen = []
    for f in records:
        name = f["image/filename"].numpy().decode()
        k = int(name.rsplit("-", 1)[1].removesuffix(".png"))
        assert f["image/format"].numpy() == b"PNG"
        assert (int(f["image/height"]), int(f["image/width"]), int(f["image/channels"])) == (
            28, 28, 1)
        assert int(f["image/class/label"]) == images_db.labels[k]
        assert f["image/class/text"].numpy().decode() == str(images_db.labels[k])
        pixels = tf.io.decode_png(f["image/encoded"], channels=1).numpy()
        assert np.array_equal(pixels[:, :, 0], images_db.images[k]), name
        seen.append(k)
    assert sorted(seen) == list(range(len(images_db)))
