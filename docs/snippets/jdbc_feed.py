import os

from tfrecord_io import cluster
from tfrecord_io import spark as tfs

spark = tfs.session(**{"spark.jars.packages": "org.postgresql:postgresql:42.7.14"})
rows = (
    spark.read.format("jdbc")
    .option("url", "jdbc:postgresql://dbhost:5432/postgres")
    .option("user", "postgres")
    .option("password", os.environ.get("PGPASSWORD", ""))
    .option("driver", "org.postgresql.Driver")
    # A subquery narrows the rows and columns; it still splits on `id`.
    .option("dbtable", "(SELECT id, label, image FROM images WHERE id <= 2000) AS subset")
    .option("partitionColumn", "id")
    .option("lowerBound", 1)
    .option("upperBound", 2001)
    .option("numPartitions", 4)
    .load()
)


def main_fun(args, ctx):
    import tensorflow as tf  # tf-keras 2.21 here: keras="legacy" below

    spec = {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image": tf.io.FixedLenFeature([], tf.string),
    }

    def decode(features):
        pixels = tf.map_fn(
            lambda png: tf.io.decode_png(png, channels=1), features["image"],
            fn_output_signature=tf.TensorSpec([28, 28, 1], tf.uint8),
        )
        return tf.cast(pixels, tf.float32) / 255.0, features["label"]

    strategy = ctx.strategy()  # MultiWorkerMirroredStrategy; first, before any op
    options = tf.data.Options()  # each worker is already fed its own rows: no auto-sharding
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    train = ctx.feed("train", features=spec, batch_size=50).map(decode).with_options(options)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(28, 28, 1)),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(10),
        ])
        model.compile(
            optimizer="adam",
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    history = model.fit(train, epochs=args["epochs"], verbose=2)  # one feed epoch each
    return history.history["accuracy"][-1]


c = cluster.run(spark.sparkContext, main_fun, {"epochs": 2}, num_workers=2,
                input_mode="spark", keras="legacy")
report = c.train(rows, num_epochs=2)  # epoch 2 comes from Spark's cache, not the database
result = c.wait()  # result.values: each worker's main_fun return value
