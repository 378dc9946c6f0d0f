#!/usr/bin/env python3
"""How fast ``tfrecord_io.cluster`` starts, fails and stops, on a Spark ``local-cluster``.

    .venv/bin/python bench/cluster.py                      # 3 runs of each; ~5 min on 2 cores
    .venv/bin/python bench/cluster.py --runs 5 --out bench/results-cluster.md

Measured, each ``--runs`` times on one SparkContext (``--master``, default
``local-cluster[2,1,1024]``: two executor JVMs with one task slot each):

* **start**: from ``cluster.run()`` to the end of the first training step on every node
  (``mode="sync"``, 2 workers, MultiWorkerMirroredStrategy, a one-layer Keras 3 model and a
  ``tf.function`` step with an all-reduce). Includes Spark's barrier stage, the address
  exchange, TensorFlow's import, the strategy's set-up and the step's tracing.
* **exception**: worker 1 raises in ``main_fun`` after its first step; from the raise to
  ``Cluster.wait()`` raising ``ClusterError``.
* **SIGKILL**: worker 1 kills its own process (``SIGKILL``) after its first step; from the
  kill to ``ClusterError``.
* **finish**: every node returns from ``main_fun``; from the last return to ``wait()``
  returning (the nodes stopped and reaped).
* **shutdown**: ``Cluster.shutdown()`` of a cluster whose nodes are still training (sleeping
  after their first step): how long the call takes until every node is gone.

Nodes note their times with ``time.time()`` in files of a local directory: on a
``local-cluster`` every process shares the machine's clock. Prints a Markdown table (median,
min and max of the runs, seconds) and writes it to ``--out``.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, too
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from tfrecord_io import cluster
from tfrecord_io.errors import ClusterError

log = logging.getLogger("bench.cluster")

NUM_WORKERS = 2
FAILING_NODE = "worker:1"


def node_main(args: dict, ctx: cluster.NodeContext) -> None:
    """One node: one training step, note the time, then do what the scenario asks."""
    import keras
    import tensorflow as tf

    name = f"{ctx.job_name}:{ctx.task_index}"
    marks = Path(args["marks"])

    def mark(what: str) -> None:
        (marks / f"{what}-{name}").write_text(repr(time.time()))

    strategy = ctx.strategy()
    with strategy.scope():
        model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.SGD(0.01)

    def replica_step(x: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def step() -> tf.Tensor:
        loss = strategy.run(replica_step, args=(tf.ones([4, 8]),))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)

    float(step())
    mark("first-step")
    scenario = args["scenario"]
    if name == FAILING_NODE and scenario == "exception":
        mark("fail")
        raise RuntimeError("benchmark: a failure in main_fun")
    if name == FAILING_NODE and scenario == "sigkill":
        mark("fail")
        os.kill(os.getpid(), signal.SIGKILL)
    if scenario == "shutdown":
        time.sleep(600)  # training on, until shutdown() stops the node
    mark("end")


def _marks(directory: Path, what: str) -> list[float]:
    return [float(p.read_text()) for p in directory.glob(f"{what}-*")]


def one_run(sc: object, scenario: str, workdir: Path) -> dict[str, float]:
    """Run one cluster through *scenario*; the figures it yields, in seconds."""
    marks = workdir / f"{scenario}-{time.monotonic_ns()}"
    marks.mkdir()
    args = {"marks": str(marks), "scenario": scenario}
    started = time.time()
    c = cluster.run(sc, node_main, args, num_workers=NUM_WORKERS, mode="sync")
    try:
        figures: dict[str, float] = {}
        if scenario in ("exception", "sigkill"):
            try:
                c.wait(timeout=300)
            except ClusterError as e:
                raised = time.time()
                if FAILING_NODE not in str(e):
                    raise RuntimeError(f"ClusterError does not name {FAILING_NODE}: {e}") from e
            else:
                raise RuntimeError(f"{scenario}: wait() returned without ClusterError")
            (failed,) = _marks(marks, "fail")
            figures[scenario] = raised - failed
        elif scenario == "finish":
            c.wait(timeout=300)
            returned = time.time()
            ends = _marks(marks, "end")
            if len(ends) != NUM_WORKERS:
                raise RuntimeError(f"finish: {len(ends)} of {NUM_WORKERS} nodes finished")
            figures["finish"] = returned - max(ends)
        elif scenario == "shutdown":
            deadline = time.monotonic() + 300
            while len(_marks(marks, "first-step")) < NUM_WORKERS:
                if time.monotonic() > deadline:
                    raise RuntimeError("shutdown: the nodes never took their first step")
                time.sleep(0.05)
            begun = time.monotonic()
            c.shutdown(wait=False)
            figures["shutdown"] = time.monotonic() - begun
        firsts = _marks(marks, "first-step")
        if len(firsts) == NUM_WORKERS:
            figures["start"] = max(firsts) - started
        return figures
    finally:
        c.shutdown(wait=False)


ROWS = [
    ("start", "`run()` -> first training step done on every node (2 workers, sync)"),
    ("exception", "exception in `main_fun` on worker:1 -> `ClusterError`"),
    ("sigkill", "worker:1 killed (SIGKILL) -> `ClusterError`"),
    ("finish", "last node returns from `main_fun` -> `wait()` returns"),
    ("shutdown", "`shutdown(wait=False)` of a training cluster -> every node gone"),
]


def report(results: dict[str, list[float]], args: argparse.Namespace) -> str:
    lines = [
        "# tfrecord_io.cluster: start, failure and shutdown times",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/cluster.py', *sys.argv[1:]])}` -- "
        f"master `{args.master}`, {args.runs} runs each, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}. Load average "
        f"(1 min) at start {args.load_start:.1f}, at end {args.load_end:.1f}: figures from a "
        "busy machine are slower.",
        "",
        "| what | median s | min s | max s | runs |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, label in ROWS:
        values = results.get(key, [])
        if values:
            lines.append(
                f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | "
                f"{max(values):.2f} | {len(values)} |"
            )
        else:
            lines.append(f"| {label} | - | - | - | 0 |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", default="local-cluster[2,1,1024]")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="finish,exception,sigkill,shutdown",
                        help="scenarios, comma-separated (start is measured in all)")
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-cluster.md")))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")

    from tfrecord_io import spark as tfs

    session = tfs.session(
        args.master,
        app_name="tfrecord-io bench/cluster.py",
        **{
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.executor.memory": "1g",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    args.load_start = os.getloadavg()[0]
    workdir = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    results: dict[str, list[float]] = {}
    try:
        cluster.run(session.sparkContext, node_main, {"marks": str(workdir), "scenario": "warm"},
                    num_workers=NUM_WORKERS).wait(timeout=300)  # untimed: warms the executors
        for run in range(args.runs):
            for scenario in args.only.split(","):
                figures = one_run(session.sparkContext, scenario, workdir)
                log.info("run %d, %s: %s", run + 1, scenario,
                         ", ".join(f"{k} {v:.2f} s" for k, v in figures.items()))
                for key, value in figures.items():
                    results.setdefault(key, []).append(value)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        session.stop()
    args.load_end = os.getloadavg()[0]
    text = report(results, args)
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
