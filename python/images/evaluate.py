#!/usr/bin/env python3
"""Score held-out images with a trained CNN, distributed: accuracy overall and per class.

MODEL is a SavedModel written by ``train_shards.py``, ``train_database.py`` or
``grid_search.py`` (input: the encoded files). VALIDATION is either a directory of image shards
(``tfrecord-io images``' ``OUT/validation``, read with ``spark.read.format("tfrecord")``) or a
``jdbc:`` URL, whose held-out rows (``id % 5 = 0``, see ``database.py``) are read with Spark's
JDBC source. :func:`tfrecord_io.ml.predict` runs the model in Spark's Python workers; the
counts per class are a Spark SQL aggregation::

    spark-submit --master 'local-cluster[2,1,1024]' python/images/evaluate.py \\
        hdfs://127.0.0.1:9000/models/shards hdfs://127.0.0.1:9000/images/validation
    spark-submit --master 'local-cluster[2,1,1024]' --jars postgresql.jar \\
        python/images/evaluate.py hdfs://127.0.0.1:9000/models/database \\
        jdbc:postgresql://127.0.0.1:5432/images --user postgres
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from typing import Any

from tfrecord_io import ml, spark

import database

log = logging.getLogger("images.evaluate")


@dataclass(frozen=True)
class ClassAccuracy:
    """How many images of one class were scored, and how many of them right."""

    label: int
    images: int
    correct: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.images if self.images else 0.0


@dataclass(frozen=True)
class Evaluation:
    """The per-class counts of one evaluation, in label order."""

    classes: list[ClassAccuracy]

    @property
    def images(self) -> int:
        return sum(c.images for c in self.classes)

    @property
    def accuracy(self) -> float:
        return sum(c.correct for c in self.classes) / self.images if self.images else 0.0

    def table(self) -> str:
        """A Markdown table: one line per class, then the total."""
        lines = ["| class | images | correct | accuracy |", "|---:|---:|---:|---:|"]
        lines += [f"| {c.label} | {c.images} | {c.correct} | {c.accuracy:.4f} |"
                  for c in self.classes]
        lines.append(f"| all | {self.images} | {sum(c.correct for c in self.classes)} | "
                     f"{self.accuracy:.4f} |")
        return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the SavedModel (local, hdfs://, s3://, ...)")
    parser.add_argument("validation", help="held-out image shards, or a jdbc: URL")
    parser.add_argument("--user", help="the database user (with a jdbc: URL)")
    parser.add_argument("--password", help="the database password (with a jdbc: URL)")
    parser.add_argument("--table", default="images", help="the table (default images)")
    parser.add_argument("--batch-size", type=int, default=256, help="images per model call")
    return parser.parse_args(argv)


def validation_rows(session: Any, args: argparse.Namespace) -> Any:
    """The held-out images as a DataFrame of ``image`` (the encoded file) and ``label``."""
    if args.validation.startswith("jdbc:"):
        options = database.jdbc_options(args.validation, args.user, args.password)
        return database.read_rows(session, options, table=args.table,
                                  held_out=True).select("image", "label")
    shards = session.read.format("tfrecord").load(args.validation)
    return shards.selectExpr("`image/encoded` AS image", "`image/class/label` AS label")


def evaluate(rows: Any, model: str, batch_size: int = 256) -> Evaluation:
    """Score *rows* (``image``, ``label``) with *model* (``ml.predict``, in the executors) and
    count, per label, the rows and the right predictions (in Spark SQL)."""
    from pyspark.sql import functions as F

    scored = ml.predict(rows, model, input_mapping={"image": "image"},
                        output_mapping={"prediction": "prediction"}, batch_size=batch_size)
    counts = (scored.groupBy("label")
              .agg(F.count("*").alias("images"),
                   F.sum((F.col("prediction") == F.col("label")).cast("long")).alias("correct"))
              .orderBy("label").collect())
    return Evaluation([ClassAccuracy(int(r.label), int(r.images), int(r.correct))
                       for r in counts])


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    cli = parse_args()
    spark_session = spark.session(app_name="images evaluate")
    try:
        result = evaluate(validation_rows(spark_session, cli), cli.model, cli.batch_size)
        print(result.table())
        print(f"accuracy {result.accuracy:.4f} on {result.images} held-out images")
    finally:
        spark_session.stop()
