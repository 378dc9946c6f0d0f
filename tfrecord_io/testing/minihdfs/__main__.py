"""``python -m tfrecord_io.testing.minihdfs``: a mini HDFS on 127.0.0.1 by hand (``make hdfs``).

Prints its URLs and an ``export HADOOP_CONF_DIR=...`` line, then runs until Ctrl-C or SIGTERM.
From a terminal, ``stop-datanode I`` / ``restart-datanode I`` typed on stdin inject failures and
end of input (Ctrl-D) stops it too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tfrecord_io.errors import MiniHdfsError
from tfrecord_io.testing.minihdfs.classpath import ensure_classpath
from tfrecord_io.testing.minihdfs.cluster import MiniHdfs
from tfrecord_io.testing.serving import serve


def _main(argv: Sequence[str] | None = None) -> int:
    """Runs the mini HDFS until Ctrl-C / SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_io.testing.minihdfs",
        description="Run a mini HDFS on 127.0.0.1 until Ctrl-C. Type `stop-datanode I`, "
        "`restart-datanode I` on stdin to inject failures.",
    )
    parser.add_argument("--base-dir", help="storage, conf and log (default: a temporary dir)")
    parser.add_argument("--datanodes", type=int, default=2)
    parser.add_argument("--replication", type=int, default=None)
    parser.add_argument("--rpc-port", type=int, default=0)
    parser.add_argument("--http-port", type=int, default=0)
    parser.add_argument("--block-size", type=int, default=None)
    parser.add_argument("--build", action="store_true", help="build a classpath with Maven if none")
    ns = parser.parse_args(argv)

    def make() -> MiniHdfs:
        return MiniHdfs(
            ns.base_dir,
            datanodes=ns.datanodes,
            replication=ns.replication,
            rpc_port=ns.rpc_port,
            http_port=ns.http_port,
            block_size=ns.block_size,
            classpath=ensure_classpath(build=True) if ns.build else None,
        )

    def describe(cluster: MiniHdfs) -> None:
        print(f"mini HDFS ready in {cluster.start_seconds:.1f} s")
        print(f"  RPC:      {cluster.url}")
        print(f"  WebHDFS:  {cluster.webhdfs_url}")
        print(f"  web UI:   {cluster.http_url}")
        print(f"  user:     {cluster.superuser} (superuser)")
        print(f"  log:      {cluster.log_path}")
        print(f"export HADOOP_CONF_DIR={cluster.conf_dir}")

    def interact(cluster: MiniHdfs) -> None:
        """``stop-datanode I`` / ``restart-datanode I`` lines from the terminal, until EOF."""
        while True:
            try:
                line = input()
            except EOFError:
                return
            if line.strip():
                try:
                    print(f"OK {cluster.command(line)}".rstrip())
                except MiniHdfsError as e:
                    print(e)

    return serve(make, describe, "mini HDFS JVM", (MiniHdfsError,), interact=interact)


if __name__ == "__main__":
    sys.exit(_main())
