"""Training functions (``train_fn``) of the TFEstimator tests, pickled by value (conftest.py)."""

from __future__ import annotations

import tempfile


def train_linear(args, ctx):
    """Fits ``label ~ Dense(1)(features)`` with tf-keras ``model.fit`` under the cluster's
    strategy on the fed ``train`` rows (``features``: ``args["width"]`` floats, ``label``: a
    float), ``args["epochs"]`` epochs of SGD at ``args["learning_rate"]``; the chief saves a
    SavedModel (input ``features``, output ``prediction``) to ``args["export_dir"]``."""
    import tensorflow as tf

    strategy = ctx.strategy()
    spec = {
        args["features"]: tf.io.FixedLenFeature([args["width"]], tf.float32),
        args["label"]: tf.io.FixedLenFeature([], tf.float32),
    }
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    data = ctx.feed("train", features=spec, batch_size=args["batch_size"], drop_remainder=True)
    data = data.map(lambda f: (f[args["features"]], f[args["label"]])).with_options(options)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(args["width"],), name="features"),
            tf.keras.layers.Dense(1, name="prediction", kernel_initializer="zeros"),
        ])
        model.compile(optimizer=tf.keras.optimizers.SGD(args["learning_rate"]), loss="mse")
    model.fit(data, epochs=args["epochs"], verbose=0)
    with tempfile.TemporaryDirectory() as scratch:  # every worker saves (MWMS), the chief's stays
        model.save(args["export_dir"] if ctx.is_chief else f"{scratch}/model")


def train_nothing_saved(args, ctx):
    """Reads its epochs and saves nothing."""
    for _ in range(args["epochs"]):
        for _ in ctx.feed("train"):
            pass
