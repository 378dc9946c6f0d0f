"""One of the test services run by hand (``python -m tfrecord_io.testing.NAME``, ``make NAME``):
made, started, described on stdout, kept until Ctrl-C, SIGTERM or its own end, then stopped."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["serve"]


def serve(
    make: Callable[[], Any],
    describe: Callable[[Any], None],
    name: str,
    errors: tuple[type[BaseException], ...],
    *,
    stop_hint: str = "Ctrl-C stops it.",
    interact: Callable[[Any], None] | None = None,
) -> int:
    """Run the service that *make* returns (a context manager with a ``running`` property)
    until Ctrl-C or SIGTERM; returns the exit status.

    Args:
        make: builds the service (not started yet).
        describe: prints what a user needs (URLs, logs, exports) once it has started.
        name: the service in the message printed when it exits by itself (exit status 1).
        errors: the exceptions that mean it could not start or be described: printed, exit
            status 1.
        stop_hint: the last line printed before waiting.
        interact: with a terminal on stdin, called instead of waiting (it returns at the end
            of input).
    """

    def _terminate(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    try:
        with make() as service:
            describe(service)
            print(stop_hint, flush=True)
            if interact is not None and sys.stdin is not None and sys.stdin.isatty():
                interact(service)
                return 0
            while service.running:
                time.sleep(1.0)
            print(f"the {name} exited", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        pass
    except errors as e:
        print(e, file=sys.stderr)
        return 1
    return 0
