"""A :class:`~tfrecord_io.cluster.protocol.StreamServer` in a process of its own, with few file
descriptors, for ``test_hostile_peers.py`` (a flood that exhausts them must not kill it).

    python hostile_server.py KEY --timeout 0.5 --spare-fds 8

Binds 127.0.0.1, then lowers ``RLIMIT_NOFILE`` (soft and hard) to the descriptors it has open
plus *spare-fds*, prints ``{"address": "host:port", "pid": N}`` on one line of stdout and serves
until its stdin closes. Its server is named ``test`` and welcomes ``{"type": "hello"}``; each
authenticated client is sent one message, ``{"type": "stats", "threads": N, "accepting": bool,
"refused": N, "handshaking": N}``, then the connection is closed. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import socket
import sys
import threading
from typing import Any

from tfrecord_io.cluster import protocol


def main() -> None:
    """Run the server (see the module docs)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("key")
    parser.add_argument("--timeout", type=float, default=protocol.HANDSHAKE_TIMEOUT)
    parser.add_argument("--spare-fds", type=int, default=8)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s %(message)s")
    protocol.HANDSHAKE_TIMEOUT = args.timeout
    box: dict[str, Any] = {}

    def serve(stream: protocol.Stream, hello: dict) -> None:
        server = box["server"]
        stream.send({"type": "stats", "threads": threading.active_count(),
                     "accepting": server.accepting, "refused": server.refused,
                     "handshaking": server.handshaking})

    listener = socket.create_server(("127.0.0.1", 0))
    server = protocol.StreamServer(
        listener, args.key, serve,
        lambda hello: None if hello["type"] == "hello" else "not a hello",
        name="child", server="test")
    box["server"] = server
    low = len(os.listdir("/proc/self/fd")) + args.spare_fds
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, low))
    print(json.dumps({"address": server.address, "pid": os.getpid(), "fd_limit": low}),
          flush=True)
    sys.stdin.read()  # until the test closes it
    server.close()


if __name__ == "__main__":
    main()
