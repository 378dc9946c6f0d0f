#!/usr/bin/env python3
"""MNIST on a Spark cluster: parameter-server training, 1 ps + 2 workers + a chief.

``cluster.run(..., mode="ps", num_ps=1, num_workers=2)`` starts a parameter server and two
worker servers on Spark executors and runs :func:`main` on the chief, which coordinates
(``ParameterServerStrategy`` + ``ClusterCoordinator``): the model's variables live on the ps,
training steps are scheduled on whichever worker is free, and each worker reads its own share of
the TRAIN records from HDFS with TensorFlow's reader (``ctx.dataset`` is a dataset function
for ``create_per_worker_dataset``). Keras 3 layers and optimizer, a custom training step (Keras
3's ``model.fit`` does not run under this strategy). The chief then measures accuracy on the
held-out EVAL images and writes the model to MODEL::

    spark-submit --master 'local-cluster[4,1,1024]' python/mnist/train_ps.py \\
        hdfs://127.0.0.1:9000/mnist/train hdfs://127.0.0.1:9000/mnist/eval \\
        hdfs://127.0.0.1:9000/mnist/ps.keras

It needs 4 Spark task slots (ps, 2 workers, chief). Make the data with ``prepare.py``.
"""

from __future__ import annotations

import argparse
import logging

from tfrecord_io import cluster, spark
from tfrecord_io import tf as tfr

log = logging.getLogger("mnist.ps")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", help="training TFRecords (prepare.py's OUTPUT/train)")
    parser.add_argument("eval", help="held-out TFRecords (prepare.py's OUTPUT/eval)")
    parser.add_argument("model", help="where to write the model, e.g. hdfs://nn:8020/ps.keras")
    parser.add_argument("--workers", type=int, default=2, help="worker servers (default 2)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="per step (default 64)")
    parser.add_argument("--train-images", type=int, default=8000,
                        help="records in TRAIN, to size an epoch (default 8000)")
    return parser.parse_args(argv)


def main(args: argparse.Namespace, ctx: cluster.NodeContext) -> None:
    """The coordinator: runs on the chief only; the ps and the workers serve."""
    import keras
    import tensorflow as tf

    strategy = ctx.strategy()
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    steps_per_epoch = args.train_images // args.batch_size
    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def batches(records: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
        parsed = tfr.parse_examples(records, spec, batch_size=batch_size)
        return parsed.map(
            lambda f: (tf.cast(tf.io.decode_raw(f["image"], tf.uint8), tf.float32) / 255.0,
                       f["label"])
        )

    records_fn = ctx.dataset(args.train)  # built on each worker; TensorFlow ops only

    def train_dataset(*context):  # noqa: ANN002, ANN202 - as create_per_worker_dataset calls it
        records = records_fn(*context).shuffle(10_000).repeat()
        return batches(records, args.batch_size).prefetch(2)

    with strategy.scope():
        model = keras.Sequential([
            keras.Input(shape=(784,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ])
        optimizer = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    inputs = iter(coordinator.create_per_worker_dataset(train_dataset))

    @tf.function
    def train_step(iterator) -> tf.Tensor:  # noqa: ANN001 - a per-worker iterator
        def replica_step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(images, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        return strategy.run(replica_step, args=next(iterator))

    log.info("%d steps of %d images per epoch, on %d workers", steps_per_epoch,
             args.batch_size, ctx.num_workers)
    for epoch in range(args.epochs):
        losses = [coordinator.schedule(train_step, args=(inputs,))
                  for _ in range(steps_per_epoch)]
        coordinator.join()
        mean = sum(float(loss.fetch()) for loss in losses) / len(losses)
        log.info("epoch %d/%d: loss %.4f", epoch + 1, args.epochs, mean)

    correct = count = 0
    for images, labels in batches(tfr.dataset(args.eval), 500):
        predicted = tf.argmax(model(images, training=False), axis=1)
        correct += int(tf.reduce_sum(tf.cast(predicted == labels, tf.int32)))
        count += int(tf.size(labels))
    model.save(args.model)
    print(f"accuracy {correct / count:.4f} on {count} held-out images; model: {args.model}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args = parse_args()
    session = spark.session(app_name="mnist train_ps")
    try:
        with cluster.run(session.sparkContext, main, args, num_workers=args.workers, num_ps=1,
                         mode="ps") as c:
            c.wait()
    finally:
        session.stop()
