#!/usr/bin/env python3
"""Train the CNN on 2 workers in sync mode from image shards on HDFS.

TRAIN and VALIDATION are the ``train`` and ``validation`` sets that ``tfrecord-io images``
writes (records of the encoded files in build_image_data.py's layout). Each of ``--workers``
TensorFlow workers (``cluster.run(..., mode="sync")``, MultiWorkerMirroredStrategy) reads its
exactly-once share of TRAIN (``ctx.dataset``), decodes and randomly translates the images in its
``tf.data`` pipeline and trains with tf-keras ``model.fit``; then every worker measures the
accuracy on the held-out VALIDATION images (summed over the workers) and the chief writes a
SavedModel to MODEL (input: the encoded files, see ``cnn.export``)::

    tfrecord-io images /data/mnist-png hdfs://127.0.0.1:9000/images --shards 4 \\
        --validation-fraction 0.2
    spark-submit --master 'local-cluster[2,1,1024]' python/images/train_shards.py \\
        hdfs://127.0.0.1:9000/images/train hdfs://127.0.0.1:9000/images/validation \\
        hdfs://127.0.0.1:9000/models/shards
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from pyspark import cloudpickle

from tfrecord_io import cluster, spark

import cnn

# The nodes do not have python/images on their path: the model module travels by value.
cloudpickle.register_pickle_by_value(cnn)

log = logging.getLogger("images.shards")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", help="the training shards (tfrecord-io images' OUT/train)")
    parser.add_argument("validation", help="the held-out shards (OUT/validation)")
    parser.add_argument("model", help="where the chief writes the SavedModel")
    parser.add_argument("--workers", type=int, default=2, help="TensorFlow workers (default 2)")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker (default 32)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int,
                        help="seeds the weights' start and the augmentation (default: none)")
    parser.add_argument("--train-images", type=int,
                        help="records in TRAIN, to size an epoch (default: counted)")
    return parser.parse_args(argv)


def main(args: argparse.Namespace, ctx: cluster.NodeContext) -> None:
    """One worker's training; worker 0 is the chief."""

    from tfrecord_io import tf as tfr

    strategy = ctx.strategy()  # first: a multi-worker strategy must precede any op
    cnn.seed(args.seed)
    global_batch = args.batch_size * ctx.num_workers
    steps = args.train_images // global_batch
    # The worker's share, shuffled and repeated: every worker takes the same number of steps.
    shared = ctx.dataset(args.train).shuffle(10_000, seed=ctx.task_index).repeat()
    train = cnn.pairs(shared, args.batch_size, training=True)
    held_out = cnn.pairs(tfr.dataset(args.validation), 500, training=False)
    log.info("%s: %d steps of %d images per epoch", ctx.name, steps, global_batch)
    with strategy.scope():
        model = cnn.build(args.learning_rate)
    model.fit(train, epochs=args.epochs, steps_per_epoch=steps, verbose=2,
              callbacks=[ctx.keras_callback()])
    loss, accuracy = model.evaluate(held_out, verbose=0)
    cnn.export(model, args.model, is_chief=ctx.is_chief)
    if ctx.is_chief:
        print(f"accuracy {accuracy:.4f} (loss {loss:.4f}) on the held-out images; "
              f"model: {args.model}")


def train(session: Any, args: argparse.Namespace) -> cluster.Result:
    """Run the training cluster (counting TRAIN first unless ``--train-images``): its result."""
    if args.train_images is None:
        args.train_images = (session.read.format("tfrecord").option("recordType", "ByteArray")
                             .load(args.train).count())
    with cluster.run(session.sparkContext, main, args, num_workers=args.workers, mode="sync",
                     keras="legacy") as c:
        return c.wait()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    spark_session = spark.session(app_name="images train_shards")
    try:
        result = train(spark_session, parse_args())
        log.info("trained in %.1f s", result.elapsed)
    finally:
        spark_session.stop()
