"""Why a node's executor was lost, as Spark's scheduler says: the words a ClusterError adds.

A node whose Spark task loses its link to the driver names no cause itself: its executor (or
its whole YARN container, or its host) is gone. :class:`ExecutorLosses` asks the jar's listener
(``org.tfrecordio.spark.cluster.ExecutorLosses``, added to the driver's SparkContext when a
cluster starts; through py4j, or over Spark Connect through the jar's driver-status source)
which executor ran the node's task and why Spark removed it -- the reason the cluster
manager gave: on YARN the container's id, exit status and YARN's diagnostic, on a standalone
cluster the Master's ("worker lost", the executor's exit code), on Kubernetes the pod's.
:func:`describe` words it, and names the settings to raise for a container killed for memory.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

__all__ = ["ExecutorLosses", "Lookup", "LOSS_WAIT", "describe"]

log = logging.getLogger("tfrecord_io.cluster")

#: How long after a link drops the driver waits for Spark to say why (YARN's ApplicationMaster
#: learns a container's end on its next heartbeat with the ResourceManager, every 3 s).
LOSS_WAIT = 8.0

_MEMORY = re.compile(r"exceeding (physical|virtual) memory limits")
# YARN's exit statuses of a container killed for memory (ContainerExitStatus.KILLED_EXCEEDED_*).
_MEMORY_EXIT = {"physical": -104, "virtual": -103}


#: Asks the driver what it knows of the executor that ran a task: (task id, seconds to wait
#: for Spark's reason) -> ``executor`` and, when known, ``host``, ``container``, ``reason``; or
#: None for a task never seen.
Lookup = Callable[[int, float], "dict[str, str] | None"]


class ExecutorLosses:
    """The causes Spark records for the executors of one application (see the module docs),
    asked through *lookup*: the jar's listener through py4j (a classic driver,
    :func:`tfrecord_io.spark.jvm.executor_loss`), or its driver-status source over Spark
    Connect."""

    def __init__(self, lookup: Lookup) -> None:
        self._lookup = lookup

    def executor_of(self, task_id: int) -> str | None:
        """The id of the executor that ran the Spark task *task_id*, as Spark knows it now
        (without waiting), or None."""
        try:
            loss = self._lookup(task_id, 0.0)
        except Exception:
            log.warning("could not ask Spark which executor ran task %s", task_id, exc_info=True)
            return None
        return str(loss["executor"]) if loss and loss.get("executor") is not None else None

    def explain(self, task_id: int, timeout: float, container: str | None = None) -> str | None:
        """The loss of the executor that ran the Spark task *task_id*, in words (waiting up to
        *timeout* s more for Spark's reason, until :data:`LOSS_WAIT` after the loss); None if
        the listener never saw the task.

        *container*: the task's YARN container as the task saw it (``CONTAINER_ID``), for
        executors that registered before the listener was added."""
        try:
            loss = self._lookup(task_id, timeout)
        except Exception:
            log.warning("could not ask Spark why task %s's executor was lost", task_id,
                        exc_info=True)
            return None
        if loss is None:
            return None
        if container and not loss.get("container"):
            loss["container"] = container
        return describe(loss, LOSS_WAIT)


def describe(loss: dict[str, str], waited: float) -> str:
    """Words for what :func:`tfrecord_io.spark.jvm.executor_loss` returned: which executor,
    host and YARN container, and why Spark removed it (*waited*: how long after the loss Spark
    had to say that)."""
    where = f"executor {loss['executor']}"
    if loss.get("host"):
        where += f" on {loss['host']}"
    if loss.get("container"):
        where += f" (YARN container {loss['container']})"
    reason = loss.get("reason")
    if not reason:
        return (f"Spark gave no reason for losing {where} within {waited:.0f} s (it still "
                "counted the executor alive)")
    text = f"Spark lost {where}: {reason.strip()}"
    memory = _MEMORY.search(reason)
    if memory:
        text += (
            f" (YARN exit status {_MEMORY_EXIT[memory.group(1)]}). A YARN container holds "
            "spark.executor.memory (the executor's JVM heap) plus "
            "spark.executor.memoryOverhead (the rest of its process tree: the JVM's off-heap "
            "memory, the Python workers and the TensorFlow node process) plus "
            "spark.executor.pyspark.memory when set: raise spark.executor.memoryOverhead (or "
            "spark.executor.pyspark.memory), or make the node use less"
        )
    return text
