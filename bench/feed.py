#!/usr/bin/env python3
"""Feeding a cached DataFrame to the cluster (``input_mode="spark"``) vs the same workers reading
the same data as TFRecord shards from HDFS (``input_mode="tensorflow"``).

    .venv/bin/python bench/feed.py                          # 200,000 records, 6 epochs; ~3 min
    .venv/bin/python bench/feed.py --records 400000 --epochs 8 --out bench/results-feed.md
    .venv/bin/python bench/feed.py --runs 5                 # the median of 5 runs of each
    .venv/bin/python bench/feed.py --sources files,feed,connect --runs 5  # and over Connect

Data: a DataFrame of ``--records`` rows ``(id long, payload string of 1000 characters)``, i.e.
``tf.train.Example`` records of about 1 KB, in ``--partitions`` partitions, cached and counted
before anything is timed. It is also written once with ``tfrecord_io.spark.save_dataframe`` to a
mini HDFS (2 DataNodes, replication 2, started here) as that many TFRecord shards.

Both runs use one SparkContext on ``--master`` (default ``local-cluster[2,2,1024]``, the test
master: 2 executors x 2 slots; the 2 workers take 2 slots, the feeding tasks the other 2) and a
sync cluster of 2 workers, each running the same loop over ``--epochs`` epochs::

    dataset.batch(4096).reduce(0, count)      # TensorFlow counts the records; nothing else

Both datasets run without tf.data autotuning (``ctx.feed`` turns it off; the files run sets the
same option): its model thread is joined at the end of every iterator, which stalled epochs here
by 0.6-2 s, and the files path is faster without it.

* **files**: ``ctx.dataset(hdfs://.../shards)``: each worker reads its half of the shards
  through tfrecord-io's ``hdfs://`` plugin in TensorFlow's C++ reader.
* **feed**: ``ctx.feed("train")`` while the driver runs ``c.train(df, num_epochs)``: rows are
  encoded to Examples in the executors' JVMs, batched, sent over the authenticated feed channel
  and handed to TensorFlow batch by batch.
* **connect** (with ``--sources ...,connect``): the same feed from a Spark Connect client. A
  Connect server (``tfrecord_io.testing.connect``, Spark's ``SparkConnectServer``) runs a second
  application on the same ``--master``; the same DataFrame is made and cached there, and
  ``c.train`` feeds it through the jar's feed source on the server (no JVM in this process).
  Its ratio to the classic feed is the last column of the median row.

Each worker times every epoch from the first ``next()`` to the end of the epoch; an epoch's
records/s is the records both workers read divided by the slower worker's time. Each worker
also takes its node process's CPU time over the epoch (``time.process_time()``: every thread
of the process, TensorFlow's included): node CPU per record is both workers' CPU divided by the
records read. On a real cluster that is what feeding costs the training hosts, since the
feeding tasks run on other executors; here they share the 2 cores with the nodes. The machine's
busy cores over each epoch (``/proc/stat``: every process, feeding tasks, nodes and drivers
alike) tell when a run is bound by the machine's CPU rather than by the path. The table
gives, per run, the first epoch (feed: includes the count job and the job start-up) and the
median of the others; the ratios are feed / files on the medians. With ``--runs N`` the files
and feed clusters run N times each, in turns, and a last row gives the median of the runs.
"""

from __future__ import annotations

import argparse
import json
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

T0 = time.monotonic()


