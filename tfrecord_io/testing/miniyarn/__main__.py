"""``python -m tfrecord_io.testing.miniyarn``: a test YARN with its HDFS by hand (``make yarn``).

Prints its addresses and an ``export HADOOP_CONF_DIR=...`` line, then runs until Ctrl-C or
SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence

from tfrecord_io.errors import MiniYarnError
from tfrecord_io.testing.miniyarn.cluster import MiniYarn


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_io.testing.miniyarn",
        description="Run a YARN (ResourceManager, NodeManagers) and an HDFS on 127.0.0.1 "
        "until Ctrl-C.",
    )
    parser.add_argument("--base-dir", help="storage, conf and logs (default: a temporary dir)")
    parser.add_argument("--nodemanagers", type=int, default=2)
    parser.add_argument("--nm-memory-mb", type=int, default=4096)
    ns = parser.parse_args(argv)

    def _terminate(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    try:
        with MiniYarn(ns.base_dir, nodemanagers=ns.nodemanagers,
                      nm_memory_mb=ns.nm_memory_mb) as cluster:
            print(f"test YARN ready: ResourceManager {cluster.resourcemanager}, "
                  f"HDFS {cluster.hdfs_url}")
            print(f"  log: {cluster.log_path}")
            print(f"export HADOOP_CONF_DIR={cluster.conf_dir}")
            print("Ctrl-C stops it (and kills every container).", flush=True)
            while cluster.running:
                time.sleep(1.0)
            print("the test YARN JVM exited", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        pass
    except MiniYarnError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main())
