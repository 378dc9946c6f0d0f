"""``python -m tfrecord_io.testing.miniyarn``: a test YARN with its HDFS by hand (``make yarn``).

Prints its addresses and an ``export HADOOP_CONF_DIR=...`` line, then runs until Ctrl-C or
SIGTERM.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tfrecord_io.errors import MiniYarnError
from tfrecord_io.testing.miniyarn.cluster import MiniYarn
from tfrecord_io.testing.serving import serve


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_io.testing.miniyarn",
        description="Run a YARN (ResourceManager, NodeManagers) and an HDFS on 127.0.0.1 "
        "until Ctrl-C.",
    )
    parser.add_argument("--base-dir", help="storage, conf and logs (default: a temporary dir)")
    parser.add_argument("--nodemanagers", type=int, default=2)
    parser.add_argument("--nm-memory-mb", type=int, default=8192)
    ns = parser.parse_args(argv)

    def describe(cluster: MiniYarn) -> None:
        print(f"test YARN ready: ResourceManager {cluster.resourcemanager}, "
              f"HDFS {cluster.hdfs_url}")
        print(f"  log: {cluster.log_path}")
        print(f"export HADOOP_CONF_DIR={cluster.conf_dir}")

    return serve(lambda: MiniYarn(ns.base_dir, nodemanagers=ns.nodemanagers,
                                  nm_memory_mb=ns.nm_memory_mb),
                 describe, "test YARN JVM", (MiniYarnError,),
                 stop_hint="Ctrl-C stops it (and kills every container).")


if __name__ == "__main__":
    sys.exit(_main())
