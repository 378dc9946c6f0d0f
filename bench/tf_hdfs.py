#!/usr/bin/env python3
"""tf.data from HDFS vs TensorFlow's own reader on local disk, and Spark writing to HDFS.

    .venv/bin/python bench/tf_hdfs.py [--quick] [--size-mb 200] [--files 8] [--out FILE.md]

1. Starts a mini HDFS (NameNode + 2 DataNodes, replication 2, 128 MiB blocks, in a child JVM;
   or uses ``--hdfs-url``) and a Spark local cluster (2 executor JVMs).
2. Spark writes ``--files`` part files of 1 KB records (``--size-mb`` in all; 50 with
   ``--quick``) to HDFS with :func:`tfrecord_io.spark.save_records` -- timed: the Spark job's wall
   time, records generated on the executors from a random pool.
3. The same part files are copied byte for byte to a local temporary directory.
4. Timed reads, the median of ``--repeat`` (5) after one untimed warm-up pass each, the contenders
   interleaved round by round so that background load hurts them alike:

   * ``tf.data.TFRecordDataset(local files)`` -- TensorFlow's C++ reader, page cache warm: the
     reference;
   * ``tfrecord_io.tf.dataset(hdfs://...)`` -- what this package adds: TensorFlow's own reader
     over tfrecord-io's ``hdfs://`` file system plugin (hdfs-native client);
   * both again with tf.data's autotuning off (``Options().autotune.enabled = False``), whose
     background tuning makes passes vary by up to 1.5x on this machine;
   * ``dataset`` with ``num_parallel_reads=2``, over ``webhdfs://``, and with
     ``reader="python"`` (the pure-Python framing, the path used without the plugin).

   Besides, the HDFS transport alone: the same files streamed with ``tfrecord_io.fs.open``
   into a buffer, no record parsing -- the ceiling any HDFS reader on this client has; and the
   ceiling of the ``hdfs://`` path set by its CPU cost: records/s if every core of the machine
   did nothing else (cores / CPU seconds per record).

   Each pass makes the dataset (``tfr.dataset`` lists the directory) and iterates
   ``dataset.batch(1024)`` in Python, as a training loop would, counting records; it is timed
   to the end of sequence (the iterator's teardown, which sometimes waits for tf.data's
   autotuning thread, is not counted; see ``tfrecord_io.testing.passes``). Besides the ratio
   of the medians, the median of the round-by-round ratios (each ``hdfs://`` pass against the
   local pass before it). MB/s are of file bytes (records + 16 bytes of framing each), 10**6
   bytes per MB.
5. Prints a markdown table (also written to ``--out``), the ratio to the local-disk figure, and
   the command line.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Spark's Python workers must import tfrecord_io from this checkout too.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tfrecord_io.testing.passes import interleaved, read_to_end  # noqa: E402 - after the path

RECORD_BYTES = 1024
FRAMING = 16
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def spark_write(url: str, files: int, records_per_file: int, master: str) -> tuple[float, int]:
    """Spark writes the part files; returns (seconds of the save job, records written)."""
    from tfrecord_io import spark as tfs

    spark = tfs.session(
        master,
        app_name="tfrecord-io-bench-tf-hdfs",
        **{
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.executor.memory": "1g",
            "spark.hadoop.dfs.replication": "2",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        size = RECORD_BYTES

        def make(part):
            # Runs on the executors: 1 KB slices of a per-partition random pool (cheap to make).
            import random

            rnd = random.Random(part)
            pool = rnd.randbytes(1 << 20)
            for i in range(records_per_file):
                start = (i * 7919) % ((1 << 20) - size)
                yield pool[start:start + size]

        rdd = spark.sparkContext.parallelize(range(files), files).flatMap(make)
        rdd.count()  # start the executors' Python workers before timing
        t = time.perf_counter()
        tfs.save_records(rdd, url)
        return time.perf_counter() - t, files * records_per_file
    finally:
        spark.stop()


def copy_to_local(urls: list[str], local_dir: Path) -> list[str]:
    from tfrecord_io import fs

    out = []
    for url in urls:
        dest = local_dir / url.rsplit("/", 1)[1]
        with fs.open(url) as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst, 8 << 20)
        out.append(str(dest))
    return out


def stream_files(urls: list[str]) -> None:
    """Streams the files' bytes into a buffer, no parsing: the HDFS transport alone."""
    from tfrecord_io import fs

    buf = bytearray(4 << 20)
    for url in urls:
        with fs.open(url) as f:  # as the plugin reads: hdfs-native streams ahead on its own
            while f.readinto(buf):
                pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 MB instead of 200")
    parser.add_argument("--size-mb", type=int, default=None, help="data size (default 200)")
    parser.add_argument("--files", type=int, default=8, help="part files (default 8)")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes (the median is kept)")
    parser.add_argument("--master", default="local-cluster[2,1,1024]", help="Spark master")
    parser.add_argument("--hdfs-url", help="use this running HDFS (hdfs://host:port)")
    parser.add_argument("--webhdfs-url", help="its WebHDFS URL (webhdfs://host:httpport)")
    parser.add_argument("--no-webhdfs", action="store_true", help="skip the webhdfs:// row")
    parser.add_argument("--out", help="also write the markdown report here")
    args = list(sys.argv[1:] if argv is None else argv)
    ns = parser.parse_args(args)
    size_mb = ns.size_mb or (50 if ns.quick else 200)
    records_per_file = max(1, size_mb * 10**6 // (RECORD_BYTES + FRAMING) // ns.files)

    import tensorflow as tf

    from tfrecord_io import fs
    from tfrecord_io import tf as tfr
    from tfrecord_io.testing.minihdfs import MiniHdfs

    cluster = None
    local_dir = Path(tempfile.mkdtemp(prefix="tfrecord-io-bench-local-"))
    try:
        if ns.hdfs_url:
            rpc, web = ns.hdfs_url.rstrip("/"), (ns.webhdfs_url or "").rstrip("/")
        else:
            log("starting the mini HDFS (2 DataNodes, replication 2, 128 MiB blocks)")
            cluster = MiniHdfs(datanodes=2, replication=2).start()
            rpc, web = cluster.url, cluster.webhdfs_url
        base = f"{rpc}/bench/tf-hdfs-{os.getpid()}"
        log(f"Spark ({ns.master}) writes {ns.files} files x {records_per_file} records to {base}")
        write_s, n_written = spark_write(base, ns.files, records_per_file, ns.master)
        urls = tfr.list_files(base)
        total_bytes = sum(fs.stat(u).size for u in urls)
        log(f"wrote {total_bytes / 1e6:.1f} MB in {write_s:.1f} s; copying to {local_dir}")
        local = copy_to_local(urls, local_dir)

        reference_name = "TF `TFRecordDataset`, local disk"
        hdfs_name = "`tfrecord_io.tf.dataset`, hdfs://"
        steady_local = "TF `TFRecordDataset`, local disk, autotuning off"
        steady_hdfs = "`tfrecord_io.tf.dataset`, hdfs://, autotuning off"
        tfr.register_filesystems()
        no_autotune = tf.data.Options()
        no_autotune.autotune.enabled = False
        contenders = {
            reference_name: lambda: tf.data.TFRecordDataset(local),
            hdfs_name: lambda: tfr.dataset(base),
            steady_local: lambda: tf.data.TFRecordDataset(local).with_options(no_autotune),
            steady_hdfs: lambda: tfr.dataset(base).with_options(no_autotune),
            "`tfrecord_io.tf.dataset`, hdfs://, `num_parallel_reads=2`": lambda: tfr.dataset(
                base, num_parallel_reads=2
            ),
        }
        if web and not ns.no_webhdfs:
            web_base = base.replace(rpc, web)
            contenders["`tfrecord_io.tf.dataset`, webhdfs://"] = lambda: tfr.dataset(web_base)
        contenders["`tfrecord_io.tf.dataset`, hdfs://, `reader=\"python\"`"] = (
            lambda: tfr.dataset(base, reader="python")
        )
        jvm_pid = cluster.pid if cluster is not None else None  # the HDFS JVM, for its CPU

        passes = interleaved(
            {name: (lambda make=make: read_to_end(make(), expected=n_written)[1])
             for name, make in contenders.items()},
            ns.repeat, pid=jvm_pid, log=log)
        median, cpu = passes.median(), passes.median_cpu()
        transport = interleaved({"transport": lambda: stream_files(urls)}, ns.repeat,
                                pid=jvm_pid, log=log)
        transport_s = transport.median()["transport"]
        transport_cpu = transport.median_cpu()["transport"]

        reference = median[reference_name]
        # Round by round: each hdfs:// pass against the local pass just before it, so that the
        # machine's speed drifting between rounds (other load on it) cancels out.
        paired = passes.paired(reference_name, hdfs_name)
        cores = os.cpu_count() or 1
        ceiling = cores * n_written / cpu[hdfs_name]  # records/s with every core busy on it
        load = os.getloadavg()
        lines = [
            f"## tf.data from HDFS vs local disk ({ns.files} files of 1 KB records, "
            f"{total_bytes / 1e6:.0f} MB, {n_written:,} records)",
            "",
            "| reader | records/s | MB/s | vs local | CPU µs/record |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, seconds in median.items():
            lines.append(
                f"| {name} | {n_written / seconds:,.0f} | {total_bytes / seconds / 1e6:,.1f} "
                f"| {reference / seconds:.0%} | {cpu[name] * 1e6 / n_written:.2f} |"
            )
        lines += [
            "",
            f"Round by round ({hdfs_name}'s pass against the local pass just before it): "
            f"median {statistics.median(paired):.0%} of local, from {paired[0]:.0%} to "
            f"{paired[-1]:.0%}.",
            "",
            "HDFS transport alone (`tfrecord_io.fs.open` of hdfs:// streaming the same files "
            f"into a buffer, no parsing): {total_bytes / transport_s / 1e6:,.1f} MB/s, "
            f"{transport_cpu * 1e6 / n_written:.2f} CPU µs per 1 KB record (client + HDFS JVM).",
            "",
            f"With tf.data's autotuning off on both sides (its background tuning makes passes "
            f"vary by up to 1.5x here, local disk too): {hdfs_name} at "
            f"{median[steady_local] / median[steady_hdfs]:.0%} of local disk.",
            "",
            f"Ceiling of {hdfs_name} at its CPU cost ({cpu[hdfs_name] * 1e6 / n_written:.2f} µs "
            f"per record) with all {cores} cores busy on nothing else: {ceiling:,.0f} records/s "
            f"= {ceiling * reference / n_written:.0%} of local.",
            "",
            f"Spark `save_records` to HDFS ({ns.master}, {ns.files} tasks): {write_s:.1f} s, "
            f"{total_bytes / write_s / 1e6:.1f} MB/s, {n_written / write_s:,.0f} records/s.",
            "",
            f"Median of {ns.repeat} passes after a warm-up, contenders interleaved; each pass "
            "makes the dataset and iterates `dataset.batch(1024)` in Python, timed to its end "
            "of sequence (the iterator's teardown is not counted). MB = 10**6 bytes of file "
            "(record + 16 framing). CPU µs/record: the median CPU time of a pass (this "
            "process, plus the HDFS JVM -- NameNode and DataNodes -- when the bench started it) "
            "per record: "
            "what a pass costs whatever else runs on the machine. "
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
            f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end; Python "
            f"{platform.python_version()}, TensorFlow {tf.__version__}.",
            "",
            "Command: `" + shlex.join([".venv/bin/python", "bench/tf_hdfs.py", *args]) + "`",
        ]
        report = "\n".join(lines) + "\n"
        print(report)
        if ns.out:
            Path(ns.out).write_text(report, encoding="utf-8")
        ratio = reference / median[hdfs_name]
        log(f"hdfs:// reaches {ratio:.0%} of the local-disk figure (target: 90%); round by "
            f"round, {statistics.median(paired):.0%}")
        if ns.hdfs_url:  # a cluster of our own goes away with its data
            fs.delete(base, recursive=True)
        return 0
    finally:
        shutil.rmtree(local_dir, ignore_errors=True)
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