class MachineCpu:
    """Samples the whole machine's busy CPU time (``/proc/stat``: every process, the Spark
    executors' feeding tasks and the node processes alike) every 50 ms in a thread, so that
    :meth:`cores` can tell how many cores were busy over any wall-clock window."""

    def __init__(self) -> None:
        import threading

        self._samples: list[tuple[float, float]] = []
        self._tick = os.sysconf("SC_CLK_TCK")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _busy(self) -> float:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return (sum(fields[:8]) - idle) / self._tick

    def _sample(self) -> None:
        while not self._stop.is_set():
            self._samples.append((time.time(), self._busy()))
            self._stop.wait(0.05)

    def _at(self, when: float) -> float:
        samples = self._samples
        # Pairs of neighbours, over the samples of this moment (the thread goes on appending).
        for (t0, b0), (t1, b1) in zip(samples, samples[1:], strict=False):
            if t0 <= when <= t1:
                return b0 + (b1 - b0) * (when - t0) / max(t1 - t0, 1e-9)
        return samples[-1][1] if when > samples[-1][0] else samples[0][1]

    def cores(self, start: float, end: float) -> float:
        """Cores busy on average between the wall-clock times *start* and *end*."""
        return (self._at(end) - self._at(start)) / max(end - start, 1e-9)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


CPU: MachineCpu | None = None


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def worker_main(args: dict, ctx) -> None:
    """Count the records of each epoch, timing it; write the times to OUT/worker-N.json."""
    import tensorflow as tf

    if args["source"] == "files":
        # As ctx.feed does: no autotuning, whose model thread's join at each iterator's end
        # stalls an epoch by 0.6-2 s here (both paths alike; off, the files figure is higher).
        options = tf.data.Options()
        options.autotune.enabled = False
        dataset = ctx.dataset(args["path"]).with_options(options)
    else:
        dataset = ctx.feed("train")
    epochs = []
    for _ in range(args["epochs"]):
        start = time.perf_counter()
        cpu = time.process_time()
        n = int(dataset.batch(4096).reduce(
            tf.constant(0, tf.int64), lambda n, b: n + tf.cast(tf.shape(b)[0], tf.int64)
        ))
        epochs.append({"records": n, "seconds": time.perf_counter() - start,
                       "cpu": time.process_time() - cpu,
                       "began": time.time() - (time.perf_counter() - start)})
    path = os.path.join(args["out"], f"worker-{ctx.task_index}.json")
    with open(path, "w") as f:
        json.dump(epochs, f)


def run(sc, source: str, df, path: str, epochs: int, workdir: Path) -> list[dict]:
    """One cluster of 2 workers reading *epochs* epochs from *source*; per-epoch figures."""
    from tfrecord_io import cluster

    out = workdir / source
    out.mkdir()
    args = {"source": source, "path": path, "epochs": epochs, "out": str(out)}
    mode = "tensorflow" if source == "files" else "spark"
    report = None
    with cluster.run(sc, worker_main, args, num_workers=2, input_mode=mode) as c:
        if source != "files":
            report = c.train(df, num_epochs=epochs)
        c.wait(timeout=3600)
    per_worker = [json.loads((out / f"worker-{w}.json").read_text()) for w in range(2)]
    if report is not None:  # where each epoch's seconds went, from the workers' first next()
        for epoch in report.epochs:
            t0 = min(w[epoch.epoch - 1]["began"] for w in per_worker)
            end = max(w[epoch.epoch - 1]["began"] + w[epoch.epoch - 1]["seconds"]
                      for w in per_worker)
            log(f"  feeding epoch {epoch.epoch}, seconds from the workers' first next(): "
                "tasks (start, last batch sent, acknowledged) " + ", ".join(
                    f"({t['started'] - t0:.2f}, {t['sent'] - t0:.2f}, {t['ended'] - t0:.2f})"
                    for t in sorted(epoch.tasks, key=lambda t: t["started"]))
                + f"; the slower worker's epoch ended at {end - t0:.2f}")
    figures = []
    for e in range(epochs):
        records = sum(w[e]["records"] for w in per_worker)
        seconds = max(w[e]["seconds"] for w in per_worker)
        cpu = sum(w[e]["cpu"] for w in per_worker)
        began = min(w[e]["began"] for w in per_worker)
        busy = CPU.cores(began, began + seconds) if CPU is not None else float("nan")
        figures.append({"records": records, "seconds": seconds, "rate": records / seconds,
                        "busy": busy,
                        "cpu_us": cpu / max(records, 1) * 1e6,
                        "began": min(w[e]["began"] for w in per_worker)})
    return figures


