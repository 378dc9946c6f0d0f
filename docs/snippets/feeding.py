from tfrecord_io import cluster
from tfrecord_io import spark as tfs

spark = tfs.session()  # 4 task slots or more: 2 workers, and the feeding tasks beside them
sc = spark.sparkContext


def main_fun(args, ctx):
    import tensorflow as tf  # tf-keras 2.21 here: keras="legacy" below

    strategy = ctx.strategy()  # MultiWorkerMirroredStrategy; first, before any op
    spec = {
        "x": tf.io.FixedLenFeature([2], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    options = tf.data.Options()  # each worker is already fed its own rows: no auto-sharding
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF

    def split(features):
        return features["x"], features["label"]

    train = ctx.feed("train", features=spec, batch_size=32).map(split).with_options(options)
    val = ctx.feed("validation", features=spec, batch_size=64).map(split).with_options(options)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(2)])
        model.compile(
            optimizer="adam",
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    model.fit(train, validation_data=val, epochs=args["epochs"], verbose=2)  # one feed epoch each


rows = spark.range(2000).selectExpr(
    "array(cast(id % 2 AS FLOAT), cast(rand(1) AS FLOAT)) AS x",
    "id % 2 AS label",
    "id >= 1600 AS val",
)
train_df = rows.where("NOT val").drop("val").cache()
val_df = rows.where("val").drop("val").cache()

c = cluster.run(sc, main_fun, {"epochs": 3}, num_workers=2, input_mode="spark", keras="legacy")
t = c.train(train_df, num_epochs=3, block=False)  # the two feeds are fed in turns
v = c.train(val_df, num_epochs=3, feed="validation", block=False)
report = t.result()  # a FeedReport: records per worker and epoch
v.result()
c.wait()  # ends the feeds, waits for main_fun on every worker
