#!/usr/bin/env python3
r"""How fast ``tfrecord_io.cluster`` starts, fails and stops, and what ``ctx.report`` costs.

    .venv/bin/python bench/cluster.py                      # 3 runs of each; ~5 min on 2 cores
    .venv/bin/python bench/cluster.py --runs 5 --out bench/results-cluster.md
    .venv/bin/python bench/cluster.py --manager yarn --only finish,exception,sigkill,shutdown
    sudo .venv/bin/python bench/cluster.py --manager standalone \
        --only finish,exception,sigkill,shutdown

Measured, each ``--runs`` times on one SparkContext: with ``--manager local-cluster`` (the
default) on ``--master`` (default ``local-cluster[2,1,1024]``: two executor JVMs with one task
slot each); with ``--manager yarn`` on the test YARN (``tfrecord_io.testing.miniyarn``: two
NodeManagers, two executor containers of 2 cores, one task each, executors started by YARN);
with ``--manager standalone`` on the test standalone cluster (``tfrecord_io.testing.standalone``,
root only: a Master and two Workers, each Worker in its own network namespace, so the nodes'
traffic crosses a virtual network). The benchmark starts and stops the cluster manager itself.

* **start**: from ``cluster.run()`` to the end of the first training step on every node
  (``mode="sync"``, 2 workers, MultiWorkerMirroredStrategy, a one-layer Keras 3 model and a
  ``tf.function`` step with an all-reduce). Includes Spark's barrier stage, the address
  exchange, TensorFlow's import, the strategy's set-up and the step's tracing.
* **exception**: worker 1 raises in ``main_fun`` after its first step; from the raise to
  ``Cluster.wait()`` raising ``ClusterError``.
* **SIGKILL**: worker 1 kills its own process (``SIGKILL``) after its first step; from the
  kill to ``ClusterError``.
* **executor** (``--only ...,executor``; not with ``local-cluster``, whose lost executors are
  not replaced for the next run): worker 1 kills its executor's JVM (on YARN, the container's
  process); from the kill to ``ClusterError``, which waits for the reason the cluster manager
  gives Spark (up to 8 s).
* **finish**: every node returns from ``main_fun``; from the last return to ``wait()``
  returning (the nodes stopped and reaped).
* **shutdown**: ``Cluster.shutdown()`` of a cluster whose nodes are still training (sleeping
  after their first step): how long the call takes until every node is gone.
* **report** (a cluster of one worker, ``keras="legacy"``): inside the node, the cost of one
  ``ctx.report(step, loss=...)`` call (the median and the 99th percentile of ``--calls``
  calls, each timed alone; with a Python float and with a TensorFlow scalar, which
  ``ctx.report`` converts) and of one call of the Keras callback's hooks, and the time of one
  tf-keras ``model.fit`` epoch (``--batches`` batches of a small dense model) without a callback,
  with ``ctx.keras_callback()`` (a report per epoch) and with
  ``ctx.keras_callback(every_n_batches=1)`` (a report per batch): the median of ``--runs`` epochs
  each, taken in turns. The reports go to the driver as in any cluster (the driver keeps every one:
  ``Result.metrics``).

Nodes note their times with ``time.time()`` (``report``: its figures) in files of a local directory:
on a ``local-cluster`` every process shares the machine's clock. Prints Markdown tables (median,
min and max of the runs, seconds; for ``report``, microseconds and milliseconds) and writes them
to ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
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
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
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
    if name == FAILING_NODE and scenario == "executor":
        import psutil

        # the nearest: on YARN the container's launch script names the class too
        executor = next(p for p in psutil.Process().parents()
                        if "CoarseGrainedExecutorBackend" in " ".join(p.cmdline()))
        mark("fail")
        executor.kill()  # the whole executor (its YARN container's JVM) is lost
        time.sleep(600)
    if scenario == "shutdown":
        time.sleep(600)  # training on, until shutdown() stops the node
    mark("end")


def report_main(args: dict, ctx: cluster.NodeContext) -> None:
    """The ``report`` scenario's node: times ``ctx.report`` calls and tf-keras epochs with and
    without ``ctx.keras_callback()``; writes the figures to ``ARGS["marks"]/report.json``."""
    import numpy as np
    import tensorflow as tf

    def per_call(value: object) -> list[float]:
        times = []
        for i in range(args["calls"]):
            begun = time.perf_counter_ns()
            ctx.report(step=i, loss=value)
            times.append((time.perf_counter_ns() - begun) / 1000)
        return times

    def quantiles(times: list[float]) -> list[float]:
        return [float(np.median(times)), float(np.percentile(times, 99))]

    figures = {"report float": quantiles(per_call(0.25)),
               "report tensor": quantiles(per_call(tf.constant(0.25)))}
    hooks = ctx.keras_callback(every_n_batches=1)
    logs = {"loss": np.float32(0.25), "accuracy": np.float32(0.5)}  # as tf-keras passes them
    for hook in ("on_train_batch_end", "on_epoch_end"):
        call = getattr(hooks, hook)
        times = []
        for i in range(args["calls"]):
            begun = time.perf_counter_ns()
            call(i, logs)
            times.append((time.perf_counter_ns() - begun) / 1000)
        figures[hook] = quantiles(times)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(args["batches"] * 32, 8)).astype(np.float32)
    data = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1))).batch(32).cache()
    model = tf.keras.Sequential([tf.keras.Input(shape=(8,)),
                                 tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(data, epochs=1, verbose=0)  # untimed: traces the step, fills the cache
    variants = {"epoch": None, "epoch keras_callback()": ctx.keras_callback(),
                "epoch keras_callback(every_n_batches=1)": ctx.keras_callback(every_n_batches=1)}
    epochs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args["runs"]):
        for name, callback in variants.items():
            begun = time.perf_counter()
            model.fit(data, epochs=1, verbose=0, callbacks=[callback] if callback else [])
            epochs[name].append(time.perf_counter() - begun)
    for name, times in epochs.items():
        figures[name] = [float(np.median(times)), min(times), max(times)]
    (Path(args["marks"]) / "report.json").write_text(json.dumps(figures))


def measure_reports(sc: object, workdir: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    """Run the ``report`` scenario once; its figures (see :func:`report_main`)."""
    marks = workdir / f"report-{time.monotonic_ns()}"
    marks.mkdir()
    node_args = {"marks": str(marks), "calls": args.calls, "batches": args.batches,
                 "runs": args.runs}
    with cluster.run(sc, report_main, node_args, num_workers=1, keras="legacy",
                     progress=False) as c:
        result = c.wait(timeout=900)
    figures = json.loads((marks / "report.json").read_text())
    figures["reports received"] = [float(len(result.metrics))]
    return figures


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
        if scenario in ("exception", "sigkill", "executor"):
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
    ("executor", "worker:1's executor JVM killed (SIGKILL) -> `ClusterError`"),
    ("finish", "last node returns from `main_fun` -> `wait()` returns"),
    ("shutdown", "`shutdown(wait=False)` of a training cluster -> every node gone"),
]


def report(results: dict[str, list[float]], args: argparse.Namespace,
           reports: dict[str, list[float]] | None = None) -> str:
    lines = [
        "# tfrecord_io.cluster: start, failure and shutdown times, and what ctx.report costs",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/cluster.py', *sys.argv[1:]])}` -- "
        f"master `{args.master}`, {args.runs} runs each, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}. Load average "
        f"(1 min) at start {args.load_start:.1f}, at end {args.load_end:.1f}: figures from a "
        "busy machine are slower.",
        "",
    ]
    if results:
        lines += ["", "| what | median s | min s | max s | runs |", "|---|---:|---:|---:|---:|"]
    for key, label in ROWS if results else []:
        values = results.get(key, [])
        if values:
            lines.append(
                f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | "
                f"{max(values):.2f} | {len(values)} |"
            )
        else:
            lines.append(f"| {label} | - | - | - | 0 |")
    if reports:
        lines += report_table(reports, args)
    return "\n".join(lines) + "\n"


def report_table(figures: dict[str, list[float]], args: argparse.Namespace) -> list[str]:
    """The ``report`` scenario's rows."""
    plain = figures["epoch"][0]
    lines = [
        "",
        f"`ctx.report` inside a node: {args.calls} calls each, timed one by one; tf-keras "
        f"`model.fit` epochs of {args.batches} batches (32 rows x 8 floats, Dense 16 + Dense 1), "
        f"{args.runs} epochs each, in turns. The driver received "
        f"{int(figures['reports received'][0])} of the "
        f"{4 * args.calls + args.runs * (args.batches + 2)} "
        "reports sent: the node drops reports while its queue is full (the timed calls come "
        "in bursts faster than the driver reads), rather than wait.",
        "",
        "| what | median | p99 |",
        "|---|---:|---:|",
        f"| `ctx.report(step, loss=0.25)` per call | {figures['report float'][0]:.1f} us | "
        f"{figures['report float'][1]:.1f} us |",
        f"| `ctx.report(step, loss=tf.constant(0.25))` per call | "
        f"{figures['report tensor'][0]:.1f} us | {figures['report tensor'][1]:.1f} us |",
        f"| `ctx.keras_callback(every_n_batches=1)`: `on_train_batch_end` (loss, accuracy) | "
        f"{figures['on_train_batch_end'][0]:.1f} us | {figures['on_train_batch_end'][1]:.1f} us |",
        f"| `ctx.keras_callback()`: `on_epoch_end` (loss, accuracy) | "
        f"{figures['on_epoch_end'][0]:.1f} us | {figures['on_epoch_end'][1]:.1f} us |",
        "",
        "| Keras epoch | median ms | min ms | max ms | vs no callback | per batch |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ("epoch", "epoch keras_callback()", "epoch keras_callback(every_n_batches=1)"):
        median, low, high = figures[name]
        extra = median - plain
        label = "no callback" if name == "epoch" else "`ctx." + name.split(" ", 1)[1] + "`"
        lines.append(
            f"| {label} | {median * 1e3:.1f} | {low * 1e3:.1f} | {high * 1e3:.1f} | "
            f"{extra * 1e3:+.1f} ms ({extra / plain:+.1%}) | "
            f"{extra / args.batches * 1e6:+.0f} us |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manager", choices=("local-cluster", "yarn", "standalone"),
                        default="local-cluster",
                        help="where the executors run (yarn and standalone: started here)")
    parser.add_argument("--master", default="local-cluster[2,1,1024]",
                        help="the master with --manager local-cluster")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="finish,exception,sigkill,shutdown,report",
                        help="scenarios, comma-separated (start is measured in all but report)")
    parser.add_argument("--calls", type=int, default=5000,
                        help="report: ctx.report calls timed (default 5000)")
    parser.add_argument("--batches", type=int, default=200,
                        help="report: batches per Keras epoch (default 200)")
    parser.add_argument("--out", default=None,
                        help="default bench/results-cluster.md (local-cluster), "
                             "bench/results-cluster-MANAGER.md (yarn, standalone)")
    args = parser.parse_args(argv)
    if args.out is None:
        suffix = "" if args.manager == "local-cluster" else f"-{args.manager}"
        args.out = str(Path(__file__).with_name(f"results-cluster{suffix}.md"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    with contextlib.ExitStack() as stack:
        session = stack.enter_context(_application(args))
        return _measure(session, args)


@contextlib.contextmanager
def _application(args: argparse.Namespace):
    """A SparkSession on the chosen cluster manager (which is started first and stopped last);
    sets ``args.master`` to what it ran on."""
    from tfrecord_io import spark as tfs

    settings = {"spark.ui.enabled": "false"}
    with contextlib.ExitStack() as stack:
        if args.manager == "yarn":
            from tfrecord_io.testing import miniyarn

            yarn = miniyarn.MiniYarn(Path(stack.enter_context(tempfile.TemporaryDirectory())),
                                     nodemanagers=2)
            stack.callback(yarn.stop)
            yarn.start()
            os.environ.update(yarn.env())
            args.master = "yarn (test YARN: 2 NodeManagers, 2 executor containers)"
            session = tfs.session("yarn", app_name="tfrecord-io bench/cluster.py",
                                  **yarn.spark_conf(executors=NUM_WORKERS), **settings)
        elif args.manager == "standalone":
            from tfrecord_io.testing.standalone import StandaloneCluster, VirtualNetwork

            network = stack.enter_context(VirtualNetwork(NUM_WORKERS))
            manager = stack.enter_context(StandaloneCluster(
                network, Path(stack.enter_context(tempfile.TemporaryDirectory()))))
            args.master = (f"{manager.master_url} (test standalone cluster: a Worker on each of "
                           f"{NUM_WORKERS} network namespaces)")
            session = tfs.session(manager.master_url, app_name="tfrecord-io bench/cluster.py",
                                  **manager.spark_conf(), **settings)
        else:
            session = tfs.session(args.master, app_name="tfrecord-io bench/cluster.py", **{
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.executor.memory": "1g",
                **settings,
            })
        stack.callback(session.stop)
        session.sparkContext.setLogLevel("ERROR")
        yield session


def _measure(session: object, args: argparse.Namespace) -> int:
    """Runs the scenarios on *session* and writes the report."""
    args.load_start = os.getloadavg()[0]
    workdir = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    results: dict[str, list[float]] = {}
    reports: dict[str, list[float]] | None = None
    scenarios = args.only.split(",")
    try:
        cluster.run(session.sparkContext, node_main, {"marks": str(workdir), "scenario": "warm"},
                    num_workers=NUM_WORKERS).wait(timeout=300)  # untimed: warms the executors
        if "report" in scenarios:
            scenarios.remove("report")
            reports = measure_reports(session.sparkContext, workdir, args)
            log.info("report: %s", reports)
        for run in range(args.runs):
            for scenario in scenarios:
                figures = one_run(session.sparkContext, scenario, workdir)
                log.info("run %d, %s: %s", run + 1, scenario,
                         ", ".join(f"{k} {v:.2f} s" for k, v in figures.items()))
                for key, value in figures.items():
                    results.setdefault(key, []).append(value)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    args.load_end = os.getloadavg()[0]
    text = report(results, args, reports)
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
