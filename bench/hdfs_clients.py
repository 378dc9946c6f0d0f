"""Measure the two JVM-free HDFS clients on a mini HDFS: hdfs-native (RPC) and WebHDFS (`hdfs`).

What it measures, each through tfrecord_io.fs (what users get) and, for reads, through the
raw client too (the ceiling):

* sequential read of a SIZE MB file (default 200) in 1 MiB read() calls, MB/s;
* streaming from an offset: open at SIZE/2, read SIZE/4 MB; and time to the first 64 KiB;
* 200 random 4 KiB reads (seek + read) in one open file, ms each, and MB the HDFS JVM wrote per
  read (its sockets and files, from /proc/PID/io: nearly all of it what the DataNodes sent; only
  when the script starts the cluster);
* write of the SIZE MB file, MB/s;
* ls of a directory of N files (default 1000), ms; glob over it, ms.

Median of --repeat runs (writes and random reads: one run). Runs on a fresh MiniHdfs (128 MiB
blocks, 2 DataNodes, replication 2) unless --hdfs-url and --webhdfs-url name a running cluster.

    python bench/hdfs_clients.py [--size-mb 200] [--files 1000] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tfrecord_io import fs
from tfrecord_io.fs import hdfs as fs_hdfs
from tfrecord_io.testing.processes import bytes_written

MiB = 1 << 20


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The median seconds of *repeat* calls of *fn*, and what the last one returned."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def read_all(url: str, chunk: int = MiB, offset: int = 0, limit: int | None = None) -> int:
    n = 0
    with fs.open(url, offset=offset) as f:
        while limit is None or n < limit:
            want = chunk if limit is None else min(chunk, limit - n)
            b = f.read(want)
            if not b:
                break
            n += len(b)
    return n


def first_bytes(url: str, offset: int) -> int:
    with fs.open(url, offset=offset) as f:
        return len(f.read(64 * 1024))


def random_reads(url: str, size: int, count: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    n = 0
    with fs.open(url) as f:
        for _ in range(count):
            f.seek(rng.randrange(0, size - 4096))
            n += len(f.read(4096))
    return n


def raw_native_stream(rpc_url: str, path: str, size: int) -> int:
    import hdfs_native

    reader = hdfs_native.Client(rpc_url).read(path)
    return sum(len(c) for c in reader.read_range_stream(0, size))


def raw_webhdfs_stream(http_url: str, path: str) -> int:
    import hdfs as hdfs_pkg

    client = hdfs_pkg.InsecureClient(http_url, user=fs_hdfs.current_user())
    n = 0
    with client.read(path, chunk_size=64 * 1024) as it:
        for c in it:
            n += len(c)
    return n


def write_file(url: str, data: bytes) -> None:
    with fs.open(url, "wb") as f:
        for i in range(0, len(data), MiB):
            f.write(data[i : i + MiB])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hdfs-url", help="hdfs://host:port of a running cluster")
    ap.add_argument("--webhdfs-url", help="webhdfs://host:httpport of the same cluster")
    ap.add_argument("--json", help="also write the results here")
    ns = ap.parse_args(argv)

    cluster = None
    jvm = None
    if ns.hdfs_url and ns.webhdfs_url:
        rpc, web = ns.hdfs_url.rstrip("/"), ns.webhdfs_url.rstrip("/")
    else:
        from tfrecord_io.testing.minihdfs import start_for_tests

        t0 = time.perf_counter()
        tmp = tempfile.mkdtemp(prefix="bench-minihdfs-")
        cluster = start_for_tests(tmp, block_size=None)
        up = time.perf_counter() - t0
        print(f"mini HDFS up in {up:.1f} s: {cluster.url} {cluster.webhdfs_url}")
        rpc, web = cluster.url, cluster.webhdfs_url
        jvm = cluster.pid
    http = "http://" + web.split("://", 1)[1]
    size = ns.size_mb * MiB
    root = f"/bench-{uuid.uuid4().hex[:8]}"
    results: dict[str, dict[str, float]] = {"native": {}, "webhdfs": {}}
    try:
        data = os.urandom(size)
        big = root + "/big.bin"
        # warm up both paths (JIT in the NameNode/DataNodes, connections), untimed
        warm = data[: 32 * MiB]
        for name, base in (("native", rpc), ("webhdfs", web)):
            for _ in range(2):
                write_file(f"{base}{root}/warm-{name}.bin", warm)
                read_all(f"{base}{root}/warm-{name}.bin")
        # each client writes its own copy (timed), then both read the native-written one
        for name, base in (("native", rpc), ("webhdfs", web)):
            seconds, _ = timed(partial(write_file, f"{base}{root}/w-{name}.bin", data), 1)
            results[name]["write_MBps"] = size / seconds / 1e6
        write_file(rpc + big, data)

        for name, base in (("native", rpc), ("webhdfs", web)):
            url = base + big
            r = results[name]
            seconds, n = timed(partial(read_all, url), ns.repeat)
            assert n == size, n
            r["seq_read_MBps"] = size / seconds / 1e6
            part = size // 4
            seconds, n = timed(partial(read_all, url, offset=size // 2, limit=part), ns.repeat)
            assert n == part, n
            r["offset_read_MBps"] = part / seconds / 1e6
            seconds, _ = timed(partial(first_bytes, url, size // 2 + 12345), ns.repeat)
            r["offset_first_64KiB_ms"] = seconds * 1000
            sent = bytes_written(jvm)
            seconds, _ = timed(partial(random_reads, url, size, 200), 1)
            r["random_4KiB_read_ms"] = seconds * 1000 / 200
            if jvm is not None:
                time.sleep(1)  # what a dropped stream had queued is sent by now
                r["random_4KiB_read_MB_sent"] = (bytes_written(jvm) - sent) / 200 / 1e6

        seconds, n = timed(lambda: raw_native_stream(rpc, big, size), ns.repeat)
        results["native"]["raw_client_seq_MBps"] = size / seconds / 1e6
        seconds, n = timed(lambda: raw_webhdfs_stream(http, big), ns.repeat)
        results["webhdfs"]["raw_client_seq_MBps"] = size / seconds / 1e6

        # many small files
        import hdfs_native

        nc = hdfs_native.Client(rpc)
        many = root + "/many"
        for i in range(ns.files):
            with nc.create(f"{many}/part-{i:05d}.tfrecord") as w:
                w.write(b"x")
        for name, base in (("native", rpc), ("webhdfs", web)):
            fs_hdfs.clear_client_cache()
            fs.exists(base + "/")  # connect outside the timing
            seconds, entries = timed(partial(fs.ls, base + many), ns.repeat)
            assert len(entries) == ns.files
            results[name][f"ls_{ns.files}_ms"] = seconds * 1000
            seconds, urls = timed(partial(fs.glob, base + many + "/part-*.tfrecord"), ns.repeat)
            assert len(urls) == ns.files
            results[name][f"glob_{ns.files}_ms"] = seconds * 1000
        fs.delete(rpc + root, recursive=True)
    finally:
        if cluster is not None:
            cluster.stop()
            shutil.rmtree(tmp, ignore_errors=True)

    keys = list(results["native"])
    print(f"\n{'metric':28s} {'hdfs-native':>12s} {'WebHDFS':>12s}")
    for k in keys:
        print(f"{k:28s} {results['native'][k]:12.1f} {results['webhdfs'][k]:12.1f}")
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
