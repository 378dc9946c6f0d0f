"""``python -m tfrecord_io.testing.connect``: a Spark Connect server with tfrecord-io's jar on
127.0.0.1, by hand (``make connect``). Prints its ``sc://`` URL, then runs until Ctrl-C or
SIGTERM.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tfrecord_io.errors import ConnectServerError
from tfrecord_io.testing.connect.server import ConnectServer
from tfrecord_io.testing.serving import serve


def _main(argv: Sequence[str] | None = None) -> int:
    """Runs the server until Ctrl-C / SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_io.testing.connect",
        description="Run a Spark Connect server with tfrecord-io's jar on 127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("--base-dir", help="working directory and log (default: a temporary dir)")
    parser.add_argument("--master", default="local-cluster[2,1,1024]")
    parser.add_argument("--port", type=int, default=15002, help="0 picks a free one")
    ns = parser.parse_args(argv)

    def describe(server: ConnectServer) -> None:
        print(f"Spark Connect server ready on {server.url} (master {server.master})")
        print(f"  log: {server.log_path}")
        print(f"  client: SparkSession.builder.remote({server.url!r}).getOrCreate()")

    return serve(lambda: ConnectServer(ns.base_dir, master=ns.master, port=ns.port), describe,
                 "Spark Connect server", (ConnectServerError,))


if __name__ == "__main__":
    sys.exit(_main())
