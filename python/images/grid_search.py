#!/usr/bin/env python3
"""Which learning rate? A CrossValidator over two rates, each fit a CNN trained on the cluster.

``ml.TFEstimator`` runs ``train_database.main`` (the workers' training on fed rows) as its
``train_fn``; its ``learning_rate`` param is what ``ParamGridBuilder`` varies. ``CrossValidator``
fits it ``--folds`` times per rate on the database's training rows (``id % 5 <> 0``, ids up to
``--limit``), scores each held-out fold with the fitted ``TFModel`` (``ml.predict`` of the
model's ``prediction``) and ``MulticlassClassificationEvaluator``'s accuracy, and fits the
winning rate once more on all the rows. Printed: the mean accuracy per rate (``avgMetrics``),
the winner, and why: the per-epoch training loss and accuracy each rate's fits reported
(``model.summary.history``), and the winner's accuracy on the held-out rows::

    spark-submit --master 'local-cluster[2,2,1024]' --jars postgresql.jar \\
        python/images/grid_search.py jdbc:postgresql://127.0.0.1:5432/images \\
        hdfs://127.0.0.1:9000/models/grid --user postgres
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from typing import Any

from pyspark import cloudpickle

from tfrecord_io import ml, spark

import database
import evaluate
import train_database

# The nodes do not have python/images on their path: the train_fn travels by value.
cloudpickle.register_pickle_by_value(train_database)

log = logging.getLogger("images.grid")


@dataclass(frozen=True)
class Search:
    """A finished search: the rates, their mean fold accuracy, the winner and the models."""

    rates: list[float]
    accuracies: list[float]
    best_rate: float
    cv_model: Any

    def point_summaries(self) -> list[Any]:
        """Each rate's training summary (of its first fold's fit)."""
        return [self.cv_model.subModels[0][i].summary for i in range(len(self.rates))]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the database, jdbc:postgresql://HOST:PORT/DB")
    parser.add_argument("export", help="where the fits' models go (a directory per fit)")
    parser.add_argument("--user", help="the database user")
    parser.add_argument("--password", help="the database password")
    parser.add_argument("--table", default="images", help="the table (default images)")
    parser.add_argument("--rates", type=float, nargs="+", default=[1e-5, 1e-3],
                        help="learning rates to try (default 1e-5 1e-3)")
    parser.add_argument("--limit", type=int, default=2500,
                        help="search on the rows with ids up to this (default 2500)")
    parser.add_argument("--folds", type=int, default=2, help="(default 2)")
    parser.add_argument("--workers", type=int, default=2, help="TensorFlow workers (default 2)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker (default 32)")
    return parser.parse_args(argv)


def search(session: Any, args: argparse.Namespace) -> Search:
    """Cross-validate the rates on the training rows up to ``--limit``."""
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    options = database.jdbc_options(args.url, args.user, args.password)
    rows = database.read_rows(session, options, table=args.table, limit=args.limit)
    estimator = ml.TFEstimator(
        train_database.main, {"learning_rate": args.rates[0]},
        numWorkers=args.workers, epochs=args.epochs, batchSize=args.batch_size,
        keras="legacy", exportDir=args.export, featureCols=["image", "label"],
        inputMapping={"image": "image"}, outputMapping={"prediction": "prediction"},
    )
    rate = estimator.getParam("learning_rate")
    grid = ParamGridBuilder().addGrid(rate, args.rates).build()
    accuracy = MulticlassClassificationEvaluator(predictionCol="prediction", labelCol="label",
                                                 metricName="accuracy")
    cv = CrossValidator(estimator=estimator, estimatorParamMaps=grid, evaluator=accuracy,
                        numFolds=args.folds, seed=7, collectSubModels=True)
    cv_model = cv.fit(rows.select("image", "label").cache())
    accuracies = list(cv_model.avgMetrics)
    best = max(range(len(grid)), key=accuracies.__getitem__)
    return Search([point[rate] for point in grid], accuracies, grid[best][rate], cv_model)


def report(found: Search) -> str:
    """The search as text: a line per rate, the winner and why."""
    lines = ["| learning rate | mean fold accuracy | training loss per epoch | "
             "training accuracy per epoch |", "|---:|---:|---|---|"]
    points = zip(found.rates, found.accuracies, found.point_summaries(), strict=True)
    for rate, accuracy, summary in points:
        losses = ", ".join(f"{v:.3f}" for v in summary.history("loss", node="worker:0"))
        accs = ", ".join(f"{v:.3f}" for v in summary.history("accuracy", node="worker:0"))
        lines.append(f"| {rate:g} | {accuracy:.4f} | {losses} | {accs} |")
    best = found.cv_model.bestModel.summary
    lines.append(f"winner: learning rate {found.best_rate:g} (highest mean fold accuracy); "
                 f"its final fit's loss per epoch {best.history('loss', node='worker:0')}, "
                 f"accuracy per epoch {best.history('accuracy', node='worker:0')}")
    return "\n".join(lines)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    cli = parse_args()
    spark_session = spark.session(app_name="images grid_search")
    try:
        result = search(spark_session, cli)
        print(report(result))
        held_out = database.read_rows(
            spark_session, database.jdbc_options(cli.url, cli.user, cli.password),
            table=cli.table, held_out=True).select("image", "label")
        scores = evaluate.evaluate(held_out, result.cv_model.bestModel.getModelDir())
        print(f"accuracy {scores.accuracy:.4f} of the winner on {scores.images} held-out images")
    finally:
        spark_session.stop()
