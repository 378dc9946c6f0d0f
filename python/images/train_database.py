#!/usr/bin/env python3
"""Train the CNN on 2 workers in sync mode, fed the encoded images of a database table.

Spark's JDBC source reads the training rows of the table (``id``, ``label``, ``image``: the
encoded file; every row but the held-out ones, ``id % 5 = 0``, see ``database.py``) in
``--partitions`` parallel queries over ranges of ``id``; ``Cluster.train`` feeds them,
``--epochs`` times, to the workers' ``ctx.feed("train")`` (``cluster.run(...,
input_mode="spark")``), where the ``tf.data`` pipeline decodes and translates the images as
``train_shards.py``'s does. The chief writes a SavedModel to MODEL; the held-out rows are then
scored with ``ml.predict`` (``evaluate.py``'s evaluation)::

    spark-submit --master 'local-cluster[2,2,1024]' --jars postgresql.jar \\
        python/images/train_database.py jdbc:postgresql://127.0.0.1:5432/images \\
        hdfs://127.0.0.1:9000/models/database --user postgres

It needs 4 task slots: 2 for the workers, the others for the feeding tasks.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from pyspark import cloudpickle

from tfrecord_io import cluster, spark

import cnn
import database
import evaluate

# The nodes do not have python/images on their path: the model module travels by value.
cloudpickle.register_pickle_by_value(cnn)

log = logging.getLogger("images.database")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the database, jdbc:postgresql://HOST:PORT/DB")
    parser.add_argument("model", help="where the chief writes the SavedModel")
    parser.add_argument("--user", help="the database user")
    parser.add_argument("--password", help="the database password")
    parser.add_argument("--table", default="images", help="the table (default images)")
    parser.add_argument("--partitions", type=int, default=4, help="JDBC queries (default 4)")
    parser.add_argument("--workers", type=int, default=2, help="TensorFlow workers (default 2)")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker (default 32)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int,
                        help="seeds the weights' start and the augmentation (default: none)")
    return parser.parse_args(argv)


def main(args: dict[str, Any], ctx: cluster.NodeContext) -> None:
    """One worker's training on the fed rows (``image``, ``label``): ``args["epochs"]`` fed
    epochs at ``args["learning_rate"]``, each epoch's loss and accuracy reported
    (``ctx.keras_callback()``); the chief saves the model to ``args["export_dir"]``. Also the
    ``train_fn`` of ``grid_search.py``'s ``TFEstimator``, which passes the same keys."""
    strategy = ctx.strategy()  # first: a multi-worker strategy must precede any op
    cnn.seed(args.get("seed"))
    fed = ctx.feed("train").shuffle(4_000, seed=ctx.task_index)
    train = cnn.pairs(fed, args["batch_size"], training=True, image="image", label="label")
    with strategy.scope():
        model = cnn.build(args["learning_rate"])
    model.fit(train, epochs=args["epochs"], verbose=2, callbacks=[ctx.keras_callback()])
    cnn.export(model, args["export_dir"], is_chief=ctx.is_chief)


def train(session: Any, args: argparse.Namespace) -> cluster.Result:
    """Read the training rows, feed them to a training cluster: its result."""
    options = database.jdbc_options(args.url, args.user, args.password)
    rows = database.read_rows(session, options, table=args.table, partitions=args.partitions)
    node_args = {"learning_rate": args.learning_rate, "epochs": args.epochs,
                 "batch_size": args.batch_size, "export_dir": args.model, "seed": args.seed}
    with cluster.run(session.sparkContext, main, node_args, num_workers=args.workers,
                     mode="sync", input_mode="spark", keras="legacy") as c:
        report = c.train(rows.select("image", "label"), num_epochs=args.epochs)
        log.info("fed %d epochs of %s rows", len(report.epochs),
                 sum(report.epochs[0].records.values()) if report.epochs else 0)
        return c.wait()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    cli = parse_args()
    spark_session = spark.session(app_name="images train_database")
    try:
        result = train(spark_session, cli)
        log.info("trained in %.1f s", result.elapsed)
        held_out = database.read_rows(
            spark_session, database.jdbc_options(cli.url, cli.user, cli.password),
            table=cli.table, held_out=True).select("image", "label")
        scores = evaluate.evaluate(held_out, cli.model)
        print(scores.table())
        print(f"accuracy {scores.accuracy:.4f} on {scores.images} held-out images; "
              f"model: {cli.model}")
    finally:
        spark_session.stop()
