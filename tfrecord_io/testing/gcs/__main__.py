"""``python -m tfrecord_io.testing.gcs``: the test GCS server (fake-gcs-server) on 127.0.0.1, by
hand (``make gcs``).

Prints the setting that points Google's client libraries at it (``STORAGE_EMULATOR_HOST``),
optionally after making buckets (``--bucket NAME``, repeatable), then runs until Ctrl-C or
SIGTERM; its data (in memory) goes with it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from tfrecord_io.errors import GcsServerError
from tfrecord_io.testing.gcs.server import GcsServer
from tfrecord_io.testing.serving import serve


def _main(argv: Sequence[str] | None = None) -> int:
    """Runs the server until Ctrl-C / SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_io.testing.gcs",
        description="Run Google Cloud Storage (fake-gcs-server) on 127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: a free one)")
    parser.add_argument("--bucket", action="append", default=[],
                        help="a bucket to create (repeatable)")
    ns = parser.parse_args(argv)

    def describe(server: GcsServer) -> None:
        for bucket in ns.bucket:
            server.create_bucket(bucket)
        print(f"GCS server (fake-gcs-server) ready on {server.endpoint_url} in "
              f"{server.start_seconds:.1f} s")
        print(f"  buckets: {', '.join(ns.bucket) or '(none: --bucket NAME makes one)'}")
        print(f"  log: {server.log_path}")
        print("  export this (Google's client libraries; no credentials needed):")
        for key, value in server.environment().items():
            print(f"    export {key}={shlex.quote(value)}")

    return serve(lambda: GcsServer(ns.port), describe, "GCS server", (GcsServerError,))


if __name__ == "__main__":
    sys.exit(_main())
