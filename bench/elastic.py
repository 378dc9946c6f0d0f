#!/usr/bin/env python3
"""What a lost executor costs a training run, elastic (``min_workers``) or of a fixed size.

    .venv/bin/python bench/elastic.py                        # 3 runs of each; ~10 min
    .venv/bin/python bench/elastic.py --runs 5 --out bench/results-elastic.md

A sync cluster of 3 workers on ``--master`` (default ``local-cluster[2,2,1024]``: 2 executors of
2 task slots) trains a small dense model (a step: a batch of 256 rows of 64 features through
two layers, one all-reduce), checkpointing every 10 steps and reporting each step. Once it runs,
the executor JVM of ``worker:2`` is killed (SIGKILL); the standalone Worker of
``local-cluster`` starts another executor in its place a few seconds later, as a cluster
manager gives a lost container back.

* **elastic** (``num_workers=3, min_workers=2``): the gang restarts at once with the 2 workers
  the remaining executor can hold, and grows back to 3 at its next ``ctx.resize_point()`` once
  the new executor has registered.
* **fixed** (``num_workers=3, max_attempts=2``): the gang restarts at 3, so it waits for the new
  executor.
* **steady-2**, **steady-3**: no loss; steps/s of a gang of that size.

Figures per run: seconds from the kill to the first step of the restarted gang (as the driver
receives its report) and that gang's size; for elastic, seconds from the new executor's
registration to the first step at 3 again; for steady runs, steps/s over 20 steps after the
first 5. The table gives each run and the medians.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, too
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

_STEADY = 20  # steps of each attempt measured for steps/s, after its first 5


def train(args: dict, ctx) -> None:
    """Train until stopped; report every step with the attempt's size and the executor's pid."""
    import tempfile

    import tensorflow as tf

    strategy = ctx.strategy()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(256, "relu"),
                                     tf.keras.layers.Dense(1)])
        optimizer = tf.keras.optimizers.SGD(0.01)
        step = tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)
    directory = ctx.checkpoint_dir if ctx.is_chief else tempfile.mkdtemp()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    latest = tf.train.latest_checkpoint(ctx.checkpoint_dir)
    if latest:
        checkpoint.restore(latest)

    @tf.function
    def one_step(x, y):
        def replica(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x) - y) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss
        return strategy.reduce(tf.distribute.ReduceOp.MEAN,
                               strategy.run(replica, args=(x, y)), None)

    x = tf.random.stateless_uniform((256, 64), seed=(1, 2))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    executor = _executor_pid()
    while True:
        one_step(x, y)
        step.assign_add(1)
        if int(step.numpy()) % 10 == 0:
            manager.save()
        ctx.report(step=int(step.numpy()), workers=ctx.num_workers, executor=executor)
        ctx.resize_point(save=manager.save)


def _executor_pid() -> int:
    """The pid of the executor JVM this node descends from (from /proc)."""
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"CoarseGrainedExecutorBackend" in f.read():
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return 0


def _run(spark, kind: str) -> dict[str, float]:
    """One run: "elastic" and "fixed" lose an executor; "steady-2" and "steady-3" only train,
    at that size, for steps/s."""
    from tfrecord_io import cluster
    from tfrecord_io.cluster.application import application_of

    reports: list[tuple[float, int, int, dict]] = []  # (driver time, attempt, step, values)
    cond = threading.Condition()

    def on_report(record) -> None:
        with cond:
            reports.append((time.monotonic(), record.attempt, record.step, record.values))
            cond.notify_all()

    def wait_for(predicate, timeout: float = 300.0):
        deadline = time.monotonic() + timeout
        seen = 0
        with cond:
            while True:
                found = [r for r in reports[seen:] if predicate(r)]
                if found:
                    return found[0]
                seen = len(reports)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SystemExit(f"{kind}: the run did not get there: see the log")
                cond.wait(left)

    application = application_of(spark.sparkContext)
    options = {"elastic": {"num_workers": 3, "min_workers": 2},
               "fixed": {"num_workers": 3, "max_attempts": 2},
               "steady-2": {"num_workers": 2}, "steady-3": {"num_workers": 3}}[kind]
    figures: dict[str, float] = {}
    with cluster.run(spark.sparkContext, train, {}, progress=False, on_report=on_report,
                     **options) as c:
        wait_for(lambda r: r[1] == 0 and r[2] >= _STEADY + 5)
        if kind.startswith("steady"):
            figures["steps/s"] = _rate(reports, 0)
        else:
            executors = {int(r[3]["executor"]) for r in reports if r[1] == 0}
            slots = application.free_slots()
            killed = time.monotonic()
            os.kill(max(executors), signal.SIGKILL)  # it held 1 or 2 workers: either way
            first = wait_for(lambda r: r[1] == 1)
            figures["kill to first step"] = first[0] - killed
            figures["workers after the loss"] = first[3]["workers"]
            if kind == "elastic":
                while application.free_slots() < slots:  # the new executor registers
                    time.sleep(0.05)
                registered = time.monotonic()
                grown = wait_for(lambda r: r[1] == 2, timeout=600)
                figures["executor back to first step at 3"] = grown[0] - registered
        c.shutdown(wait=False)
    return figures


def _rate(reports, attempt: int) -> float:
    """Steps/s of *attempt*'s steps 6 to 5 + _STEADY, on worker reports seen by the driver."""
    times = sorted({r[2]: r[0] for r in reports if r[1] == attempt}.items())[5:5 + _STEADY + 1]
    if len(times) < 2:
        return 0.0
    return (times[-1][0] - times[0][0]) / (times[-1][1] - times[0][1])


def main(argv: list[str] | None = None) -> int:
    from tfrecord_io import spark as tfs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", default="local-cluster[2,2,1024]")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-elastic.md")))
    ns = parser.parse_args(argv)
    spark = tfs.session(ns.master, app_name="tfrecord-io-bench-elastic", **{
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false", "spark.executor.memory": "1g"})
    spark.sparkContext.setLogLevel("ERROR")
    from tfrecord_io.cluster.application import application_of

    application = application_of(spark.sparkContext)
    slots = application.free_slots()
    runs: dict[str, list[dict[str, float]]] = {
        "elastic": [], "fixed": [], "steady-2": [], "steady-3": []}
    for i in range(ns.runs):
        for kind in runs:
            figures = _run(spark, kind)
            runs[kind].append(figures)
            print(f"run {i + 1} {kind}: {figures}", file=sys.stderr, flush=True)
            while application.free_slots() < slots:
                time.sleep(0.5)  # both executors back before the next run
    spark.stop()
    lines = []
    for kind, results in runs.items():
        for name in results[0]:
            values = [r[name] for r in results]
            lines.append(f"| {kind} | {name} | {' / '.join(f'{v:.2f}' for v in values)} | "
                         f"**{statistics.median(values):.2f}** |")
    table = "\n".join(["| run | figure (s, or steps/s) | each run | median |",
                       "|---|---|---|---:|", *lines])
    Path(ns.out).write_text(f"`bench/elastic.py --runs {ns.runs}` on {ns.master}\n\n{table}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
