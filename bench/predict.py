#!/usr/bin/env python3
"""How fast ``tfrecord_io.ml.predict`` scores a DataFrame, against the same model called in one
process on the same rows.

    .venv/bin/python bench/predict.py                        # ~3 min on 2 cores
    .venv/bin/python bench/predict.py --rows 100000 --out bench/results-predict.md

The model is MNIST-shaped: a Keras 3 784-128-10 dense network exported as a SavedModel
(``model.export``), untrained (the weights do not change the cost). The data are ``--rows``
rows of ``image`` (array<float> of 784 random values) and an ``id``, in ``--partitions``
partitions, cached in Spark before timing.

Rows of the table:

* **one process**: the SavedModel's ``serving_default`` called from this process on numpy
  batches of ``--batch-size`` rows already in memory: the model's own cost, no Spark.
* **ml.predict, first pass**: ``ml.predict(df, ...)`` written to Spark's ``noop`` sink (every
  row goes through the model and back into the JVM), on a fresh set of Python workers, so it
  includes their TensorFlow import and model load (once per Python worker).
* **ml.predict, batch N**: later passes (the model already loaded in every Python worker),
  median of ``--runs``, for each batch size in ``--batch-sizes``.
* **no model**: the same select through an Arrow UDF that returns zeros: the floor that
  Spark's hand-over of the column to Python and back sets, whatever the model; median of
  ``--runs``.

Spark runs on ``--master`` (default ``local-cluster[2,1,1024]``: two executors of one core, so
two Python workers, each with its own TensorFlow). Prints a Markdown table and writes it to
``--out``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, too
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from tfrecord_io import ml, spark


def build_model(path: str) -> None:
    import keras

    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input(shape=(784,), name="image"),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10),
    ])
    model.export(path, verbose=False)


def one_process(path: str, images, batch_size: int) -> float:
    """Seconds to score *images* with the SavedModel in this process (median of 3 timed passes,
    after one untimed pass that traces)."""
    import tensorflow as tf

    signature = tf.saved_model.load(path).signatures["serving_default"]

    def score() -> float:
        start = time.perf_counter()
        for i in range(0, len(images), batch_size):
            signature(image=tf.constant(images[i:i + batch_size]))["output_0"].numpy()
        return time.perf_counter() - start

    score()  # the first pass traces; not counted
    return statistics.median(score() for _ in range(3))


def spark_pass(df, path: str, batch_size: int) -> float:
    start = time.perf_counter()
    ml.predict(df, path, output_mapping={"output_0": "scores"}, batch_size=batch_size) \
        .write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def floor_pass(df) -> float:
    """The same data through an Arrow UDF that runs no model (a column of zeros): what Spark
    itself costs to hand the image column to Python and take a column back."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.functions import ArrowUDFType, arrow_udf

    def zeros(batches):
        for batch in batches:
            yield pa.array(np.zeros(len(batch), np.float32))

    touch = arrow_udf(zeros, "float", ArrowUDFType.SCALAR_ITER)
    start = time.perf_counter()
    df.select("id", "image", touch("image").alias("z")).write.format("noop").mode(
        "overwrite").save()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=256, help="of the one-process row")
    parser.add_argument("--batch-sizes", default="64,256,1024")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local-cluster[2,1,1024]")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    images = rng.random((args.rows, 784), dtype=np.float32)
    scratch = tempfile.mkdtemp(prefix="bench-predict-")
    path = os.path.join(scratch, "model")
    build_model(path)
    local_s = one_process(path, images, args.batch_size)

    session = spark.session(args.master, app_name="bench predict",
                            **{"spark.ui.enabled": "false", "spark.executor.memory": "1g"})
    session.sparkContext.setLogLevel("ERROR")
    try:
        table = pa.table({
            "id": pa.array(np.arange(args.rows)),
            "image": pa.FixedSizeListArray.from_arrays(pa.array(images.reshape(-1)), 784).cast(
                pa.list_(pa.float32())),
        })
        df = session.createDataFrame(table).repartition(args.partitions).cache()
        df.count()
        sizes = [int(s) for s in args.batch_sizes.split(",")]
        first = spark_pass(df, path, sizes[0])
        warm = {size: statistics.median(spark_pass(df, path, size) for _ in range(args.runs))
                for size in sizes}
        floor = statistics.median(floor_pass(df) for _ in range(args.runs))
    finally:
        session.stop()

    mb = args.rows * 784 * 4 / 1e6
    lines = [
        f"ml.predict of {args.rows:,} rows of 784 floats ({mb:.0f} MB) with a 784-128-10 "
        f"SavedModel; Spark `{args.master}`, {args.partitions} partitions, cached; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} at the end.",
        "",
        "| what | seconds | rows/s |",
        "|---|---:|---:|",
        f"| one process, `serving_default` on numpy batches of {args.batch_size} "
        f"| {local_s:.2f} | {args.rows / local_s:,.0f} |",
        f"| `ml.predict`, first pass (batch {sizes[0]}; Python workers import TensorFlow and load "
        f"the model) | {first:.2f} | {args.rows / first:,.0f} |",
    ]
    for size, seconds in warm.items():
        lines.append(f"| `ml.predict`, batch {size}, median of {args.runs} | {seconds:.2f} "
                     f"| {args.rows / seconds:,.0f} |")
    lines.append(f"| an Arrow UDF that runs no model (Spark's own cost), median of {args.runs} "
                 f"| {floor:.2f} | {args.rows / floor:,.0f} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        Path(args.out).write_text(
            "# ml.predict throughput\n\n"
            f"`.venv/bin/python bench/predict.py{' ' + ' '.join(argv or sys.argv[1:])}`\n\n"
            + report
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
