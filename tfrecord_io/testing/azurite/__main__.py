"""``python -m tfrecord_io.testing.azurite``: the test Azure Blob server (Azurite) on 127.0.0.1,
by hand (``make azurite``).

Prints the settings that point clients at it (``AZURE_STORAGE_*``, and the connection string),
optionally after making containers (``--container NAME``, repeatable), then runs until Ctrl-C or
SIGTERM; its data (in memory) goes with it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from tfrecord_io.errors import AzuriteError
from tfrecord_io.testing.azurite.server import AzuriteServer
from tfrecord_io.testing.serving import serve


def _main(argv: Sequence[str] | None = None) -> int:
    """Runs the server until Ctrl-C / SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_io.testing.azurite",
        description="Run Azure Blob Storage (Azurite's blob service) on 127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: a free one)")
    parser.add_argument("--container", action="append", default=[],
                        help="a container to create (repeatable)")
    ns = parser.parse_args(argv)

    def describe(server: AzuriteServer) -> None:
        for container in ns.container:
            server.create_container(container)
        print(f"Azure Blob server (Azurite) ready on {server.endpoint_url} in "
              f"{server.start_seconds:.1f} s")
        print(f"  containers: {', '.join(ns.container) or '(none: --container NAME makes one)'}")
        print(f"  log: {server.log_path}")
        print("  export these:")
        for key, value in server.environment().items():
            print(f"    export {key}={shlex.quote(value)}")
        print("  or, for Azure's SDKs and command line:")
        print(f"    export AZURE_STORAGE_CONNECTION_STRING={shlex.quote(server.connection_string)}")

    return serve(lambda: AzuriteServer(ns.port), describe, "Azure Blob server", (AzuriteError,))


if __name__ == "__main__":
    sys.exit(_main())
