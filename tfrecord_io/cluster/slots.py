"""How many barrier tasks a Spark application can run at once.

A barrier stage needs all its tasks running together. Spark itself, when slots are short,
re-checks every 15 s for about 10 minutes before it fails; the cluster checks first and fails
at once with the numbers: from the master URL and configuration (what the application will
have), then from the executors registered now (asked of the driver: through py4j, or over
Spark Connect through the jar's driver-status source).
"""

from __future__ import annotations

import os
import re
import threading
import time

from tfrecord_io.cluster.application import SparkApplication
from tfrecord_io.errors import ClusterError

__all__ = [
    "free_slots", "feeding_tasks", "check_feeding", "capacity", "dynamic_allocation", "place",
    "wait_for",
]

#: How often a wait for task slots asks for the free ones.
_POLL = 0.5

_LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]$")


def _task_cpus(app: SparkApplication) -> int:
    return max(1, int(app.conf("spark.task.cpus", "1") or "1"))


def free_slots(app: SparkApplication) -> int | None:
    """Task slots of the executors registered now (what Spark's barrier check counts), or None
    where the driver cannot be asked (a Connect server without the jar)."""
    return app.free_slots()


def feeding_tasks(app: SparkApplication, reserved: int) -> int | None:
    """How many feeding tasks a job runs at most: the task slots left beside the *reserved*
    ones that the cluster's nodes hold, or None where the slots cannot be asked (then one task
    per partition).

    Raises:
        ClusterError: no slot is left beside the nodes' (a feeding job would wait in Spark's
            queue until training ends, which waits for the feed).
    """
    free = app.free_slots()
    if free is None:
        return None
    if free - reserved < 1:
        raise ClusterError(_no_feeding_slot(app, free, reserved))
    return free - reserved


def check_feeding(app: SparkApplication, nodes: list[str]) -> None:
    """Fail at once when the application can never run a feeding task beside the *nodes*
    (their names) that hold one task slot each (``input_mode="spark"``), from what the master
    URL and configuration say it will have.

    Raises:
        ClusterError: naming the slots, the nodes that hold them and the setting to change.
    """
    most = capacity(app)
    if most is not None and most <= len(nodes):
        raise ClusterError(_no_feeding_slot(app, most, len(nodes), ", ".join(nodes)))


def _no_feeding_slot(app: SparkApplication, slots: int, nodes: int, names: str = "") -> str:
    held = f" ({names})" if names else ""
    return (
        f"input_mode='spark' needs a task slot for feeding beside the {nodes} that the "
        f"cluster's nodes{held} hold for the whole training, but this Spark application has "
        f"{slots} ({app.master}, spark.task.cpus={app.conf('spark.task.cpus', '1')}): start it "
        "with more executors or spark.executor.cores (or a bigger local[N] or local-cluster), "
        "or ask for fewer nodes"
    )


def capacity(app: SparkApplication) -> int | None:
    """Task slots the application will have once every executor it asked for has started,
    from the master URL and configuration; None when that cannot be known (e.g. YARN with
    dynamic allocation)."""
    cpus = _task_cpus(app)
    master = app.master
    m = _LOCAL.match(master)
    if m:
        if m.group(1) == "*":
            return (os.cpu_count() or 1) // cpus
        return int(m.group(1) or 1) // cpus
    m = _LOCAL_CLUSTER.match(master)
    if m:
        return int(m.group(1)) * int(m.group(2)) // cpus
    if (app.conf("spark.dynamicAllocation.enabled", "false") or "").lower() == "true":
        return None
    instances = app.conf("spark.executor.instances")
    cores = app.conf("spark.executor.cores")
    if instances and cores:
        return int(instances) * int(cores) // cpus
    cores_max = app.conf("spark.cores.max")
    if cores_max:
        return int(cores_max) // cpus
    return None


def dynamic_allocation(app: SparkApplication) -> bool:
    """Whether Spark allocates this application's executors dynamically, as Spark decides it
    (``spark.dynamicAllocation.enabled``, which local masters ignore unless testing)."""
    enabled = app.conf("spark.dynamicAllocation.enabled", "false") or "false"
    if enabled.strip().lower() != "true":
        return False
    testing = app.conf("spark.dynamicAllocation.testing", "false") or "false"
    return not app.master.startswith("local") or testing.lower() == "true"


