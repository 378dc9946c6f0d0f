#!/usr/bin/env python3
"""MNIST with Keras ``model.fit``, reading TFRecords (local, hdfs://, s3://, ...) with tfrecord-io.

Trains a small dense network on TRAIN, measures its accuracy on the held-out EVAL images and
writes the model (``.keras``) to MODEL. ``keras_single.py`` runs in one process;
``keras_spark.py`` is the same program on a Spark cluster (``diff`` them). Make the data with
``prepare.py``. TensorFlow is imported inside ``main`` so that a launcher can configure it first.
"""

from __future__ import annotations

import argparse
import logging
import tempfile

from tfrecord_io import cluster, spark
from tfrecord_io import tf as tfr

log = logging.getLogger("mnist.keras")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", help="training TFRecords (prepare.py's OUTPUT/train)")
    parser.add_argument("eval", help="held-out TFRecords (prepare.py's OUTPUT/eval)")
    parser.add_argument("model", help="where to write the model, e.g. hdfs://nn:8020/mnist.keras")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="per worker (default 64)")
    return parser.parse_args(argv)


def main(args: argparse.Namespace, ctx: cluster.NodeContext) -> None:
    import tensorflow as tf

    strategy = ctx.strategy()  # first: a multi-worker one must precede any op
    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF

    def pixels(image: tf.Tensor) -> tf.Tensor:
        return tf.cast(tf.io.decode_raw(image, tf.uint8), tf.float32) / 255.0

    def pipeline(records: tf.data.Dataset, training: bool) -> tf.data.Dataset:
        """(pixels in [0, 1], label) batches; already split among workers, so no auto-sharding."""
        records = records.shuffle(10_000, seed=1) if training else records
        batches = tfr.parse_examples(
            records, spec, batch_size=args.batch_size, drop_remainder=training
        )
        images = batches.map(lambda f: (pixels(f["image"]), f["label"]))
        return images.prefetch(tf.data.AUTOTUNE).with_options(options)

    log.info("Training on %s, evaluating on %s", args.train, args.eval)
    train = pipeline(ctx.dataset(args.train), training=True)
    held_out = pipeline(tfr.dataset(args.eval), training=False)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(784,)),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(10),
        ])
        model.compile(
            optimizer=tf.keras.optimizers.Adam(1e-3),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    model.fit(train, epochs=args.epochs, verbose=2)
    loss, accuracy = model.evaluate(held_out, verbose=0)
    with tempfile.TemporaryDirectory() as scratch:  # all save (metrics sync on read)
        model.save(args.model if ctx.is_chief else f"{scratch}/model.keras")
    print(f"accuracy {accuracy:.4f} (loss {loss:.4f}) on the held-out images; model: {args.model}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args = parse_args()
    cluster.run(spark.session().sparkContext, main, args, num_workers=2, keras="legacy").wait()
