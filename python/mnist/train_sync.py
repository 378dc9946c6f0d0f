#!/usr/bin/env python3
"""MNIST on a Spark cluster: a custom training loop, synchronous, on 2 workers.

Each of ``--workers`` Spark tasks runs :func:`main` as a TensorFlow worker under
``MultiWorkerMirroredStrategy`` (``cluster.run(..., mode="sync")``): each reads its own share of
the TRAIN records from HDFS (``ctx.dataset``), gradients are summed across workers every step,
and Keras 3 layers and optimizer are driven by a ``tf.function`` training step (Keras 3's own
``model.fit`` does not run under this strategy; see ``keras_spark.py`` for ``fit``). The chief
then measures accuracy on the held-out EVAL images and writes the model to MODEL::

    spark-submit --master 'local-cluster[2,1,1024]' python/mnist/train_sync.py \\
        hdfs://127.0.0.1:9000/mnist/train hdfs://127.0.0.1:9000/mnist/eval \\
        hdfs://127.0.0.1:9000/mnist/sync.keras

Make the data with ``prepare.py``.
"""

from __future__ import annotations

import argparse
import logging

from tfrecord_io import cluster, spark
from tfrecord_io import tf as tfr

log = logging.getLogger("mnist.sync")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", help="training TFRecords (prepare.py's OUTPUT/train)")
    parser.add_argument("eval", help="held-out TFRecords (prepare.py's OUTPUT/eval)")
    parser.add_argument("model", help="where to write the model, e.g. hdfs://nn:8020/sync.keras")
    parser.add_argument("--workers", type=int, default=2, help="TensorFlow workers (default 2)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="per worker (default 64)")
    parser.add_argument("--train-images", type=int, default=8000,
                        help="records in TRAIN, to size an epoch (default 8000)")
    parser.add_argument("--log-dir", help="TensorBoard log directory (local, hdfs://, s3://, ...)")
    parser.add_argument("--tensorboard", action="store_true", help="serve --log-dir meanwhile")
    return parser.parse_args(argv)


def main(args: argparse.Namespace, ctx: cluster.NodeContext) -> None:
    """One worker's training: runs on every worker, worker 0 being the chief."""
    import keras
    import tensorflow as tf

    strategy = ctx.strategy()
    global_batch = args.batch_size * ctx.num_workers
    steps_per_epoch = args.train_images // global_batch
    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def batches(records: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
        parsed = tfr.parse_examples(records, spec, batch_size=batch_size)
        pixels = parsed.map(
            lambda f: (tf.cast(tf.io.decode_raw(f["image"], tf.uint8), tf.float32) / 255.0,
                       f["label"])
        )
        return pixels.prefetch(tf.data.AUTOTUNE)

    def train_dataset(_: tf.distribute.InputContext) -> tf.data.Dataset:
        # This worker's exactly-once share, shuffled, repeated: every worker takes the same
        # number of steps, whatever the size of its share.
        records = ctx.dataset(args.train).shuffle(10_000, seed=ctx.task_index).repeat()
        return batches(records, args.batch_size)

    log.info("%s:%d: %d steps of %d images per epoch", ctx.job_name, ctx.task_index,
             steps_per_epoch, global_batch)
    inputs = iter(strategy.distribute_datasets_from_function(train_dataset))
    with strategy.scope():
        model = keras.Sequential([
            keras.Input(shape=(784,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ])
        optimizer = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def replica_step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            per_example = loss_fn(labels, model(images, training=True))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        # sums over workers
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    @tf.function
    def train_step(iterator) -> tf.Tensor:  # noqa: ANN001 - a distributed iterator
        losses = strategy.run(replica_step, args=next(iterator))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    writer = tf.summary.create_file_writer(f"{ctx.log_dir}/train") if (
        ctx.log_dir and ctx.is_chief) else tf.summary.create_noop_writer()
    for epoch in range(args.epochs):
        total = 0.0
        for _ in range(steps_per_epoch):
            total += float(train_step(inputs))
        with writer.as_default():
            tf.summary.scalar("loss", total / steps_per_epoch, step=epoch)
        log.info("epoch %d/%d: loss %.4f", epoch + 1, args.epochs, total / steps_per_epoch)
    writer.close()

    correct = count = 0
    for images, labels in batches(tfr.dataset(args.eval), 500):
        predicted = tf.argmax(model(images, training=False), axis=1)
        correct += int(tf.reduce_sum(tf.cast(predicted == labels, tf.int32)))
        count += int(tf.size(labels))
    if ctx.is_chief:
        model.save(args.model)
        print(f"accuracy {correct / count:.4f} on {count} held-out images; model: {args.model}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args = parse_args()
    session = spark.session(app_name="mnist train_sync")
    try:
        with cluster.run(session.sparkContext, main, args, num_workers=args.workers,
                         mode="sync", tensorboard=args.tensorboard, log_dir=args.log_dir) as c:
            if c.tensorboard_url:
                log.info("TensorBoard: %s", c.tensorboard_url)
            c.wait()
    finally:
        session.stop()