def _pause(stop: threading.Event | None) -> None:
    """Waits until the next look at the free slots; ClusterError once *stop* is set."""
    if stop is None:
        time.sleep(_POLL)
    elif stop.wait(_POLL):
        raise ClusterError("stopped while waiting for task slots")


def wait_for(app: SparkApplication, needed: int, timeout: float,
             stop: threading.Event | None = None) -> None:
    """Fail at once if the application can never run *needed* tasks together (too few slots,
    or dynamic allocation, which Spark's barrier stages refuse); else wait (up to *timeout*,
    or until *stop* is set) for executors still starting (where the application can say how
    many run: not over Spark Connect).

    Raises:
        ClusterError: dynamic allocation is on, or too few slots, now or after *timeout*; the
            message says what to change. Or *stop* was set while waiting.
    """
    if dynamic_allocation(app):
        raise ClusterError(
            "the cluster runs as a Spark barrier stage, and Spark does not run barrier stages "
            "with dynamic allocation (SPARK-24954): start the application with "
            "spark.dynamicAllocation.enabled=false and a fixed spark.executor.instances "
            f"(at least {needed} task slots in all)"
        )
    most = capacity(app)
    if most is not None and most < needed:
        raise ClusterError(
            f"the cluster needs {needed} task slots (one per node), but this Spark application "
            f"has {most} ({app.master}, "
            f"spark.task.cpus={app.conf('spark.task.cpus', '1')}): "
            "start it with more executors or cores, or ask for fewer nodes"
        )
    deadline = time.monotonic() + timeout
    while True:
        free = free_slots(app)
        if free is None or free >= needed:
            return
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"the cluster needs {needed} task slots (one per node), but this Spark "
                f"application has {free} after waiting {timeout:.0f} s for executors: start it "
                "with more executors or cores, or ask for fewer nodes"
            )
        _pause(stop)


def room(app: SparkApplication, others: int, spare: int = 0) -> int | None:
    """How many workers the application's task slots hold now beside the *others* nodes and
    *spare* slots (a feeding task's), or None where the slots cannot be counted."""
    free = free_slots(app)
    return None if free is None else free - others - spare


def place(app: SparkApplication, others: int, most: int, fewest: int, timeout: float,
          spare: int = 0, wait: bool = True, stop: threading.Event | None = None) -> int:
    """How many workers an elastic attempt starts with (``cluster.run(min_workers=...)``):
    *most* once the application has task slots for them, the *others* nodes and *spare*
    slots (a feeding task's) free; else, after *timeout* seconds, as many as the free slots
    allow, at least *fewest*. When the master URL and configuration say the application will
    never have slots for *most*, it does not wait for them; with *wait* False (a restart), it
    waits only for *fewest*, taking as many as there are slots for now.

    Raises:
        ClusterError: dynamic allocation is on, or not even *fewest* workers can be placed
            (known at once, or after *timeout*); the message says what to change. Or *stop*
            was set while waiting.
    """
    least = others + fewest + spare
    cap = capacity(app)
    if dynamic_allocation(app) or (cap is not None and cap < least):
        wait_for(app, least, timeout, stop)  # raises at once, saying why
    target = most if cap is None else min(most, cap - others - spare)
    deadline = time.monotonic() + timeout
    while True:
        workers = room(app, others, spare)
        if workers is None or workers >= target:
            return target
        if workers >= fewest and (not wait or time.monotonic() >= deadline):
            return workers
        if time.monotonic() >= deadline:
            free = workers + others + spare
            raise ClusterError(
                f"the cluster needs task slots for at least {fewest} worker(s) "
                f"(min_workers) besides its {others} other node(s)"
                + (f" and {spare} feeding task" if spare else "")
                + f", {least} in all, but this Spark application has {free} free after "
                f"waiting {timeout:.0f} s for executors: start it with more executors or "
                "cores, or lower min_workers"
            )
        _pause(stop)