def _later(figs: list[dict], key: str) -> float:
    """The median of *key* over the epochs after the first."""
    return statistics.median(f[key] for f in figs[1:])


def table(runs: list[dict[str, list[dict]]], ns: argparse.Namespace, record_bytes: float) -> str:
    """One row per run and input, then (several runs) the medians of the runs."""
    lines = [
        "| run | input | records/epoch | epoch 1, records/s | later epochs, median records/s "
        "(min-max) | MB/s (median) | vs files | node CPU per record | vs files | machine cores "
        "busy |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    names = {"files": "TFRecord shards on HDFS, `ctx.dataset` (input_mode tensorflow)",
             "feed": "cached DataFrame, `c.train` + `ctx.feed` (input_mode spark)",
             "connect": "the same from a Spark Connect client"}
    names = {s: name for s, name in names.items() if s in runs[0]}
    for number, results in enumerate(runs, 1):
        files_rate = _later(results["files"], "rate")
        files_cpu = _later(results["files"], "cpu_us")
        for source in names:
            figs = results[source]
            later = [f["rate"] for f in figs[1:]]
            median = statistics.median(later)
            cpu = _later(figs, "cpu_us")
            lines.append(
                f"| {number} | {names[source]} | {figs[0]['records']:,} | {figs[0]['rate']:,.0f} | "
                f"{median:,.0f} ({min(later):,.0f}-{max(later):,.0f}) | "
                f"{median * record_bytes / 1e6:,.1f} | {median / files_rate:.0%} | "
                f"{cpu:.2f} us | {cpu / files_cpu:.2f}x | {_later(figs, 'busy'):.2f} |"
            )
    if len(runs) > 1:
        rate = {s: statistics.median(_later(r[s], "rate") for r in runs) for s in names}
        cpu = {s: statistics.median(_later(r[s], "cpu_us") for r in runs) for s in names}
        busy = {s: statistics.median(_later(r[s], "busy") for r in runs) for s in names}
        lines.append(
            f"| median of {len(runs)} | feed vs files | | | {rate['feed']:,.0f} vs "
            f"{rate['files']:,.0f} | | {rate['feed'] / rate['files']:.0%} | "
            f"{cpu['feed']:.2f} vs {cpu['files']:.2f} us | {cpu['feed'] / cpu['files']:.2f}x | "
            f"{busy['feed']:.2f} vs {busy['files']:.2f} |"
        )
        if "connect" in rate:
            lines.append(
                f"| median of {len(runs)} | Connect feed vs classic feed | | | "
                f"{rate['connect']:,.0f} vs {rate['feed']:,.0f} | | "
                f"{rate['connect'] / rate['feed']:.0%} | {cpu['connect']:.2f} vs "
                f"{cpu['feed']:.2f} us | {cpu['connect'] / cpu['feed']:.2f}x | "
                f"{busy['connect']:.2f} vs {busy['feed']:.2f} |"
            )
    head = (
        f"`{' '.join(['bench/feed.py', *sys.argv[1:]])}` on {platform.node()} "
        f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end), "
        f"{ns.records:,} records of {record_bytes:,.0f} bytes (serialized Example), "
        f"{ns.partitions} partitions/shards, 2 workers, master `{ns.master}`, {ns.epochs} epochs, "
        f"{len(runs)} run(s) of each."
    )
    return head + "\n\n" + "\n".join(lines) + "\n"


