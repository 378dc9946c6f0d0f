"""Distributed TensorFlow on Spark executors: reserve, start, train, fail loudly, shut down clean.

::

    from tfrecord_io import cluster

    def main_fun(args, ctx):                      # runs in a fresh process on each node
        strategy = ctx.strategy()                 # MultiWorkerMirroredStrategy (mode="sync")
        records = ctx.dataset(args["train"])      # this worker's exactly-once share
        ...

    with cluster.run(sc, main_fun, {"train": "hdfs://nn/data/train"}, num_workers=2) as c:
        c.wait()                                  # raises cluster.ClusterError naming the node

Or fed from Spark (``input_mode="spark"``: ``c.train(df, num_epochs=3)`` on the driver,
``ctx.feed("train")`` in ``main_fun``; see :mod:`tfrecord_io.cluster.feed`).

Modules: :mod:`~tfrecord_io.cluster.driver` (:func:`run`, :class:`Cluster`),
:mod:`~tfrecord_io.cluster.attempt` (one gang start, watched), :mod:`~tfrecord_io.cluster.task`
(the Spark barrier task of a node), :mod:`~tfrecord_io.cluster.node` (the node process),
:mod:`~tfrecord_io.cluster.channel` (the control channel),
:mod:`~tfrecord_io.cluster.protocol` (the encrypted protocol of the control channel and the
feed), :mod:`~tfrecord_io.cluster.context` (:class:`NodeContext`),
:mod:`~tfrecord_io.cluster.feed` (feeding Spark data: ``Cluster.train``, ``ctx.feed``),
:mod:`~tfrecord_io.cluster.roles` (roles, ``TF_CONFIG``), :mod:`~tfrecord_io.cluster.slots`
(Spark task slots), :mod:`~tfrecord_io.cluster.tensorboard`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tfrecord_io.errors import ClusterError

if TYPE_CHECKING:
    from tfrecord_io.cluster.context import NodeContext
    from tfrecord_io.cluster.driver import Cluster, run
    from tfrecord_io.cluster.options import INPUT_MODES, KERAS
    from tfrecord_io.cluster.results import MetricRecord, Metrics, Resize, Result
    from tfrecord_io.cluster.roles import MODES

__all__ = ["run", "Cluster", "ClusterError", "NodeContext", "MODES", "KERAS", "INPUT_MODES",
           "Result", "Resize", "Metrics", "MetricRecord"]


def __getattr__(name: str) -> Any:
    # Lazy, so that the node process (python -m tfrecord_io.cluster.node) loads only what it uses.
    if name in ("run", "Cluster"):
        from tfrecord_io.cluster import driver  # noqa: PLC0415 - lazy, as said above

        return getattr(driver, name)
    if name == "NodeContext":
        from tfrecord_io.cluster.context import NodeContext  # noqa: PLC0415 - lazy, as said above

        return NodeContext
    if name == "MODES":  # run(mode=...): "sync", "ps"
        from tfrecord_io.cluster.roles import MODES  # noqa: PLC0415 - lazy, as said above

        return MODES
    if name in ("KERAS", "INPUT_MODES"):  # run(keras=...), run(input_mode=...)
        from tfrecord_io.cluster import options  # noqa: PLC0415 - lazy, as said above

        return getattr(options, name)
    if name in ("Result", "Resize", "Metrics", "MetricRecord"):  # what Cluster.wait() returns
        from tfrecord_io.cluster import results  # noqa: PLC0415 - lazy, as said above

        return getattr(results, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
