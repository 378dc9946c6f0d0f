"""``python -m tfrecord_io.testing.s3``: the test S3 server (moto) on 127.0.0.1, by hand
(``make s3``).

Prints the standard AWS settings that point Python, TensorFlow and the command line at it,
optionally after making buckets (``--bucket NAME``, repeatable), then runs until Ctrl-C or
SIGTERM; its data (in memory) goes with it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from tfrecord_io.errors import S3ServerError
from tfrecord_io.testing.s3.server import S3Server
from tfrecord_io.testing.serving import serve


def _main(argv: Sequence[str] | None = None) -> int:
    """Runs the server until Ctrl-C / SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_io.testing.s3",
        description="Run an S3-compatible server (moto) on 127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: a free one)")
    parser.add_argument("--bucket", action="append", default=[],
                        help="a bucket to create (repeatable)")
    parser.add_argument("--no-auth", action="store_true",
                        help="accept any request, signed or not")
    ns = parser.parse_args(argv)

    def describe(server: S3Server) -> None:
        for bucket in ns.bucket:
            server.create_bucket(bucket)
        print(f"S3 server (moto) ready on {server.endpoint_url} in {server.start_seconds:.1f} s")
        print(f"  buckets: {', '.join(ns.bucket) or '(none: --bucket NAME makes one)'}")
        print(f"  log: {server.log_path}")
        print("  export these (Python, TensorFlow, the command line):")
        for key, value in server.environment().items():
            print(f"    export {key}={shlex.quote(value)}")

    return serve(lambda: S3Server(ns.port, auth=not ns.no_auth), describe, "S3 server",
                 (S3ServerError,))


if __name__ == "__main__":
    sys.exit(_main())
