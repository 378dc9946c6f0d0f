import os

import tensorflow as tf

from tfrecord_io import spark as tfs
from tfrecord_io import tf as tfr

# The PostgreSQL JDBC driver from Maven Central, on the driver and the executors.
spark = tfs.session(**{"spark.jars.packages": "org.postgresql:postgresql:42.7.14"})

jdbc = {
    "url": "jdbc:postgresql://dbhost:5432/postgres",
    "user": "postgres",
    "password": os.environ.get("PGPASSWORD", ""),
    "driver": "org.postgresql.Driver",
}
bounds = (
    spark.read.format("jdbc").options(**jdbc)
    .option("query", "SELECT min(id) AS lo, max(id) AS hi FROM images")
    .load().first()
)
images = (
    spark.read.format("jdbc").options(**jdbc)
    .option("dbtable", "images")  # id, filename, label, class, image (bytea: a PNG file)
    .option("partitionColumn", "id")  # one query per id range, run by the executors at once
    .option("lowerBound", bounds.lo)
    .option("upperBound", bounds.hi + 1)
    .option("numPartitions", 4)
    .option("fetchsize", 1000)  # rows per round trip to the database
    .load()
)

# TensorFlow's image layout (build_image_data.py); the size is read from the PNG's header.
examples = images.selectExpr(
    "image AS `image/encoded`",
    "'PNG' AS `image/format`",
    "CAST(conv(hex(substring(image, 21, 4)), 16, 10) AS INT) AS `image/height`",
    "CAST(conv(hex(substring(image, 17, 4)), 16, 10) AS INT) AS `image/width`",
    "CASE CAST(conv(hex(substring(image, 26, 1)), 16, 10) AS INT) "
    "WHEN 0 THEN 1 WHEN 4 THEN 2 WHEN 6 THEN 4 ELSE 3 END AS `image/channels`",
    "label AS `image/class/label`",
    "class AS `image/class/text`",
    "filename AS `image/filename`",
)
shards = "hdfs://namenode:8020/data/images-tfr"
examples.write.format("tfrecord").mode("overwrite").save(shards)  # one shard per partition

# Training reads the shards with TensorFlow.
spec = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
}


def decode(record):
    features = tf.io.parse_single_example(record, spec)
    pixels = tf.io.decode_png(features["image/encoded"], channels=1)
    return tf.cast(pixels, tf.float32) / 255.0, features["image/class/label"]


dataset = tfr.dataset(shards).map(decode).batch(128)
