#!/usr/bin/env python3
"""MNIST from a DataFrame: a Spark ML TFEstimator feeds the rows to 2 TensorFlow workers.

No TFRecord files: the MNIST test set becomes a DataFrame (``image``: 784 floats in [0, 1],
``label``, ``validation``: true for the last 2,000 rows), and :class:`tfrecord_io.ml.TFEstimator`
trains on it with ``input_mode="spark"``: the 8,000 training rows are fed to the workers'
``ctx.feed("train")``, the 2,000 validation rows to a second feed, ``ctx.feed("validation")``.
Each of the 2 workers runs :func:`main` (tf-keras ``model.fit`` under
MultiWorkerMirroredStrategy), evaluates on its share of the validation feed (the accuracy is
summed over both workers) and the chief exports a SavedModel. ``fit`` returns a
:class:`tfrecord_io.ml.TFModel`, whose ``transform`` then scores the 2,000 validation rows in
Spark's Python workers; the accuracy of its ``scores`` is computed in Spark SQL::

    spark-submit --master 'local-cluster[2,2,1024]' python/mnist/train_spark_feed.py \\
        ../shared/data/mnist hdfs://127.0.0.1:9000/models/feed

It needs 4 task slots: 2 for the workers, the others for the feeding tasks.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from typing import Any

from tfrecord_io import ml, spark
from tfrecord_io.datasets import mnist

log = logging.getLogger("mnist.feed")

#: Rows of the test set used for training; the rest are the validation rows.
TRAIN_IMAGES = 8000


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="directory of the MNIST IDX files (a path or URL)")
    parser.add_argument("export", help="where the models go (a subdirectory per fit)")
    parser.add_argument("--workers", type=int, default=2, help="TensorFlow workers (default 2)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64,
                        help="rows per training step over all workers: each worker steps on "
                             "BATCH_SIZE / workers of its own rows (default 64)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--partitions", type=int, default=8, help="of the DataFrame (default 8)")
    return parser.parse_args(argv)


def main(args: dict[str, Any], ctx: Any) -> None:
    """One worker's training (the estimator's ``train_fn``): runs on every worker."""
    import tensorflow as tf

    from tfrecord_io import tf as tfr

    strategy = ctx.strategy()  # first: a multi-worker strategy must precede any op
    spec = {
        "image": tf.io.FixedLenFeature([784], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    options = tf.data.Options()  # the feed already gives each worker its own rows
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF

    def pairs(records: tf.data.Dataset, batch_size: int, training: bool) -> tf.data.Dataset:
        batches = tfr.parse_examples(records, spec, batch_size=batch_size,
                                     drop_remainder=training)
        return batches.map(lambda f: (f["image"], f["label"])).with_options(options)

    train = pairs(ctx.feed("train").shuffle(4000, seed=ctx.task_index), args["batch_size"], True)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(784,), name="image"),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(10, name="dense_1"),  # logits: the "scores" column
        ])
        model.compile(
            optimizer=tf.keras.optimizers.Adam(args["learning_rate"]),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    model.fit(train, epochs=args["epochs"], verbose=2)  # one fed epoch per pass
    loss, accuracy = model.evaluate(pairs(ctx.feed("validation"), 100, False), verbose=0)
    print(f"accuracy {accuracy:.4f} (loss {loss:.4f}) on the validation feed, on the workers")
    with tempfile.TemporaryDirectory() as scratch:  # all save (metrics sync on read)
        model.save(args["export_dir"] if ctx.is_chief else f"{scratch}/model")


def mnist_frame(session: Any, source: str, partitions: int) -> Any:
    """The MNIST test set as a DataFrame: ``image`` (array<float> of 784 pixels in [0, 1]),
    ``label`` (long), ``validation`` (the rows after the first :data:`TRAIN_IMAGES`)."""
    import numpy as np
    import pyarrow as pa

    test = next(s for s in mnist.load(source) if s.name == "test")
    pixels = (test.images.reshape(len(test), 784).astype(np.float32) / 255.0).reshape(-1)
    table = pa.table({
        "image": pa.FixedSizeListArray.from_arrays(pa.array(pixels), 784).cast(
            pa.list_(pa.float32())),
        "label": pa.array(test.labels.astype(np.int64)),
        "validation": pa.array(np.arange(len(test)) >= TRAIN_IMAGES),
    })
    return session.createDataFrame(table).repartition(partitions)


def run(session: Any, args: argparse.Namespace) -> tuple[ml.TFModel, float]:
    """Fit on the training rows (validation rows in the second feed), then score the
    validation rows with ``TFModel.transform``: the model and that accuracy."""
    from pyspark.sql import functions as F

    frame = mnist_frame(session, args.source, args.partitions).cache()
    estimator = ml.TFEstimator(
        main, {"learning_rate": args.learning_rate},
        numWorkers=args.workers, epochs=args.epochs, batchSize=args.batch_size, keras="legacy",
        exportDir=args.export, featureCols=["image", "label"],
        validationIndicatorCol="validation",
        inputMapping={"image": "image"}, outputMapping={"dense_1": "scores"},
    )
    model = estimator.fit(frame)
    scored = model.transform(frame.where("validation"))
    predicted = F.array_position("scores", F.array_max("scores")) - 1  # argmax
    row = scored.select(
        F.avg((predicted == F.col("label")).cast("double")).alias("accuracy"),
        F.count("*").alias("rows"),
    ).first()
    print(f"accuracy {row.accuracy:.4f} on {row.rows} validation rows with TFModel.transform; "
          f"model: {model.getModelDir()}")
    frame.unpersist()
    return model, row.accuracy


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    session = spark.session(app_name="mnist train_spark_feed")
    try:
        run(session, parse_args())
    finally:
        session.stop()
