"""Python readers of one TFRecord file in the page cache: tfrecord_io.records vs TensorFlow.

    .venv/bin/python bench/records.py                       # 300,000 records of 1 KB, 5 passes
    .venv/bin/python bench/records.py --records 100000 --runs 3 --out /tmp/r.md

One file of ``--records`` records of ``--size`` random bytes (distinct, from a 64 MiB pool) is
written once with ``records.write`` into ``--tmpdir`` and read once untimed (page cache, and
TensorFlow's graph), then each reader runs ``--runs`` timed passes, the readers taking turns
so that background load hits them alike; the table shows each reader's median wall time and
median CPU time over its timed passes, and every pass's wall time is listed below it. Every pass
must see exactly the records and bytes written, or the script stops.

Rows (every one checks both CRCs of every record, as TensorFlow does):

* TF ``tf.data.TFRecordDataset([file], buffer_size=8 MiB).batch(10000)`` reduced to (count,
  sum of ``tf.strings.length``) by ``Dataset.reduce``: the pipeline runs in TF's C++ runtime.
* ``records.read``: a Python ``for`` loop over the records counting them and summing ``len``.
* ``records.read_batches(batch_size=10000)``: lists of ``bytes``, ``len``/``sum(map(len, b))``.
* ``records.read_batches(batch_size=10000, format="arrow")``: ``pyarrow.BinaryArray`` s,
  ``len`` and the size of the values (last offset).

MB/s = 10^6 bytes of the file (framing included) per wall-clock second; CPU µs/record = the
process's CPU time (all threads) per record, the steadier figure on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import cycle, islice

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tfrecord_io import records

Reader = Callable[[str], "tuple[int, int]"]


def read_loop(path: str) -> tuple[int, int]:
    count = total = 0
    for record in records.read(path):
        count += 1
        total += len(record)
    return count, total


def read_batches_lists(path: str) -> tuple[int, int]:
    count = total = 0
    for batch in records.read_batches(path, 10000):
        count += len(batch)
        total += sum(map(len, batch))
    return count, total


def read_batches_arrow(path: str) -> tuple[int, int]:
    count = total = 0
    for batch in records.read_batches(path, 10000, format="arrow"):
        count += len(batch)
        total += batch.buffers()[2].size  # the values buffer
    return count, total


def tf_reader() -> Reader:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    def read(path: str) -> tuple[int, int]:
        ds = tf.data.TFRecordDataset([path], buffer_size=8 << 20).batch(10000)
        ds = ds.map(lambda b: (tf.size(b, tf.int64),
                               tf.reduce_sum(tf.cast(tf.strings.length(b), tf.int64))))
        count, total = ds.reduce(
            (tf.constant(0, tf.int64), tf.constant(0, tf.int64)),
            lambda acc, x: (acc[0] + x[0], acc[1] + x[1]),
        )
        return int(count), int(total)

    return read


def resync_line(tmpdir: str | None) -> str:
    """The skip reader over 4 MiB of headers with valid CRCs each announcing more data than
    the file holds: linear, one pass."""
    from tfrecord_io import framing

    with tempfile.TemporaryDirectory(dir=tmpdir) as tmp:
        times = {}
        for mib in (4, 16):
            path = os.path.join(tmp, f"hostile-{mib}.tfrecord")
            with open(path, "wb") as f:
                f.write(framing.header(64 << 20) * ((mib << 20) // 12))
            t0 = time.perf_counter()
            with records.RecordReader(path, on_corrupt="skip", on_skip=lambda e: None) as r:
                assert list(r) == [] and r.skipped_records == 1
            times[mib] = time.perf_counter() - t0
    return (f"Skip reader over a file of headers with valid CRCs each announcing 64 MiB: "
            f"4 MiB in {times[4]:.3f} s, 16 MiB in {times[16]:.3f} s.")


def generate(path: str, n: int, size: int) -> None:
    pool = [os.urandom(size) for _ in range(max(1, min(n, (64 << 20) // max(size, 1))))]
    records.write(path, islice(cycle(pool), n), index=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--size", type=int, default=1024, help="data bytes per record")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tmpdir", default=None)
    ap.add_argument("--no-tf", action="store_true", help="leave out the TensorFlow row")
    ap.add_argument("--out", default=None, help="also write the Markdown report here")
    args = ap.parse_args()

    readers: list[tuple[str, Reader]] = []
    if not args.no_tf:
        readers.append(("TF `TFRecordDataset(...).batch(10000)`", tf_reader()))
    readers += [
        ("`records.read` (for loop)", read_loop),
        ("`records.read_batches(10000)` (lists of bytes)", read_batches_lists),
        ('`records.read_batches(10000, format="arrow")`', read_batches_arrow),
    ]
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmp:
        path = os.path.join(tmp, "bench.tfrecord")
        generate(path, args.records, args.size)
        file_bytes = os.path.getsize(path)
        expected = (args.records, args.records * args.size)
        wall: dict[str, list[float]] = {name: [] for name, _ in readers}
        cpu: dict[str, list[float]] = {name: [] for name, _ in readers}
        for name, fn in readers:  # warm-up
            if fn(path) != expected:
                sys.exit(f"{name}: wrong result {fn(path)}, expected {expected}")
        for _ in range(args.runs):
            for name, fn in readers:
                t0, c0 = time.perf_counter(), time.process_time()
                got = fn(path)
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
                if got != expected:
                    sys.exit(f"{name}: wrong result {got}, expected {expected}")

    base = statistics.median(wall[readers[0][0]]) if not args.no_tf else None
    lines = [
        f"Python readers, one file of {args.records:,} records of {args.size:,} B "
        f"({file_bytes / 1e6:,.1f} MB) in the page cache, median of {args.runs} passes; "
        f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, load average "
        f"{os.getloadavg()[0]:.1f} at the end.",
        "",
        "| reader | MB/s | records/s | vs TF | CPU µs/record |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, _ in readers:
        seconds = statistics.median(wall[name])
        cpu_seconds = statistics.median(cpu[name])
        ratio = f"{base / seconds:.2f}x" if base else ""
        lines.append(
            f"| {name} | {file_bytes / seconds / 1e6:,.0f} | {args.records / seconds:,.0f} | "
            f"{ratio} | {cpu_seconds / args.records * 1e6:.2f} |"
        )
    lines += ["", "All passes (s): " + "; ".join(
        f"{name}: " + ", ".join(f"{t:.3f}" for t in wall[name]) for name, _ in readers)]
    lines += ["", resync_line(args.tmpdir)]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(report)


if __name__ == "__main__":
    main()
