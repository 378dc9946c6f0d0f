"""Training throughput of the image CNN (``python/images``) in images/s: fed the encoded PNGs
of a database table (``c.train`` + ``ctx.feed``) against reading image shards on HDFS
(``ctx.dataset``).

    PYTHONPATH=. .venv/bin/python bench/images_training.py --out bench/results-images-training.md

The data: the real MNIST test set (``../shared/data/mnist``), 10,000 28x28 PNG files of about
300 bytes. Written once (untimed, but the conversion's time is printed) as class folders,
converted with ``images.convert`` to 4 training shards and a 20% validation set on a mini HDFS
(2 DataNodes), and loaded into a test PostgreSQL (``tfrecord_io.testing.postgres``). Each run
starts a sync cluster of 2 workers on ``--master`` that trains the CNN for ``--epochs`` epochs
(tf-keras ``model.fit``; decoding and random translation in the workers' ``tf.data``
pipeline, 32 images per worker and step):

* shards: ``train_shards.py``'s program on the ~8,000 training records (``ctx.dataset``);
* fed: ``train_database.py``'s program fed the 8,000 training rows (``id % 5 <> 0``) read by
  Spark's JDBC source in 4 partitions (``c.train`` caches them: read once per run).

images/s = images of one epoch / the time between worker 0's reports at the ends of two
epochs (``ctx.keras_callback()``), over epochs 2..E: the cluster's start and the first epoch
(tracing, the feed's caching) are left out and reported as the run's wall time. Figures are
medians over ``--runs`` runs; with ``--evaluate`` the first run of each input is also scored on
its held-out images with ``evaluate.py``'s ``ml.predict`` (time and accuracy printed). The load
average is printed, as the machine may be shared.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "python" / "images"))
MNIST = ROOT.parent / "shared" / "data" / "mnist"


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def epoch_rates(result, images_per_epoch: int) -> list[float]:
    """images/s of epochs 2..E from worker 0's per-epoch reports."""
    times = [r.time for r in result.metrics if r.node == "worker:0" and "loss" in r.values]
    return [images_per_epoch / (b - a) for a, b in pairwise(times)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", default="local-cluster[2,2,1024]")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--evaluate", action="store_true",
                        help="score the first run's model of each input on its held-out images")
    parser.add_argument("--out", help="write the results table (Markdown) here")
    ns = parser.parse_args(argv)
    if ns.epochs < 2:
        parser.error("--epochs must be at least 2 (the first epoch is left out)")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")

    from pyspark import cloudpickle

    import evaluate
    import train_database
    import train_shards

    # The nodes do not have python/images on their path: the programs travel by value.
    cloudpickle.register_pickle_by_value(train_shards)
    cloudpickle.register_pickle_by_value(train_database)
    from tfrecord_io import spark as tfs
    from tfrecord_io.datasets import images, mnist
    from tfrecord_io.testing import postgres as pg
    from tfrecord_io.testing.minihdfs import MiniHdfs

    scratch = Path(tempfile.mkdtemp(prefix="tfrecord-io-bench-images-training-"))
    log("starting the mini HDFS and PostgreSQL")
    hdfs = MiniHdfs(scratch / "hdfs", datanodes=2, replication=2).start()
    db = pg.Postgres().start()
    jars = pg.find_jdbc_jars()
    spark = tfs.session(ns.master, app_name="tfrecord-io-bench-images-training", **{
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false", "spark.executor.memory": "1g",
        "spark.hadoop.dfs.replication": "2", **({"spark.jars": ",".join(jars)} if jars else {}),
    })
    spark.sparkContext.setLogLevel("ERROR")
    lines = []
    try:
        (test,) = [s for s in mnist.load(MNIST) if s.name == "test"]
        pg.create_images_table(db)
        pg.load_images(db, pg.mnist_png_rows(test))
        images.write_png_folders(MNIST, scratch / "png")
        out = f"{hdfs.url}/bench/images"
        started = time.monotonic()
        converted = images.convert(scratch / "png", out, shards=4, validation_fraction=0.2)
        log(f"convert: {converted.summary()} ({time.monotonic() - started:.1f} s)")
        jdbc = [db.jdbc_url, "--user", db.user]
        per_epochs: dict[str, int] = {}
        rates: dict[str, list[float]] = {"shards": [], "fed": []}
        walls: dict[str, list[float]] = {"shards": [], "fed": []}
        for run in range(ns.runs):
            for source in ("shards", "fed"):
                model = f"{hdfs.url}/bench/models/{source}-{run}"
                common = ["--epochs", str(ns.epochs)]
                started = time.monotonic()
                if source == "shards":
                    args = train_shards.parse_args(
                        [f"{out}/train", f"{out}/validation", model, *common])
                    result = train_shards.train(spark, args)
                    per_epoch = args.train_images // (2 * args.batch_size) * 2 * args.batch_size
                    held_out = evaluate.validation_rows(
                        spark, evaluate.parse_args([model, f"{out}/validation"]))
                else:
                    args = train_database.parse_args([jdbc[0], model, *jdbc[1:], *common])
                    result = train_database.train(spark, args)
                    per_epoch = 8000
                    held_out = evaluate.validation_rows(
                        spark, evaluate.parse_args([model, *jdbc]))
                per_epochs[source] = per_epoch
                wall = time.monotonic() - started
                walls[source].append(wall)
                epochs = epoch_rates(result, per_epoch)
                rates[source].append(statistics.median(epochs))
                log(f"run {run + 1} {source}: {wall:.1f} s, epochs 2..{ns.epochs}: "
                    + ", ".join(f"{r:,.0f}" for r in epochs) + " images/s")
                if ns.evaluate and run == 0:
                    started = time.monotonic()
                    report = evaluate.evaluate(held_out, model)
                    log(f"evaluate {source}: {time.monotonic() - started:.1f} s, accuracy "
                        f"{report.accuracy:.4f} on {report.images} held-out images\n"
                        + report.table())
        load = os.getloadavg()
        lines = [
            f"`{' '.join(['bench/images_training.py', *(argv or sys.argv[1:])])}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
            f"{os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
            f"(1/5/15 min) at the end; {ns.master}, 2 sync workers, {ns.epochs} epochs, "
            f"median of {ns.runs} runs",
            "",
            "| input | images trained/epoch | median images/s (epochs 2..E) | every run | "
            "median wall time of a run | vs shards |",
            "|---|---:|---:|---|---:|---:|",
        ]
        base = statistics.median(rates["shards"])
        for source, label in (
            ("shards", "PNG shards on HDFS, `ctx.dataset`"),
            ("fed", "PNG rows from PostgreSQL (JDBC), `c.train` + `ctx.feed`"),
        ):
            n = per_epochs[source]
            median = statistics.median(rates[source])
            lines.append(f"| {label} | {n:,} | **{median:,.0f}** | "
                         + ", ".join(f"{r:,.0f}" for r in rates[source])
                         + f" | {statistics.median(walls[source]):.1f} s | "
                         f"{median / base:.0%} |")
        text = "\n".join(lines)
        print(text)
        if ns.out:
            Path(ns.out).write_text(text + "\n")
    finally:
        spark.stop()
        db.stop()
        hdfs.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
