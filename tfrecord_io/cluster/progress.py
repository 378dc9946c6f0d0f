"""What the driver shows while a cluster runs: one progress line (tqdm, which picks its
notebook front end in Jupyter) with the attempt, the nodes running, and the last reported step
and metrics, where that line renders; otherwise compact log lines, one per attempt and one per
node's last report. A failed node's traceback is printed whatever the logging setup.

:class:`Progress` is fed from one thread of the driver (the cluster's report dispatcher), never
from the control channel's reader, so a slow terminal cannot hold a node's messages back.
"""

from __future__ import annotations

import logging
import sys
from typing import IO, Any

from tfrecord_io.cluster.results import MetricRecord

__all__ = ["Progress"]

log = logging.getLogger("tfrecord_io.cluster")


class Progress:
    """The progress of cluster *name* (on *file*, standard error by default).

    Args:
        name: what the line is about.
        nodes: how many nodes the cluster has.
        enabled: True shows the line; None shows it only where it renders (a terminal or a
            notebook, tqdm's own test: not a file, as standard error is in a batch job);
            False shows none. Without the line, the attempts and each node's last report
            are logged (``tfrecord_io.cluster``, INFO), one line each.
        file: where to write (tests pass their own).
    """

    def __init__(self, name: str, nodes: int, enabled: bool | None = True,
                 file: IO[str] | None = None) -> None:
        self._name = name
        self._nodes = nodes
        self._file = file
        self._bar: Any = None
        self._attempt = 0
        self._running = 0
        self._last: MetricRecord | None = None
        self._last_by_node: dict[str, MetricRecord] = {}
        self._logged_attempt: int | None = None
        if enabled is not False:
            from tqdm.auto import tqdm  # noqa: PLC0415 - only when shown

            bar = tqdm(total=None, desc=name, unit=" reports", file=file or sys.stderr,
                       dynamic_ncols=True, leave=True, mininterval=0.5,
                       disable=None if enabled is None else False)
            if bar.disable:
                bar.close()
            else:
                self._bar = bar
                self._show()

    def attempt(self, number: int, running: int, nodes: int | None = None) -> None:
        """Attempt *number* (0 first) has *running* of its *nodes* registered (None: as many
        nodes as the last attempt)."""
        self._attempt, self._running = number, running
        if nodes is not None:
            self._nodes = nodes
        self._show()
        if self._bar is None and running == self._nodes and self._logged_attempt != number:
            self._logged_attempt = number
            log.info("%s: attempt %d: %d/%d nodes running", self._name, number + 1, running,
                     self._nodes)

    def record(self, record: MetricRecord) -> None:
        """A node reported *record*."""
        self._last = record
        self._last_by_node[record.node] = record
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
        """Leave the line as it is and stop updating it (without a line: log each node's last
        report)."""
        if self._bar is not None:
            self._show()
            self._bar.close()
            self._bar = None
            return
        for record in self._last_by_node.values():
            log.info("%s: last report of attempt %d: %s", self._name, record.attempt + 1, record)
        self._last_by_node.clear()

    def _show(self) -> None:
        if self._bar is None:
            return
        parts = [f"attempt {self._attempt + 1}", f"{self._running}/{self._nodes} nodes"]
        if self._last is not None:
            parts.append(str(self._last))
        self._bar.set_postfix_str(" | ".join(parts), refresh=True)
