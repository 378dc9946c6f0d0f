"""Images per second converted by ``tfrecord_io.datasets.images.convert``, in this process and
with Spark.

    PYTHONPATH=. .venv/bin/python bench/images.py                  # 3 runs each, both trees
    PYTHONPATH=. .venv/bin/python bench/images.py --runs 5 --master 'local-cluster[2,1,1024]' \\
        --out bench/results-images.md

Two trees, written once (untimed) into ``--dir`` from the real MNIST test set
(``../shared/data/mnist``):

* ``mnist-png``: the 10,000 test images as 28x28 grayscale PNG files (about 300 bytes each) in
  ten class folders, ``images.write_png_folders``: the per-file cost dominates.
* ``jpeg``: ``--jpegs`` of them (default 2,000) scaled to 500x375 RGB, with a little seeded
  noise so that they compress like photographs, saved as JPEG (quality 90, about 30 KB each,
  the size of a typical photo data set's files): bytes matter.

Each conversion writes ``--shards`` training shards and a 10% validation set to a fresh output
directory. Rows: without Spark (one process, reading and writing local files), and with
``spark=`` on ``--master`` (one task per shard; the session is started once, and one untimed
conversion warms its executors up). Figures are medians of ``--runs`` timed runs; images/s =
images converted / wall-clock seconds of ``convert`` (listing, header checks, encoding, writing,
committing). The load average is printed, as the machine may be shared.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tfrecord_io.datasets import images, mnist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MNIST_DIR = os.path.join(ROOT, "..", "shared", "data", "mnist")


def write_jpeg_tree(out: str, count: int) -> None:
    """*count* MNIST test images, scaled to 500x375 RGB with seeded noise, as JPEG files in
    their digit's folder."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    [test] = [s for s in mnist.load(MNIST_DIR) if s.name == "test"]
    for i in range(count):
        digit = str(int(test.labels[i]))
        os.makedirs(os.path.join(out, digit), exist_ok=True)
        scaled = Image.fromarray(test.images[i]).resize((500, 375), Image.BILINEAR)
        pixels = np.asarray(scaled.convert("RGB"), dtype=np.int16)
        pixels = pixels + rng.normal(0, 6, pixels.shape).astype(np.int16)
        image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=90)
        with open(os.path.join(out, digit, f"{i:05d}.jpg"), "wb") as f:
            f.write(buffer.getvalue())


def tree_bytes(tree: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(tree) for f in files)


def timed(tree: str, scratch: str, shards: int, spark=None) -> tuple[float, int]:
    out = tempfile.mkdtemp(dir=scratch, prefix="out-")
    started = time.perf_counter()
    result = images.convert(tree, os.path.join(out, "tfr"), shards=shards,
                            validation_fraction=0.1, spark=spark)
    seconds = time.perf_counter() - started
    shutil.rmtree(out)
    return seconds, sum(result.records.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--jpegs", type=int, default=2000)
    ap.add_argument("--master", default="local-cluster[2,1,1024]")
    ap.add_argument("--no-spark", action="store_true", help="only the conversion without Spark")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    ap.add_argument("--out", default=None, help="also append the report to this file")
    args = ap.parse_args()

    scratch = tempfile.mkdtemp(prefix="bench-images-", dir=args.dir)
    spark = None
    try:
        trees = {"mnist-png": os.path.join(scratch, "mnist-png"),
                 "jpeg": os.path.join(scratch, "jpeg")}
        images.write_png_folders(MNIST_DIR, trees["mnist-png"])
        write_jpeg_tree(trees["jpeg"], args.jpegs)
        if not args.no_spark:
            from tfrecord_io import spark as tfs

            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            spark = tfs.session(args.master, app_name="tfrecord-io-bench-images",
                                **{"spark.ui.enabled": "false"})
            spark.sparkContext.setLogLevel("ERROR")
            timed(trees["mnist-png"], scratch, args.shards, spark)  # executors warmed up
        rows = []
        for name, tree in trees.items():
            n_files = sum(len(f) for _, _, f in os.walk(tree))
            size = tree_bytes(tree)
            modes = [("local", None)] + ([] if spark is None else [(f"Spark {args.master}", spark)])
            for label, session in modes:
                times = []
                for _ in range(args.runs):
                    seconds, converted = timed(tree, scratch, args.shards, session)
                    assert converted == n_files, (converted, n_files)
                    times.append(seconds)
                median = statistics.median(times)
                rows.append(
                    f"| {name} ({n_files:,} files, {size / n_files / 1000:.1f} KB each) | {label} "
                    f"| {median:.2f} s | **{n_files / median:,.0f}** | "
                    f"{size / median / 1e6:.1f} | {', '.join(f'{t:.2f}' for t in times)} |"
                )
                print(rows[-1], flush=True)
        load = os.getloadavg()
        report = "\n".join([
            f"`PYTHONPATH=. .venv/bin/python bench/images.py {' '.join(sys.argv[1:])}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
            f"(1/5/15 min) at the end; {args.shards} training shards + 10% validation; "
            f"median of {args.runs} runs",
            "",
            "| tree | conversion | median time | images/s | MB/s | every run (s) |",
            "|---|---|---:|---:|---:|---|",
            *rows,
            "",
        ])
        print()
        print(report)
        if args.out:
            with open(args.out, "a") as f:
                f.write(report + "\n")
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
