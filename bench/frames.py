"""The data source ``format("tfrecord")`` against Spark's own Parquet on the same DataFrame.

    PYTHONPATH=. .venv/bin/python bench/frames.py [--rows 2000000] [--repeat 7] [--master local[2]]
        [--only 'count()']

The DataFrame (id long, x double, s string of ~20 chars, v array<float> of 10) is generated
and cached first, so the writes time encoding and I/O only. Each figure is the median of
``--repeat`` runs after one warm-up, TFRecord and Parquet runs alternating so that background
load affects both alike. Timed, for ``format("tfrecord")`` and ``format("parquet")`` alike:

* write: ``df.write.format(...).save``;
* full read with a schema: an aggregate over every column (both decode everything);
* projection: an aggregate of one column (``x``) of the four (TFRecord decodes one feature
  per record and skips the others; Parquet reads one column chunk);
* ``count()``: Parquet answers from its footers, TFRecord from the sidecar indexes.

Then the same reads through ``load_dataframe`` (which wraps the data source) and the inferring
read (one more full scan). Targets: write <= 0.6x Parquet's time, full read <= 1.0x,
projection <= 1.5x, count <= 0.5x. ``--only`` runs the one operation named. Prints a Markdown
table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tfrecord_io import spark as tfs
from tfrecord_io.spark import load_dataframe


def median_pair(ours, theirs, repeat: int) -> tuple[float, float]:
    """Median times of two functions over *repeat* runs each, run alternately (so background
    load hits both alike)."""
    ours()
    theirs()  # warm-up
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in ((ours, times[0]), (theirs, times[1])):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    ap.add_argument("--only", default=None, help="run this operation only, e.g. 'count()'")
    args = ap.parse_args()

    from pyspark.sql import functions as F

    spark = tfs.session(
        args.master,
        app_name="tfrecord-io-bench",
        **{"spark.ui.enabled": "false", "spark.driver.memory": "4g",
           "spark.sql.shuffle.partitions": "2"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = (
        spark.range(args.rows, numPartitions=4)
        .select(
            F.col("id"),
            (F.col("id") * 0.5 + 0.25).alias("x"),
            F.concat(F.lit("s-"), F.sha1(F.col("id").cast("string")).substr(1, 18)).alias("s"),
            F.expr("transform(sequence(0, 9), i -> cast(id + i as float) / 3)").alias("v"),
        )
        .cache()
    )
    df.count()
    schema = df.schema

    def aggregate(d):
        return d.agg(
            F.sum("id"), F.sum("x"), F.sum(F.length("s")),
            F.sum(F.expr("aggregate(v, 0D, (acc, e) -> acc + e)")),
        ).collect()

    root = tempfile.mkdtemp(prefix="tfrecord-bench-", dir=args.dir)
    counter = iter(range(1_000_000))

    def fresh(name: str) -> str:
        return os.path.join(root, f"{name}-{next(counter)}")

    try:
        tf_path, pq_path = fresh("tf"), fresh("pq")
        df.write.format("tfrecord").save(tf_path)
        df.write.parquet(pq_path)

        def tf_read():
            return spark.read.format("tfrecord").schema(schema).load(tf_path)

        def pq_read():
            return spark.read.parquet(pq_path)

        def one_column(d):
            return d.agg(F.sum("x")).collect()

        n = args.repeat
        cases = {
            "write": (
                lambda: df.write.format("tfrecord").save(fresh("tf")),
                lambda: df.write.parquet(fresh("pq"))),
            "full read with a schema": (
                lambda: aggregate(tf_read()), lambda: aggregate(pq_read())),
            "one-column projection": (
                lambda: one_column(tf_read()), lambda: one_column(pq_read())),
            "count()": (lambda: tf_read().count(), lambda: pq_read().count()),
            "load_dataframe: full read": (
                lambda: aggregate(load_dataframe(spark, tf_path, schema=schema)),
                lambda: aggregate(pq_read())),
            "load_dataframe: count()": (
                lambda: load_dataframe(spark, tf_path, schema=schema).count(),
                lambda: pq_read().count()),
            "read with inferred schema": (
                lambda: aggregate(spark.read.format("tfrecord").load(tf_path)),
                lambda: aggregate(pq_read())),
        }
        if args.only is not None and args.only not in cases:
            raise SystemExit(f"--only: no operation {args.only!r}; one of {list(cases)}")
        results = {
            name: median_pair(ours, theirs, n)
            for name, (ours, theirs) in cases.items()
            if args.only is None or name == args.only
        }
        tf_read().count()
        metrics = spark.sparkContext._jvm.org.tfrecordio.spark.source.ReadMetrics.last()  # noqa: SLF001 - py4j's view of the jar's classes
        size = lambda p: sum(  # noqa: E731 - a one-line helper
            os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs
            if not f.startswith(".") and not f.startswith("_")
        )
        print(
            f"\n{args.rows} rows (id long, x double, s string ~20 chars, v array<float>[10]), "
            f"master {args.master}, median of {args.repeat}, "
            f"Spark {spark.version}"
        )
        print(f"on disk: TFRecord {size(tf_path) / 1e6:.1f} MB (+ indexes), "
              f"Parquet {size(pq_path) / 1e6:.1f} MB")
        print(f"count(): {metrics.recordsRead()} records read, "
              f"{metrics.recordsCounted()} counted from indexes; "
              f"load average {os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} CPUs)\n")
        print("| operation | TFRecord | Parquet | ratio |")
        print("|---|---:|---:|---:|")
        for name, (ours, theirs) in results.items():
            print(f"| {name} | {ours:.2f} s | {theirs:.2f} s | {ours / theirs:.2f}x |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
