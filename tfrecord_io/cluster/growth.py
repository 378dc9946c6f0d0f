"""Growing the gang back at a boundary of ``main_fun`` (``cluster.run(min_workers=...)``).

When the application can place more workers than the running attempt has, the driver sends
``grow`` to every node and the node's Spark task leaves :data:`GROW_FILE` in the node's working
directory. ``main_fun`` passes boundaries (``ctx.resize_point()``, or the start of each epoch
with ``ctx.keras_callback()``). At each, the workers agree -- in sync mode an all-reduce of
their flags, so that every worker leaves at the same boundary or none does -- and once one of
them saw the file, the checkpoint is saved and :class:`~tfrecord_io.errors.ResizeInterrupt`
ends ``main_fun``; the driver then restarts the gang at the larger size from that checkpoint.
A boundary costs nothing when the attempt cannot grow (no ``min_workers``, or all
``num_workers`` running), and one all-reduce of a scalar when it can.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tfrecord_io.errors import ResizeInterrupt

__all__ = ["GROW_FILE", "Boundary", "announce"]

#: The file, in a node's working directory, that says the gang can grow (it holds how many
#: workers the application can place).
GROW_FILE = "grow"


def announce(workdir: str, workers: int) -> None:
    """Leave :data:`GROW_FILE` in the node's *workdir* (the Spark task, on ``grow``): the
    application can place *workers* workers now. Written whole or not at all."""
    path = os.path.join(workdir, GROW_FILE)
    with open(f"{path}.tmp", "w", encoding="utf-8") as f:
        f.write(str(workers))
    os.replace(f"{path}.tmp", path)


class Boundary:
    """The boundaries of one node's ``main_fun``.

    Args:
        workdir: the node's working directory (where :data:`GROW_FILE` appears), or None
            (never grows).
        can_grow: whether this attempt may grow: ``min_workers`` given, fewer than
            ``num_workers`` workers running, and this node one of the training nodes.
        agree: whether the workers must agree through an all-reduce (sync mode with more
            than one worker; in ps mode only the chief runs ``main_fun``).
    """

    def __init__(self, workdir: str | None, can_grow: bool, agree: bool) -> None:
        self._workdir = workdir
        self._can_grow = can_grow and workdir is not None
        self._agree = agree

    def pending(self) -> bool:
        """Whether the driver said the gang can grow (this node's view: not agreed yet)."""
        return self._can_grow and os.path.exists(os.path.join(str(self._workdir), GROW_FILE))

    def reach(self, strategy: Callable[[], Any], save: Callable[[], Any] | None = None) -> None:
        """A boundary: return at once, or -- every worker agreeing that the gang can grow --
        call *save* and raise :class:`~tfrecord_io.errors.ResizeInterrupt`.

        Args:
            strategy: gives the ``tf.distribute`` strategy to agree through (called only when
                the workers must agree).
            save: writes the checkpoint the next attempt resumes from, or None (it is
                written already, as Keras's ``BackupAndRestore`` does at each epoch's end).
        """
        if not self._can_grow:
            return
        grow = self.pending()
        if self._agree:
            grow = _any(strategy(), grow)
        if not grow:
            return
        if save is not None:
            save()
        raise ResizeInterrupt("the application can place more workers: the gang restarts larger "
                              "from the checkpoint")


def _any(strategy: Any, flag: bool) -> bool:
    """Whether *flag* is set on any worker: an all-reduce (a sum) over *strategy*'s replicas."""
    from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415 - the tf layer, in the node process only

    tf = import_tensorflow()
    value = 1.0 if flag else 0.0
    per_replica = strategy.run(lambda: tf.constant(value))
    total = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
    return float(total) > 0
