"""``ctx.report`` in the node process: metrics on their way to the driver, never in the way of
training.

:class:`Reporter` puts each record (a JSON line) on a bounded queue and returns; a thread of
its own writes the lines to a pipe that the node's Spark task reads and forwards over the
control channel. When the driver (or the network) is slow, the pipe fills, the writer waits,
the queue fills, and further records are dropped and counted: a training step never waits for
the driver. The first dropped record is logged at once, and when the reporter closes (as
``main_fun`` ends) so is how many were dropped in all: lines of the node's output, which reach
the driver's log. :func:`keras_callback` reports a Keras model's logs every epoch (and every *N*
batches).
"""

from __future__ import annotations

import contextlib
import json
import logging
import numbers
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from tfrecord_io.cluster.results import metric_values, step_value

__all__ = ["MAX_REPORT_BYTES", "REPORT_FD_ENV", "Reporter", "keras_callback"]

#: Environment variable naming the node process's end of its report pipe.
REPORT_FD_ENV = "TFRECORD_IO_REPORT_FD"
#: Records waiting to be written before new ones are dropped.
QUEUE_CAPACITY = 10_000
#: The largest report, as the JSON that carries it (bytes): far below the control protocol's
#: limit on a message's header, and far above any set of metrics worth showing.
MAX_REPORT_BYTES = 64 * 1024

log = logging.getLogger("tfrecord_io.cluster.node")


class Reporter:
    """The node's sender of reports to pipe *fd* (None: reports are only logged)."""

    def __init__(self, fd: int | None, node: str, attempt: int,
                 capacity: int = QUEUE_CAPACITY) -> None:
        self._fd = fd
        self._node = node
        self._attempt = attempt
        self._queue: queue.Queue[bytes | None] = queue.Queue(capacity)
        #: Records that did not reach the pipe: dropped because the driver could not keep up,
        #: or still waiting to be written when the reporter closed (the count is final then).
        self.dropped = 0
        self._sent = 0  # records given to report(), over the pipe or dropped
        self._unwritten = 0  # records the writer took but could not write (the task gone)
        self._thread: threading.Thread | None = None
        if fd is not None:
            self._thread = threading.Thread(target=self._write, name="reporter", daemon=True)
            self._thread.start()

    def report(self, step: int | None, metrics: dict[str, Any]) -> None:
        """Send *metrics* (numbers) of *step* (an int, or None); returns at once. Raises
        TypeError for a value or step that is not a number, ValueError for a step with a
        fractional part, a metric beyond a float's range or a report over
        :data:`MAX_REPORT_BYTES`."""
        values = metric_values(metrics)
        step = step_value(step)
        record = {"step": step, "time": time.time(), "attempt": self._attempt,
                  "values": values}
        line = json.dumps(record).encode() + b"\n"
        if len(line) > MAX_REPORT_BYTES:
            raise ValueError(f"a report of {len(values)} metrics takes {len(line)} bytes: at most "
                             f"{MAX_REPORT_BYTES} go to the driver; report fewer metrics, or "
                             "shorter names, at a time")
        if self._thread is None:
            log.info("report %s: %s", self._node, record)
            return
        self._sent += 1
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            if not self.dropped:
                log.warning("the driver does not keep up with ctx.report: dropping reports "
                            "(how many is logged when main_fun ends)")
            self.dropped += 1

    def _write(self) -> None:
        assert self._fd is not None
        while True:
            line = self._queue.get()
            if line is None:
                return
            view = memoryview(line)
            try:
                while view:
                    view = view[os.write(self._fd, view):]
            except OSError:  # the task is gone: so is the node, soon
                self._unwritten = 1
                return

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (waiting at most *timeout* seconds) and stop. The records
        not written by then count as :attr:`dropped`; when there are any, a warning says how
        many (a line of the node's output: it reaches the driver's log)."""
        if self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)
        self.dropped += self._unwritten + self._drain()
        if self.dropped:
            log.warning("%d of the %d ctx.report records of %s did not reach the driver: it did "
                        "not keep up with them (report less often, or fewer metrics at a time)",
                        self.dropped, self._sent, self._node)

    def _drain(self) -> int:
        """Empty the queue (the writer is done, or stuck on a full pipe: it ends once that
        line is written); how many records it held."""
        left = 0
        with contextlib.suppress(queue.Empty):
            while True:
                left += self._queue.get_nowait() is not None
        with contextlib.suppress(queue.Full):  # empty now, unless report() raced close()
            self._queue.put_nowait(None)
        return left


def keras_callback(reporter: Reporter, every_n_batches: int | None = None,
                   boundary: Callable[[Any], None] | None = None) -> Any:
    """A Keras callback (of the Keras in use: tf-keras with ``keras="legacy"``, else Keras 3)
    that reports the logs of every epoch (step: the epoch, from 1) and, with
    *every_n_batches*, of every *N*-th batch (step: batches since training began). *boundary*
    is called with the model at the start of each epoch but the first of a ``fit``.

    Raises:
        TypeError: *every_n_batches* is not an int (``2.5``, ``True``) nor None.
        ValueError: *every_n_batches* is under 1.
    """
    if every_n_batches is not None:
        if isinstance(every_n_batches, bool) or not isinstance(every_n_batches,
                                                               numbers.Integral):
            raise TypeError(f"every_n_batches must be an int (report every N-th batch) or None, "
                            f"not {type(every_n_batches).__name__} {every_n_batches!r}")
        every_n_batches = int(every_n_batches)
        if every_n_batches < 1:
            raise ValueError(f"every_n_batches must be at least 1, not {every_n_batches}")
    from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415 - the tf layer, in the node process only

    tf = import_tensorflow()
    base = tf.keras.callbacks.Callback

    class _Epochs(base):  # type: ignore[misc, valid-type]
        def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
            self._first = True

        def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            first, self._first = getattr(self, "_first", True), False
            if boundary is not None and not first:
                boundary(self.model)

        def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            reporter.report(epoch + 1, _numbers(logs or {}))

    if not every_n_batches:
        # No batch hook at all: Keras then skips its per-batch callback work (on a GPU, a
        # host sync per step).
        return _Epochs()

    class _Batches(_Epochs):
        def __init__(self) -> None:
            super().__init__()
            self._batches = 0

        def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
            self._batches += 1
            if self._batches % every_n_batches == 0 and logs:
                reporter.report(self._batches, _numbers(logs))

    return _Batches()


def _numbers(logs: dict[str, Any]) -> dict[str, Any]:
    """The scalar entries of Keras *logs*."""
    out = {}
    for name, value in logs.items():
        try:
            metric_values({name: value})
        except TypeError:
            continue
        out[name] = value
    return out
