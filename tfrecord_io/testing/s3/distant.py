"""moto's S3 server answering as a store across a network does: each answer begins only after a
first-byte latency, and its body travels at a bounded rate per connection. Benchmarks use it to
show what reading ahead, and several requests in flight, gain against a remote store; the
tests' own server (:class:`~tfrecord_io.testing.s3.S3Server` without these settings) answers at
once.

Run by :class:`~tfrecord_io.testing.s3.S3Server` given ``first_byte_latency`` or
``connection_rate``::

    python -m tfrecord_io.testing.s3.distant --port PORT --first-byte-latency 0.02 \\
        --connection-rate 100e6

The pauses are sleeps in the request's own thread (moto serves each request in a thread of its
own), so they cost no CPU and do not hold back other requests.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

# The slice of a body sent between two checks of the rate.
_PIECE = 256 << 10


def paced(answer: Callable[..., Iterable[bytes]], first_byte_latency: float,
          connection_rate: float | None) -> Callable[..., Iterator[bytes]]:
    """The WSGI application *answer*, its answers delayed until *first_byte_latency* seconds
    after each request arrived, then sent at most *connection_rate* bytes a second (None: as
    fast as the connection takes them)."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        arrived = time.monotonic()
        return _paced_body(answer(environ, start_response), arrived + first_byte_latency,
                           connection_rate)

    return application


def _paced_body(body: Iterable[bytes], first_byte_at: float,
                rate: float | None) -> Iterator[bytes]:
    try:
        time.sleep(max(0.0, first_byte_at - time.monotonic()))
        began, sent = time.monotonic(), 0
        for chunk in body:
            for i in range(0, len(chunk), _PIECE):
                piece = chunk[i:i + _PIECE]
                sent += len(piece)
                if rate:  # a piece leaves once the rate would have carried it
                    time.sleep(max(0.0, began + sent / rate - time.monotonic()))
                yield piece
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()


def main(argv: list[str] | None = None) -> None:
    """Serves moto's S3 (and the rest of moto) on ``--host``:``--port``, paced."""
    parser = argparse.ArgumentParser(prog="python -m tfrecord_io.testing.s3.distant")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--first-byte-latency", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--connection-rate", type=float, default=None,
                        metavar="BYTES_PER_SECOND")
    args = parser.parse_args(argv)
    # moto's own server module is its entry point; its application and request handler are what
    # `python -m moto.server` serves.
    from moto.moto_server.werkzeug_app import (  # noqa: PLC0415 - the test extra's
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple  # noqa: PLC0415 - comes with moto

    os.environ.setdefault("MOTO_PORT", str(args.port))
    application = paced(DomainDispatcherApplication(create_backend_app),
                        args.first_byte_latency, args.connection_rate)
    run_simple(args.host, args.port, application, threaded=True,
               request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
