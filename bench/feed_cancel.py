#!/usr/bin/env python3
"""How long stopping a feeding takes: ``Feeding.stop()`` on a ``c.train(..., block=False)`` whose
epoch is being fed, to the ``Feeding`` being done (the call ended, the end markers sent) and to
Spark having no feeding job left (its job cancelled, its tasks interrupted, their slots free).

    .venv/bin/python bench/feed_cancel.py                     # 7 stops; ~2 min
    .venv/bin/python bench/feed_cancel.py --stops 9 --out bench/results-feed-cancel.md

One sync cluster of 2 workers on ``--master`` (default ``local-cluster[2,2,1024]``, the test
master). Each worker reads the feed epoch after epoch, slowly (1 ms per batch of 64 records), so
an epoch of the 100,000-row DataFrame (1 KB Examples, cached) is still being fed when the driver
stops it, 2 s after the call began. The figures per stop are the times from ``stop()`` to the
``Feeding``'s end and to the last feeding job's end (Spark's status tracker: no active job but
the cluster's own); the table gives each stop and the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, too
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def reader(args: dict, ctx) -> None:
    """Read the feed slowly, epoch after epoch, until the feeds end."""
    import time as clock

    while True:
        batches = 0
        for _ in ctx.feed("train").batch(64):
            batches += 1
            clock.sleep(0.001)
        if batches == 0:
            return


def main(argv: list[str] | None = None) -> int:
    from tfrecord_io import cluster
    from tfrecord_io import spark as tfs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", default="local-cluster[2,2,1024]")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--stops", type=int, default=7)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-feed-cancel.md")))
    ns = parser.parse_args(argv)
    spark = tfs.session(ns.master, app_name="tfrecord-io-bench-feed-cancel", **{
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false", "spark.executor.memory": "1g"})
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.range(ns.records, numPartitions=8).selectExpr(
        "id", "repeat('x', 1000) AS payload").cache()
    df.count()
    tracker = spark.sparkContext.statusTracker()
    ended, freed = [], []
    with cluster.run(spark.sparkContext, reader, {}, num_workers=2, input_mode="spark",
                     progress=False) as c:
        time.sleep(2.0)
        own = set(tracker.getActiveJobsIds())  # the cluster's barrier job
        for i in range(ns.stops):
            feeding = c.train(df, num_epochs=1, block=False)
            time.sleep(2.0)
            if feeding.done():
                raise SystemExit("the epoch was fed before the stop: read more slowly")
            start = time.monotonic()
            feeding.stop()
            feeding.result(timeout=120)
            ended.append(time.monotonic() - start)
            while set(tracker.getActiveJobsIds()) - own:
                time.sleep(0.005)
            freed.append(time.monotonic() - start)
            print(f"stop {i + 1}: {ended[-1]:.3f} s, {freed[-1]:.3f} s", file=sys.stderr,
                  flush=True)
    spark.stop()
    rows = [f"| {i + 1} | {e:.3f} | {f:.3f} |"
            for i, (e, f) in enumerate(zip(ended, freed, strict=True))]
    table = "\n".join([
        "| stop | seconds to the feeding's end | seconds to no feeding job in Spark |",
        "|---:|---:|---:|", *rows,
        f"| median | {statistics.median(ended):.3f} | **{statistics.median(freed):.3f}** |"])
    Path(ns.out).write_text(f"`bench/feed_cancel.py --stops {ns.stops}` on {ns.master}\n\n"
                            f"{table}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
