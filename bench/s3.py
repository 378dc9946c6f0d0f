#!/usr/bin/env python3
"""TensorFlow and Spark on S3: the plugin's ``s3://`` against the raw GETs of the same client
and against local disk; ``format("tfrecord")`` against Parquet on ``s3a://``.

    .venv/bin/python bench/s3.py [--quick] [--size-mb 200] [--files 8] [--repeat 5]
        [--only tf|spark|random] [--first-byte-ms MS] [--connection-mbps MBPS] [--out FILE.md]

1. Starts the test S3 server (:class:`tfrecord_io.testing.s3.S3Server`: moto's, on 127.0.0.1,
   every request signed) and points the standard AWS settings of this process at it. With
   ``--first-byte-ms`` or ``--connection-mbps`` the server answers as a store across a network
   does (:mod:`tfrecord_io.testing.s3.distant`): each answer after that latency, each body at
   that rate per connection.
2. **TensorFlow** (``--only tf``): ``--files`` files of 1 KB records (``--size-mb`` in all; 40
   with ``--quick``) are written locally with :func:`tfrecord_io.records.write` and uploaded.
   Timed passes, interleaved round by round so that background load hurts them alike, after one
   untimed warm-up each (which also checks the record counts):

   * raw GET: every object streamed with :func:`tfrecord_io.fs.open` into a buffer, no parsing
     -- the client the plugin reads through (pyarrow's S3 client), at the plugin's chunk size:
     the ceiling of any reader on this server;
   * ``tfrecord_io.tf.dataset("s3://...")`` -- TensorFlow's own TFRecord reader over the plugin;
   * both with one ranged GET of an object in flight at a time and with the default number
     (``TFRECORD_IO_READ_REQUESTS``);
   * ``tf.data.TFRecordDataset`` over the same files on local disk (page cache warm).

   Each TensorFlow pass iterates ``dataset.batch(1024)`` in Python, as a training loop would.
   The CPU time of each pass (this process's and the server's, from ``/proc``) gives the
   plugin's ceiling on this machine: the raw GETs' time against the plugin's CPU time spread
   over every core.
3. **Spark** (``--only spark``): a DataFrame of ``--rows`` rows (id long, x double, s string of
   ~20 characters, v array<float> of 10), cached, written with ``format("tfrecord")`` and with
   ``format("parquet")`` to ``s3a://`` through Hadoop's S3A connector (:func:`configure_s3a`,
   the committer S3A uses by default), then read back whole with an aggregate over every column;
   Spark ``local[2]``.
4. **Random reads** (``--only random``, not part of a run of both halves): one 64 MB file of
   1 KB records and its index; ``--random-reads`` (200) records picked at random (seeded) are
   read by a seek and a read of the record's length, in one file kept open as an indexed
   reader keeps it, and with a fresh ``fs.open`` per record. The server's recording of the
   requests (:meth:`~tfrecord_io.testing.s3.S3Server.recording`) gives the GETs and the bytes
   asked for per read.

Every figure is the **median** of ``--repeat`` timed passes. MB = 10**6 bytes of file. Prints a
Markdown table (also written to ``--out``) with the command that produced it.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO
from unittest import mock

if TYPE_CHECKING:
    from tfrecord_io.testing.s3 import S3Server

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tfrecord_io.testing.passes import interleaved, read_to_end  # noqa: E402 - after the path

RECORD_BYTES = 1024
FRAMING = 16
BUCKET = "tfrecord-io-bench"
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def _requests(n: int) -> str:
    return "1 request in flight" if n == 1 else f"{n} requests in flight"


def _server_words(ns: argparse.Namespace) -> str:
    """How the test server answers, in words."""
    if not ns.first_byte_ms and not ns.connection_mbps:
        return "the server answering at once"
    words = [f"first byte after {ns.first_byte_ms:g} ms"] if ns.first_byte_ms else []
    if ns.connection_mbps:
        words.append(f"{ns.connection_mbps:g} MB/s per connection")
    return "the server as across a network: " + ", ".join(words)


def make_files(local_dir: Path, files: int, records_per_file: int) -> list[Path]:
    """*files* TFRecord files of 1 KB records cut from a random pool."""
    from tfrecord_io import records

    pool = os.urandom(1 << 20)
    paths = []
    for i in range(files):
        path = local_dir / f"part-{i:05d}.tfrecord"
        records.write(
            path,
            (pool[(j * 7919) % ((1 << 20) - RECORD_BYTES):][:RECORD_BYTES]
             for j in range(i * records_per_file, (i + 1) * records_per_file)),
        )
        paths.append(path)
    return paths


def tensorflow_rows(ns: argparse.Namespace, base: str,
                    server_pid: int | None) -> tuple[list[str], dict[str, float]]:
    import tensorflow as tf

    from tfrecord_io import fs
    from tfrecord_io import tf as tfr
    from tfrecord_io.fs.objectstore import READ_BUFFER, READ_REQUESTS, READ_REQUESTS_ENV
    from tfrecord_io.tf.chunks import DEFAULT_CHUNK_BYTES
    from tfrecord_io.tf.datasets import REMOTE_BUFFER_BYTES

    size_mb = ns.size_mb or (40 if ns.quick else 200)
    per_file = max(1, size_mb * 10**6 // (RECORD_BYTES + FRAMING) // ns.files)
    n_written = per_file * ns.files
    local_dir = Path(tempfile.mkdtemp(prefix="tfrecord-io-bench-s3-"))
    try:
        log(f"writing {ns.files} files x {per_file} records of 1 KB; uploading to {base}")
        local = make_files(local_dir, ns.files, per_file)
        urls = []
        for path in local:
            url = f"{base}/{path.name}"
            with open(path, "rb") as src, fs.open(url, "wb") as dst:
                shutil.copyfileobj(src, dst, 8 << 20)
            urls.append(url)
        total = sum(p.stat().st_size for p in local)
        tfr.register_filesystems()

        def count(ds) -> object:
            """Reads *ds* to its end of sequence; returns its iterator, whose teardown is not
            timed (see ``read_to_end``)."""
            return read_to_end(ds, expected=n_written)[1]

        def raw_get() -> None:
            buf = bytearray(DEFAULT_CHUNK_BYTES)
            got = 0
            for url in urls:
                with fs.open(url) as f:
                    while n := f.readinto(buf):
                        got += n
            if got != total:
                raise SystemExit(f"raw GET read {got} bytes of {total}")

        def in_flight(requests: int, run: Callable[[], object]) -> Callable[[], object]:
            """*run* with *requests* ranged GETs of an object in flight (read at each open)."""
            def timed() -> object:
                with mock.patch.dict(os.environ, {READ_REQUESTS_ENV: str(requests)}):
                    return run()
            return timed

        counts = sorted({1, READ_REQUESTS, *ns.requests})
        raw = {n: f"raw GET, {_requests(n)}: `fs.open(s3://...)` streamed into a buffer, "
                  "no parsing" for n in counts}
        plugin = {n: f"`tfrecord_io.tf.dataset(\"s3://...\")`, {_requests(n)} "
                     "(TensorFlow's reader, the plugin)" for n in counts}
        disk = "TF `TFRecordDataset`, local disk"
        contenders: dict[str, Callable[[], object]] = {}
        for n in counts:
            contenders[raw[n]] = in_flight(n, raw_get)
            contenders[plugin[n]] = in_flight(n, lambda: count(tfr.dataset(base)))
        contenders[disk] = lambda: count(tf.data.TFRecordDataset([str(p) for p in local]))
        passes = interleaved(contenders, ns.repeat, pid=server_pid, log=log)
        medians, cpu = passes.median(), passes.median_cpu()
        lines = [
            f"### TensorFlow reading S3 ({ns.files} files of 1 KB records, {total / 1e6:.0f} MB, "
            f"{n_written:,} records; {_server_words(ns)}; median of {ns.repeat})",
            "",
            "| reader | MB/s | records/s | vs raw GET, as many requests | vs local disk "
            "| CPU µs/record |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        same = {**{raw[n]: raw[n] for n in counts}, **{plugin[n]: raw[n] for n in counts}}
        for name, seconds in medians.items():
            versus = f"{medians[same[name]] / seconds:.0%}" if name in same else ""
            lines.append(f"| {name} | {total / seconds / 1e6:,.1f} | {n_written / seconds:,.0f} "
                         f"| {versus} | {medians[disk] / seconds:.0%} "
                         f"| {cpu[name] * 1e6 / n_written:.2f} |")
        # With every core busy on nothing else, a pass of the plugin cannot take less than its
        # CPU time (this process's and the server's) spread over the cores.
        cores = os.cpu_count() or 1
        figures: dict[str, float] = {}
        for n in counts:
            figures[f"plugin vs raw GET, {_requests(n)}"] = medians[raw[n]] / medians[plugin[n]]
            figures[f"plugin vs local disk, {_requests(n)}"] = medians[disk] / medians[plugin[n]]
        default = READ_REQUESTS
        ceiling = medians[raw[default]] / (cpu[plugin[default]] / cores)
        figures["plugin's CPU ceiling vs raw GET (default)"] = ceiling
        lines += ["", f"TensorFlow {tf.__version__}; `dataset` reads remote files "
                  f"{REMOTE_BUFFER_BYTES >> 20} MiB per TensorFlow read, the raw GETs "
                  f"{DEFAULT_CHUNK_BYTES >> 20} MiB per call; each object is read in ranged GETs "
                  f"of {READ_BUFFER >> 20} MiB, {', '.join(map(str, counts))} in flight at "
                  f"once ({READ_REQUESTS} is the default, `{READ_REQUESTS_ENV}`). CPU: this "
                  "process and the "
                  "server's, per record read.",
                  "",
                  f"Ceiling of the plugin at its CPU cost with {READ_REQUESTS} requests in flight "
                  f"({cpu[plugin[default]] * 1e6 / n_written:.2f} µs per record) with all "
                  f"{cores} cores busy on nothing else: {ceiling:.0%} of its raw GETs."]
        return lines, figures
    finally:
        shutil.rmtree(local_dir, ignore_errors=True)


def random_rows(ns: argparse.Namespace, base: str,
                server: S3Server) -> tuple[list[str], dict[str, float]]:
    """Records read at random places of one object: per read, the median time, the GETs and
    the bytes the server was asked for."""
    from tfrecord_io import fs, index
    from tfrecord_io.fs.objectstore import READ_BUFFER, READ_REQUESTS

    local_dir = Path(tempfile.mkdtemp(prefix="tfrecord-io-bench-s3-random-"))
    try:
        per_file = 64 * 10**6 // (RECORD_BYTES + FRAMING)
        (path,) = make_files(local_dir, 1, per_file)
        url = f"{base}/{path.name}"
        with open(path, "rb") as src, fs.open(url, "wb") as dst:
            shutil.copyfileobj(src, dst, 8 << 20)
        entries = list(index.scan(path))
        picks = random.Random(0).sample(entries, ns.random_reads)

        def read_record(f: BinaryIO, offset: int, length: int) -> None:
            f.seek(offset)
            if len(f.read(length)) != length:
                raise SystemExit(f"short read at {offset} of {url}")

        def in_open_file() -> list[float]:
            seconds = []
            with fs.open(url) as f:
                for offset, length in picks:
                    t = time.perf_counter()
                    read_record(f, offset, length)
                    seconds.append(time.perf_counter() - t)
            return seconds

        def fresh_open() -> list[float]:
            seconds = []
            for offset, length in picks:
                t = time.perf_counter()
                with fs.open(url) as f:
                    read_record(f, offset, length)
                seconds.append(time.perf_counter() - t)
            return seconds

        ways = {"seek and read in the open file": in_open_file,
                "`fs.open`, seek and read per record": fresh_open}
        lines = [
            f"### Random reads of one object ({ns.random_reads} records of 1 KB at random places "
            f"of a 64 MB file; {_server_words(ns)})",
            "",
            "| read | ms per record (median) | GETs per record | MB asked for per record |",
            "|---|---:|---:|---:|",
        ]
        figures: dict[str, float] = {}
        for name, run in ways.items():
            run()  # warm-up
            with server.recording() as requests:
                seconds = run()
            gets = [r for r in requests if r.method == "GET" and r.url == url and r.range]
            asked = sum(last - first + 1 for first, last in (r.range for r in gets))
            median_ms = statistics.median(seconds) * 1000
            lines.append(f"| {name} | {median_ms:.1f} | {len(gets) / len(picks):.2f} "
                         f"| {asked / len(picks) / 1e6:.2f} |")
            figures[f"{name}: ms per record"] = median_ms
            log(f"{name}: {median_ms:.1f} ms, {len(gets)} GETs, {asked / 1e6:.1f} MB")
        lines += ["", f"Blocks of {READ_BUFFER >> 20} MiB, {READ_REQUESTS} requests in flight "
                  "(the defaults). Each time is of the seek and the read (and the open, per "
                  "record); MB = 10**6 bytes."]
        return lines, figures
    finally:
        shutil.rmtree(local_dir, ignore_errors=True)


def spark_rows(ns: argparse.Namespace, base: str) -> tuple[list[str], dict[str, float]]:
    from pyspark.sql import functions as F

    from tfrecord_io import spark as tfs
    from tfrecord_io.testing.s3.s3a import find_s3a_classpath

    classpath = find_s3a_classpath()
    if classpath is None:
        raise SystemExit("no S3A connector of this pyspark's Hadoop: run `make setup`")
    spark = tfs.session(
        "local[2]",
        app_name="tfrecord-io-bench-s3",
        **{"spark.ui.enabled": "false", "spark.driver.memory": "4g",
           "spark.sql.shuffle.partitions": "2", "spark.driver.host": "127.0.0.1",
           "spark.driver.extraClassPath": classpath},
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        tfs.configure_s3a(spark)
        rows = ns.rows or (200_000 if ns.quick else 1_000_000)
        df = (
            spark.range(rows, numPartitions=4)
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
        s3a = base.replace("s3://", "s3a://", 1)
        counter = iter(range(1_000_000))

        def fresh(kind: str) -> str:
            return f"{s3a}/{kind}-{next(counter)}"

        def aggregate(d) -> None:
            d.agg(F.sum("id"), F.sum("x"), F.sum(F.length("s")),
                  F.sum(F.expr("aggregate(v, 0D, (acc, e) -> acc + e)"))).collect()

        tf_path, pq_path = f"{s3a}/tfrecord", f"{s3a}/parquet"
        df.write.format("tfrecord").save(tf_path)
        df.write.parquet(pq_path)
        medians = interleaved({
            "write tfrecord": lambda: df.write.format("tfrecord").save(fresh("tfrecord")),
            "write parquet": lambda: df.write.parquet(fresh("parquet")),
            "read tfrecord": lambda: aggregate(
                spark.read.format("tfrecord").schema(schema).load(tf_path)),
            "read parquet": lambda: aggregate(spark.read.parquet(pq_path)),
        }, ns.repeat, log=log).median()
        lines = [
            f"### Spark on `s3a://` ({rows:,} rows: id long, x double, s string ~20 chars, "
            f"v array<float>[10]; local[2]; Spark {spark.version}; median of {ns.repeat})",
            "",
            "| | TFRecord | Parquet | ratio |",
            "|---|---:|---:|---:|",
        ]
        for op in ("write", "read"):
            ours, theirs = medians[f"{op} tfrecord"], medians[f"{op} parquet"]
            label = "write" if op == "write" else "full read with a schema"
            lines.append(f"| {label} | {ours:.2f} s | {theirs:.2f} s | {ours / theirs:.2f}x |")
        figures = {"spark write vs parquet": medians["write tfrecord"] / medians["write parquet"]}
        return lines, figures
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 MB and 200k rows")
    parser.add_argument("--size-mb", type=int, default=None, help="TF data size (default 200)")
    parser.add_argument("--files", type=int, default=8, help="TF files (default 8)")
    parser.add_argument("--rows", type=int, default=None, help="Spark rows (default 1M)")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes (median kept)")
    parser.add_argument("--only", choices=("tf", "spark", "random"), help="one part only")
    parser.add_argument("--random-reads", type=int, default=200,
                        help="records read at random places with --only random (default 200)")
    parser.add_argument("--first-byte-ms", type=float, default=0.0,
                        help="the server answers each request after this many ms (default 0)")
    parser.add_argument("--connection-mbps", type=float, default=None,
                        help="the server sends each answer at most this many MB/s")
    parser.add_argument("--requests", type=lambda text: [int(n) for n in text.split(",")],
                        default=[], help="with --only tf, also these counts of ranged GETs in "
                        "flight (comma-separated; 1 and the default are always run)")
    parser.add_argument("--out", help="also write the markdown report here")
    args = list(sys.argv[1:] if argv is None else argv)
    ns = parser.parse_args(args)

    from tfrecord_io.testing.s3 import S3Server

    rate = ns.connection_mbps * 1e6 if ns.connection_mbps else None
    with S3Server(first_byte_latency=ns.first_byte_ms / 1000, connection_rate=rate) as server:
        os.environ.update(server.environment())
        server.create_bucket(BUCKET)
        base = f"s3://{BUCKET}/bench-{uuid.uuid4().hex[:8]}"
        lines: list[str] = []
        figures: dict[str, float] = {}
        if ns.only in (None, "tf"):
            more, got = tensorflow_rows(ns, f"{base}/tf", server.pid)
            lines += [*more, ""]
            figures.update(got)
        if ns.only in (None, "spark"):
            more, got = spark_rows(ns, f"{base}/spark")
            lines += [*more, ""]
            figures.update(got)
        if ns.only == "random":
            more, got = random_rows(ns, f"{base}/random", server)
            lines += [*more, ""]
            figures.update(got)
    load = os.getloadavg()
    lines += [
        f"Server: moto's S3 server on 127.0.0.1 (one Python process, signed requests; "
        f"{_server_words(ns)}). Machine: "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load[0]:.1f} / "
        f"{load[1]:.1f} / {load[2]:.1f} at the end; Python {platform.python_version()}.",
        "",
        "Command: `" + shlex.join([".venv/bin/python", "bench/s3.py", *args]) + "`",
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if ns.out:
        Path(ns.out).write_text(report, encoding="utf-8")
    for name, value in figures.items():
        log(f"{name}: {value:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