def write_results(path: Path, text: str) -> None:
    """Put this run's *text* at the top of *path*; earlier runs stay below it, as they were."""
    title = "# Feeding vs reading files (bench/feed.py)\n\n"
    earlier = path.read_text() if path.exists() else ""
    earlier = earlier[len(title):] if earlier.startswith(title) else earlier
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    run = f"## Run of {when}" + (f" (commit {commit})" if commit else "") + f"\n\n{text}"
    if earlier.strip():
        if not earlier.startswith("## "):
            earlier = "## An earlier run\n\n" + earlier
        run += "\n" + earlier
    path.write_text(title + run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", default="local-cluster[2,2,1024]")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--runs", type=int, default=1,
                        help="clusters of each input, in turns (the table gives their median)")
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-feed.md")))
    parser.add_argument("--sources", default="files,feed",
                        help="which runs (comma-separated: files, feed, connect); the table "
                        "needs files and feed")
    ns = parser.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("tfrecord_io.cluster").setLevel(
        logging.DEBUG if os.environ.get("BENCH_FEED_DEBUG") else logging.INFO)
    if ns.epochs < 2:
        parser.error("--epochs must be at least 2 (the first epoch is reported apart)")

    from pyspark.sql import functions as F

    from tfrecord_io import spark as tfs
    from tfrecord_io.testing.minihdfs import MiniHdfs

    global CPU
    CPU = MachineCpu()
    workdir = Path(tempfile.mkdtemp(prefix="tfrecord-io-bench-feed-"))
    log("starting the mini HDFS (2 DataNodes, replication 2)")
    hdfs = MiniHdfs(datanodes=2, replication=2).start()
    spark = tfs.session(ns.master, app_name="tfrecord-io-bench-feed", **{
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false", "spark.executor.memory": "1g",
        "spark.hadoop.dfs.replication": "2",
    })
    spark.sparkContext.setLogLevel("ERROR")
    sources = ns.sources.split(",")
    server = remote = None
    try:
        def data(session):
            payload = F.expr("substring(repeat(sha2(cast(id as string), 256), 16), 1, 1000)")
            frame = session.range(0, ns.records, numPartitions=ns.partitions).select(
                F.col("id"), payload.alias("payload")).cache()
            assert frame.count() == ns.records
            return frame

        df = data(spark)
        if "connect" in sources:
            from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

            from tfrecord_io.testing.connect import ConnectServer

            log("starting a Spark Connect server on the same master")
            server = ConnectServer(master=ns.master, conf={
                "spark.executor.memory": "1g", "spark.ui.enabled": "false"}).start()
            remote = RemoteSparkSession.builder.remote(server.url).getOrCreate()
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # Connect columns from here on
            remote_df = data(remote)
            del os.environ["SPARK_CONNECT_MODE_ENABLED"]
        path = f"{hdfs.url}/bench/feed-{os.getpid()}"
        log(f"writing {ns.records:,} Examples to {path}")
        tfs.save_dataframe(df, path)
        log("written")
        from tfrecord_io import fs
        from tfrecord_io import tf as tfr

        shards = tfr.list_files(path)
        total = sum(fs.stat(u).size for u in shards)
        record_bytes = total / ns.records - 16  # data bytes per record (framing excluded)
        runs = []
        for number in range(1, ns.runs + 1):
            results = {}
            for source in sources:
                log(f"run {number}: {source}")
                on = (remote, remote_df) if source == "connect" else (spark.sparkContext, df)
                results[source] = run(on[0], source, on[1], path, ns.epochs,
                                      Path(tempfile.mkdtemp(dir=workdir)))
                for e, f in enumerate(results[source]):
                    log(f"  epoch {e + 1}: {f['records']:,} records in {f['seconds']:.2f} s "
                        f"= {f['rate']:,.0f} records/s, node CPU {f['cpu_us']:.2f} us/record")
            for source, figs in results.items():
                expected = ns.records if source == "files" else ns.records - ns.records % 2
                if any(f["records"] != expected for f in figs):
                    raise SystemExit(
                        f"{source} read {[f['records'] for f in figs]}, not {expected}")
            runs.append(results)
        if len(sources) < 2:
            return 0
        text = table(runs, ns, record_bytes)
        print(text)
        write_results(Path(ns.out), text)
        log(f"wrote {ns.out}")
    finally:
        if remote is not None:
            remote.stop()
        if server is not None:
            server.stop()
        spark.stop()
        hdfs.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
