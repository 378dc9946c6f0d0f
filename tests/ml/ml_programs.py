"""Training functions (``train_fn``) of the TFEstimator tests, pickled by value (conftest.py)."""

from __future__ import annotations

import tempfile


def train_linear(args, ctx, data=None):
    """Fits ``label ~ Dense(1)(features)`` with tf-keras ``model.fit`` under the cluster's
    strategy on the fed ``train`` rows (``features``: ``args["width"]`` floats, ``label``: a
    float), ``args["epochs"]`` epochs of SGD at ``args["learning_rate"]``, each epoch's loss
    reported (``ctx.keras_callback()``); the chief saves a
    SavedModel (input ``features``, output ``prediction``) to ``args["export_dir"]``."""
    import tensorflow as tf

    strategy = ctx.strategy()
    spec = {
        args["features"]: tf.io.FixedLenFeature([args["width"]], tf.float32),
        args["label"]: tf.io.FixedLenFeature([], tf.float32),
    }
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    if data is None:
        data = ctx.feed("train", features=spec, batch_size=args["batch_size"],
                        drop_remainder=True)
    else:  # serialized Examples
        data = data.batch(args["batch_size"], drop_remainder=True).map(
            lambda records: tf.io.parse_example(records, spec))
    data = data.map(lambda f: (f[args["features"]], f[args["label"]])).with_options(options)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(args["width"],), name="features"),
            tf.keras.layers.Dense(1, name="prediction", kernel_initializer="zeros"),
        ])
        model.compile(optimizer=tf.keras.optimizers.SGD(args["learning_rate"]), loss="mse")
    model.fit(data, epochs=args["epochs"], verbose=0, callbacks=[ctx.keras_callback()])
    with tempfile.TemporaryDirectory() as scratch:  # every worker saves (MWMS), the chief's stays
        model.save(args["export_dir"] if ctx.is_chief else f"{scratch}/model")


def train_linear_from_files(args, ctx):
    """``train_linear`` on the files of ``args["data_dirs"]["train"]`` (inputMode
    "tensorflow"), this worker's share of them, ``args["epochs"]`` passes; reports each node's
    record count first (``ctx.report(records=...)``)."""
    ctx.strategy()  # before any TensorFlow op: MultiWorkerMirroredStrategy needs it so
    records = ctx.dataset(args["data_dirs"]["train"])
    ctx.report(records=sum(1 for _ in records))
    train_linear(args, ctx, data=records)


def train_linear_failing_once(args, ctx):
    """On the first attempt: reads one fed epoch of "train" and raises; then ``train_linear``
    (which reads every epoch again, fed again to the new attempt)."""
    if ctx.attempt == 0:
        for _ in ctx.feed("train"):
            pass
        raise RuntimeError("planned failure on the first attempt")
    train_linear(args, ctx)


def train_nothing_saved(args, ctx):
    """Reads its epochs and saves nothing."""
    for _ in range(args["epochs"]):
        for _ in ctx.feed("train"):
            pass


def train_linear_ps(args, ctx):
    """mode="ps": on the chief (the coordinator, the node fed), fits ``label ~ w . features +
    b`` with variables on the parameter server and SGD steps scheduled on the workers, one per
    fed batch; reports each epoch's mean loss (``ctx.report(step=epoch, loss=...)``); saves a
    SavedModel of the trained weights (input ``features``, output ``prediction``)."""
    import numpy as np
    import tensorflow as tf

    width, rate = args["width"], args["learning_rate"]
    strategy = ctx.strategy()
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    spec = {
        args["features"]: tf.io.FixedLenFeature([width], tf.float32),
        args["label"]: tf.io.FixedLenFeature([], tf.float32),
    }
    with strategy.scope():
        w = tf.Variable(tf.zeros([width, 1]), name="w")
        b = tf.Variable(0.0, name="b")

    @tf.function
    def step(x, y):
        def replica(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w)[:, 0] + b - y))
            grad_w, grad_b = tape.gradient(loss, [w, b])
            w.assign_sub(rate * grad_w)
            b.assign_sub(rate * grad_b)
            return loss

        return strategy.run(replica, args=(x, y))

    for epoch in range(1, args["epochs"] + 1):
        losses = [coordinator.schedule(step, args=(batch[args["features"]],
                                                   batch[args["label"]]))
                  for batch in ctx.feed("train", features=spec, batch_size=args["batch_size"])]
        coordinator.join()
        ctx.report(step=epoch, loss=float(np.mean([loss.fetch() for loss in losses])))

    served = tf.Module()
    served.w = tf.Variable(w.read_value())
    served.b = tf.Variable(b.read_value())

    @tf.function(input_signature=[tf.TensorSpec([None, width], tf.float32, name="features")])
    def serve(features):
        return {"prediction": tf.matmul(features, served.w)[:, 0] + served.b}

    tf.saved_model.save(served, args["export_dir"], signatures={"serving_default": serve})


def train_until_stopped(args, ctx):
    """Sleeps past any test's timeout (the cluster stops it)."""
    import time

    time.sleep(600)


def train_summing_feeds(args, ctx):
    """Reads one epoch of each feed of ``args["feeds"]``, parsing the float column
    ``args["column"]``, and reports the sum of its values in each (``ctx.report(train=...,
    validation=...)``); the chief saves a SavedModel (input ``x``, output ``y`` = 2 x)."""
    import tensorflow as tf

    spec = {args["column"]: tf.io.FixedLenFeature([], tf.float32)}
    sums = {}
    for feed in args["feeds"]:
        batches = ctx.feed(feed, features=spec, batch_size=4)
        sums[feed] = float(sum(tf.reduce_sum(b[args["column"]]).numpy() for b in batches))
    ctx.report(**sums)
    if ctx.is_chief:
        _save_doubler(args["export_dir"])


def _save_doubler(export_dir):
    """A SavedModel whose serving signature doubles its float input ``x`` into ``y``."""
    import tensorflow as tf

    doubler = tf.Module()
    doubler.serve = tf.function(lambda x: {"y": 2 * x},
                                input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    tf.saved_model.save(doubler, export_dir, signatures={"serving_default": doubler.serve})


def train_saving_then_failing(args, ctx):
    """Reads its epochs; the chief saves a model to ``args["export_dir"]`` (as
    ``train_summing_feeds`` does); then every node raises."""
    for _ in range(args["epochs"]):
        for _ in ctx.feed("train"):
            pass
    if ctx.is_chief:
        _save_doubler(args["export_dir"])
    raise RuntimeError("planned failure after saving")
