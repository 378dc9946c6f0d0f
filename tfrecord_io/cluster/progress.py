"""What the driver shows while a cluster runs: one progress line (tqdm, which picks its
notebook front end in Jupyter) with the attempt, the nodes running, and the last reported step
and metrics; and a failed node's traceback, printed whatever the logging setup.

:class:`Progress` is fed from one thread of the driver (the cluster's report dispatcher), never
from the control channel's reader, so a slow terminal cannot hold a node's messages back.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from tfrecord_io.cluster.results import MetricRecord

__all__ = ["Progress"]


class Progress:
    """The progress line of cluster *name* (on *file*, standard error by default).

    Args:
        name: what the line is about.
        nodes: how many nodes the cluster has.
        enabled: False shows nothing (``cluster.run(..., progress=False)``).
        file: where to write (tests pass their own).
    """

    def __init__(self, name: str, nodes: int, enabled: bool = True,
                 file: IO[str] | None = None) -> None:
        self._nodes = nodes
        self._file = file
        self._bar: Any = None
        self._attempt = 0
        self._running = 0
        self._last: MetricRecord | None = None
        if enabled:
            from tqdm.auto import tqdm  # noqa: PLC0415 - only when shown

            self._bar = tqdm(total=None, desc=name, unit=" reports", file=file or sys.stderr,
                             dynamic_ncols=True, leave=True, mininterval=0.5)
            self._show()

    def attempt(self, number: int, running: int) -> None:
        """Attempt *number* (0 first) has *running* nodes registered."""
        self._attempt, self._running = number, running
        self._show()

    def record(self, record: MetricRecord) -> None:
        """A node reported *record*."""
        self._last = record
        if self._bar is not None:
            self._bar.update(1)
        self._show()

    def failure(self, text: str) -> None:
        """Print a failure (a node's error and traceback), whatever the logging setup."""
        if self._bar is not None:
            self._bar.write(text, file=self._file or sys.stderr)
        else:
            print(text, file=self._file or sys.stderr, flush=True)

    def close(self) -> None:
        """Leave the line as it is and stop updating it."""
        if self._bar is not None:
            self._show()
            self._bar.close()
            self._bar = None

    def _show(self) -> None:
        if self._bar is None:
            return
        parts = [f"attempt {self._attempt + 1}", f"{self._running}/{self._nodes} nodes"]
        if self._last is not None:
            parts.append(str(self._last))
        self._bar.set_postfix_str(" | ".join(parts), refresh=True)
