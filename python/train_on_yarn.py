#!/usr/bin/env python3
"""Train a linear model y = w*x + b on TFRecord shards with ``cluster.run``: a Spark application
for ``spark-submit`` (on YARN in cluster mode too, its Python environment shipped with
``--archives``: see docs/deploying.md).

    spark-submit --master yarn --deploy-mode cluster \\
        --archives hdfs:///envs/ship-env.tar#environment \\
        --conf spark.yarn.appMasterEnv.PYSPARK_PYTHON=./environment/bin/python \\
        python/train_on_yarn.py hdfs:///data/line --demo 2000 --model hdfs:///models/line

DATA holds tf.train.Examples with float features ``x`` and ``y`` (``--demo N`` first writes N
of them, y = 2x + 1 plus noise, in four shards). ``--workers`` TensorFlow workers train in sync
(``MultiWorkerMirroredStrategy``), each on its exactly-once share of the shards
(``ctx.dataset``), with plain TensorFlow (no Keras); the chief saves the model as a
SavedModel to ``--model`` (``tf.saved_model.load(URL).predict(x)``). The driver itself imports
no TensorFlow: only the nodes, in the executors' containers, do.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

_log = logging.getLogger("train_on_yarn")


def write_demo(url: str, count: int, shards: int = 4) -> None:
    """*count* Examples ``{"x": x, "y": 2x + 1 + noise}`` in *shards* files under *url*."""
    import numpy as np

    from tfrecord_io import example, records

    rng = np.random.default_rng(0)
    per_shard = -(-count // shards)
    if "://" not in url:
        os.makedirs(url, exist_ok=True)  # (HDFS creates parent directories itself)
    for k in range(shards):
        def examples(k: int = k) -> Iterator[bytes]:
            for _ in range(k * per_shard, min(count, (k + 1) * per_shard)):
                x = float(rng.uniform(-1.0, 1.0))
                y = 2.0 * x + 1.0 + float(rng.normal(0.0, 0.01))
                yield example.encode_example({"x": [x], "y": [y]})

        records.write(f"{url.rstrip('/')}/part-{k:05d}.tfrecord", examples())
    _log.info("wrote %d demo Examples in %d shards under %s", count, shards, url)


def train(args: dict, ctx: Any) -> None:
    """A node's program: sync SGD on this worker's share of args["data"]; the chief saves the
    model to args["model"] (the other workers to a scratch directory: saving is collective)."""
    import tensorflow as tf

    from tfrecord_io import tf as tfr

    tfr.register_filesystems()  # hdfs:// for tf.saved_model.save
    strategy = ctx.strategy()
    spec = {"x": tf.io.FixedLenFeature([1], tf.float32),
            "y": tf.io.FixedLenFeature([1], tf.float32)}
    options = tf.data.Options()
    # every worker reads its own shards already (ctx.dataset): no sharding by TensorFlow
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    data = (ctx.dataset(args["data"]).repeat().batch(args["batch_size"])
            .map(lambda batch: tf.io.parse_example(batch, spec))
            .map(lambda f: (f["x"], f["y"])).with_options(options))

    class Line(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable([[0.0]])
            self.b = tf.Variable([0.0])

        @tf.function(input_signature=[tf.TensorSpec([None, 1], tf.float32)])
        def predict(self, x: Any) -> Any:
            return tf.matmul(x, self.w) + self.b

    with strategy.scope():
        model = Line()
    lr = args["learning_rate"]

    @tf.function
    def step(batches: Any) -> Any:
        def replica_step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model.predict(x) - y) ** 2)
            grads = tape.gradient(loss, [model.w, model.b])
            grads = tf.distribute.get_replica_context().all_reduce("mean", grads)
            model.w.assign_sub(lr * grads[0])
            model.b.assign_sub(lr * grads[1])
            return loss

        return strategy.run(replica_step, args=next(batches))

    batches = iter(strategy.experimental_distribute_dataset(data))
    for _ in range(args["steps"]):
        loss = step(batches)
    w, b = float(model.w.numpy()[0][0]), float(model.b.numpy()[0])
    _log.info("%s:%d: w=%.3f b=%.3f loss=%.5f", ctx.job_name, ctx.task_index, w, b,
              float(strategy.reduce("mean", loss, None)))
    target = args["model"] if ctx.is_chief else tempfile.mkdtemp()
    tf.saved_model.save(model, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="TFRecord files of Examples with x and y: a directory, "
                        "glob or hdfs:// URL")
    parser.add_argument("--model", required=True, help="where the chief saves the SavedModel")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--demo", type=int, metavar="N",
                        help="first write N synthetic Examples (y = 2x + 1) to DATA")
    ns = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")

    from tfrecord_io import cluster
    from tfrecord_io import spark as tfs

    _log.info("driver: python %s", sys.executable)
    if ns.demo:
        write_demo(ns.data, ns.demo)
    spark = tfs.session(app_name="train-on-yarn")  # master and settings from spark-submit
    try:
        args = {"data": ns.data, "model": ns.model, "steps": ns.steps,
                "batch_size": ns.batch_size, "learning_rate": ns.learning_rate}
        with cluster.run(spark.sparkContext, train, args, mode="sync",
                         num_workers=ns.workers) as c:
            c.wait()
        _log.info("model saved to %s", ns.model)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
