#!/usr/bin/env python3
"""Soak the feed: seeded random feeding scenarios on a Spark ``local-cluster``, each bounded in
time; a scenario that does not end in time is a hang, and the run fails.

    .venv/bin/python bench/feed_soak.py --scenarios 200                 # every kind, mixed
    .venv/bin/python bench/feed_soak.py --kind turns --scenarios 50     # the two-feeds case
    .venv/bin/python bench/feed_soak.py --scenarios 200 --out bench/results-feed-soak.md

Every scenario starts a new sync cluster of 2 workers on the same SparkContext (``--master``,
default ``local-cluster[2,2,1024]``: the workers take 2 task slots, the feeding tasks the other
2) and feeds cached DataFrames of rows ``(id, payload)`` with a 2 KB payload, so that an epoch
is larger than what a node buffers. The kinds:

* ``turns``: ``train`` (up to 60,000 rows) and ``validation`` (up to 4,001 rows), 1-3 epochs
  each, both ``block=False``; the workers read one epoch of each in turn.
* ``blocking``: the same two feeds, each ``train`` call blocking; the workers read every train
  epoch, then every validation epoch.
* ``three``: three feeds in turns, ``block=False``.
* ``stop``: the workers stop reading ``train`` (``ctx.stop_feed``) after a few batches of a
  random epoch; ``train`` must return (the epochs nobody reads are not fed).
* ``fail``: worker 1 raises in the middle of a train epoch; ``train`` must raise the
  ``ClusterError`` naming ``worker:1``.
* ``stream``: a file stream (one file per micro-batch, ``availableNow``) fed as one epoch,
  then a validation epoch.

Each scenario checks that every record of each complete epoch reached exactly one worker, in
equal shares. The table counts the outcomes per kind and gives the median and the longest
scenario time.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, too
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

KINDS = ("turns", "blocking", "three", "stop", "fail", "stream")
PAYLOAD = 2000
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def worker_main(args: dict, ctx) -> None:
    """Read the feeds in ``args["order"]`` (one epoch each), writing the ids read per feed and
    epoch; ``stop_at``/``fail_at``: (feed, epoch index, batches) to stop reading a feed, or to
    raise, after that many batches of that epoch."""
    import tensorflow as tf

    spec = {"id": tf.io.FixedLenFeature([], tf.int64)}
    datasets = {f: ctx.feed(f, features=spec, batch_size=512) for f in set(args["order"])}
    seen: dict[str, list[list[int]]] = collections.defaultdict(list)
    stop, fail = args.get("stop_at"), args.get("fail_at")
    for feed in args["order"]:
        if stop and feed == stop[0] and len(seen[feed]) > stop[1]:
            continue
        ids: list[int] = []
        for n, batch in enumerate(datasets[feed]):
            ids.extend(int(i) for i in batch["id"].numpy())
            here = (feed, len(seen[feed]))
            if fail and here == (fail[0], fail[1]) and n + 1 >= fail[2] and ctx.task_index == 1:
                raise RuntimeError("the soak's planned failure")
            if stop and here == (stop[0], stop[1]) and n + 1 >= stop[2]:
                ctx.stop_feed(feed)
                break
        seen[feed].append(ids)
    path = os.path.join(args["out"], f"worker-{ctx.task_index}.json")
    with open(path, "w") as f:
        json.dump(seen, f)


def frame(spark, rows: int, partitions: int):
    from pyspark.sql import functions as F

    return (spark.range(rows, numPartitions=partitions)
            .select(F.col("id"), F.repeat(F.lit("x"), PAYLOAD).alias("payload")).cache())


def plan(seed: int, kind: str) -> dict:
    """What scenario *seed* of *kind* feeds and how the workers read."""
    rng = random.Random(seed)
    if kind == "three":
        feeds = {"train": rng.randint(5_000, 40_000), "validation": rng.randint(1, 4_001),
                 "test": rng.randint(1, 3_000)}
    else:
        feeds = {"train": rng.randint(10_000, 60_000), "validation": rng.randint(1, 4_001)}
    epochs = {f: rng.randint(1, 3) for f in feeds}
    if kind == "blocking":
        order = [f for f in feeds for _ in range(epochs[f])]
    else:
        order = []
        for i in range(max(epochs.values())):
            order += [f for f in feeds if i < epochs[f]]
    scenario = {"kind": kind, "seed": seed, "rows": feeds, "epochs": epochs, "order": order,
                "partitions": {f: rng.randint(1, 8) for f in feeds}}
    if kind == "stop":
        scenario["stop_at"] = ["train", rng.randrange(epochs["train"]), rng.randint(1, 5)]
    if kind == "fail":
        scenario["fail_at"] = ["train", rng.randrange(epochs["train"]), rng.randint(1, 5)]
    if kind == "stream":
        scenario["epochs"]["train"] = 1
        scenario["order"] = ["train", "validation"] * 1
        scenario["epochs"]["validation"] = 1
    return scenario


def run_one(spark, scenario: dict, workdir: Path, limit: float) -> dict:
    """Run *scenario*; its outcome (``ok``, ``hang`` or ``error``) and seconds."""
    from tfrecord_io import cluster
    from tfrecord_io.errors import ClusterError

    sc = spark.sparkContext
    out = Path(tempfile.mkdtemp(dir=workdir))
    frames = {f: frame(spark, n, scenario["partitions"][f]) for f, n in scenario["rows"].items()}
    for df in frames.values():
        df.count()
    args = {"out": str(out), "order": scenario["order"],
            "stop_at": scenario.get("stop_at"), "fail_at": scenario.get("fail_at")}
    kind = scenario["kind"]
    start = time.monotonic()
    outcome: dict = {"kind": kind, "seed": scenario["seed"]}
    deadline = start + limit
    try:
        with cluster.run(sc, worker_main, args, num_workers=2, input_mode="spark",
                         reservation_timeout=120) as c:
            feedings = {}
            if kind == "stream":
                source = out / "stream"
                source.mkdir()
                for k in range(3):
                    tmp = out / f"tmp-{k}.json"
                    tmp.write_text("".join(json.dumps({"id": i}) + "\n"
                                           for i in range(k * 100, (k + 1) * 100)))
                    tmp.rename(source / f"part-{k}.json")
                stream = (spark.readStream.schema("id long").option("maxFilesPerTrigger", 1)
                          .json(str(source)))
                c.train(stream, feed="train", trigger={"availableNow": True},
                        timeout=deadline - time.monotonic())
                scenario["rows"]["train"] = 300
                feedings["validation"] = c.train(frames["validation"], feed="validation",
                                                 block=False)
            elif kind == "blocking":
                for f, df in frames.items():
                    feedings[f] = c.train(df, num_epochs=scenario["epochs"][f], feed=f,
                                          timeout=deadline - time.monotonic())
            else:
                for f, df in frames.items():
                    feedings[f] = c.train(df, num_epochs=scenario["epochs"][f], feed=f,
                                          block=False)
            reports = {}
            for f, feeding in feedings.items():
                reports[f] = (feeding if not hasattr(feeding, "result")
                              else feeding.result(timeout=max(1.0, deadline - time.monotonic())))
            c.wait(timeout=max(1.0, deadline - time.monotonic()))
        outcome["outcome"] = check(scenario, out)
    except TimeoutError as e:
        outcome["outcome"] = "hang"
        outcome["detail"] = str(e) or "timed out"
    except ClusterError as e:
        expected = kind == "fail" and getattr(e, "node", None) == "worker:1"
        outcome["outcome"] = "ok" if expected else "error"
        outcome["detail"] = str(e).splitlines()[0]
    except Exception as e:  # noqa: BLE001 - reported in the table
        outcome["outcome"] = "error"
        outcome["detail"] = "".join(traceback.format_exception_only(e)).strip()
    finally:
        for df in frames.values():
            df.unpersist()
    if kind == "fail" and outcome["outcome"] == "ok" and "detail" not in outcome:
        outcome["outcome"] = "error"
        outcome["detail"] = "the planned failure did not raise"
    outcome["seconds"] = time.monotonic() - start
    return outcome


def check(scenario: dict, out: Path) -> str:
    """``ok`` if every complete epoch reached each record exactly once, in equal shares."""
    read = [json.loads((out / f"worker-{w}.json").read_text()) for w in range(2)]
    for feed, rows in scenario["rows"].items():
        stopped = scenario.get("stop_at") and scenario["stop_at"][0] == feed
        epochs = len(read[0].get(feed, []))
        for e in range(epochs):
            if stopped and e >= scenario["stop_at"][1]:
                break
            ids = [read[w][feed][e] for w in range(2)]
            together = sorted(ids[0] + ids[1])
            if len(together) != len(set(together)):
                return f"error: {feed} epoch {e + 1} read a record twice"
            if len(ids[0]) != len(ids[1]):
                return f"error: {feed} epoch {e + 1} shares {len(ids[0])} != {len(ids[1])}"
            if len(together) != rows - rows % 2:
                return f"error: {feed} epoch {e + 1} read {len(together)} of {rows}"
    return "ok"


def report(results: list[dict], args: argparse.Namespace) -> str:
    by_kind: dict[str, list[dict]] = collections.defaultdict(list)
    for r in results:
        by_kind[r["kind"]].append(r)
    lines = [
        f"`{' '.join(['.venv/bin/python', 'bench/feed_soak.py', *sys.argv[1:]])}` on "
        f"{time.strftime('%Y-%m-%d')}, master `{args.master}`, seed {args.seed}, "
        f"{os.cpu_count()} cores, limit {args.limit:.0f} s per scenario",
        "",
        "| kind | scenarios | ok | hang | error | median s | longest s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in KINDS:
        rs = by_kind.get(kind)
        if not rs:
            continue
        count = collections.Counter(r["outcome"] if r["outcome"] in ("ok", "hang") else "error"
                                    for r in rs)
        secs = [r["seconds"] for r in rs]
        lines.append(f"| {kind} | {len(rs)} | {count['ok']} | {count['hang']} | "
                     f"{count['error']} | {statistics.median(secs):.1f} | {max(secs):.1f} |")
    bad = [r for r in results if r["outcome"] != "ok"]
    if bad:
        lines += ["", "Not ok:", ""]
        lines += [f"- {r['kind']} seed {r['seed']}: {r['outcome']}: {r.get('detail', '')}"
                  for r in bad]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--kind", choices=KINDS, action="append",
                        help="only these kinds (repeatable; default: all, in turn)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=float, default=180.0, help="seconds per scenario")
    parser.add_argument("--master", default="local-cluster[2,2,1024]")
    parser.add_argument("--out", type=Path, help="append the table to this Markdown file")
    args = parser.parse_args(argv)

    from tfrecord_io.spark import session

    kinds = args.kind or list(KINDS)
    spark = session(master=args.master, app_name="tfrecord-io feed soak",
                    **{"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"})
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="feed-soak-") as tmp:
            for i in range(args.scenarios):
                scenario = plan(args.seed + i, kinds[i % len(kinds)])
                outcome = run_one(spark, scenario, Path(tmp), args.limit)
                results.append(outcome)
                log(f"{i + 1}/{args.scenarios} {outcome['kind']} seed {outcome['seed']}: "
                    f"{outcome['outcome']} in {outcome['seconds']:.1f} s "
                    f"{outcome.get('detail', '')}")
                if outcome["outcome"] == "hang":
                    dump_threads()
    finally:
        spark.stop()
    table = report(results, args)
    print(table)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + table)
    return 0 if all(r["outcome"] == "ok" for r in results) else 1


def dump_threads() -> None:
    """Every driver thread's stack, for a hang."""
    frames = sys._current_frames()  # noqa: SLF001 - a diagnostic dump
    for thread in threading.enumerate():
        frame_ = frames.get(thread.ident)
        if frame_ is not None:
            log(f"thread {thread.name}:\n" + "".join(traceback.format_stack(frame_)))


if __name__ == "__main__":
    sys.exit(main())
