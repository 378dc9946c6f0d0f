"""How many barrier tasks a Spark application can run at once.

A barrier stage needs all its tasks running together. Spark itself, when slots are short,
re-checks every 15 s for about 10 minutes before it fails; the cluster checks first and fails
at once with the numbers.
"""

from __future__ import annotations

import re
import time
from typing import Any

from tfrecord_io.errors import ClusterError
from tfrecord_io.spark.jvm import max_concurrent_tasks

__all__ = ["free_slots", "capacity", "dynamic_allocation", "wait_for"]

_LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]$")


def _task_cpus(sc: Any) -> int:
    return max(1, int(sc.getConf().get("spark.task.cpus", "1")))


def free_slots(sc: Any) -> int:
    """Task slots of the executors registered now (what Spark's barrier check counts)."""
    return max_concurrent_tasks(sc)


def capacity(sc: Any) -> int | None:
    """Task slots the application will have once every executor it asked for has started,
    from the master URL and configuration; None when that cannot be known (e.g. YARN with
    dynamic allocation)."""
    conf = sc.getConf()
    cpus = _task_cpus(sc)
    master = sc.master
    m = _LOCAL.match(master)
    if m:
        if m.group(1) == "*":
            import os  # noqa: PLC0415

            return (os.cpu_count() or 1) // cpus
        return int(m.group(1) or 1) // cpus
    m = _LOCAL_CLUSTER.match(master)
    if m:
        return int(m.group(1)) * int(m.group(2)) // cpus
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return None
    instances = conf.get("spark.executor.instances")
    cores = conf.get("spark.executor.cores")
    if instances and cores:
        return int(instances) * int(cores) // cpus
    cores_max = conf.get("spark.cores.max")
    if cores_max:
        return int(cores_max) // cpus
    return None


def dynamic_allocation(sc: Any) -> bool:
    """Whether Spark allocates this application's executors dynamically, as Spark decides it
    (``spark.dynamicAllocation.enabled``, which local masters ignore unless testing)."""
    conf = sc.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").strip().lower() != "true":
        return False
    local = sc.master.startswith("local")
    return not local or conf.get("spark.dynamicAllocation.testing", "false").lower() == "true"


def wait_for(sc: Any, needed: int, timeout: float) -> None:
    """Fail at once if the application can never run *needed* tasks together (too few slots,
    or dynamic allocation, which Spark's barrier stages refuse); else wait (up to *timeout*)
    for executors still starting.

    Raises:
        ClusterError: dynamic allocation is on, or too few slots, now or after *timeout*; the
            message says what to change.
    """
    if dynamic_allocation(sc):
        raise ClusterError(
            "the cluster runs as a Spark barrier stage, and Spark does not run barrier stages "
            "with dynamic allocation (SPARK-24954): start the application with "
            "spark.dynamicAllocation.enabled=false and a fixed spark.executor.instances "
            f"(at least {needed} task slots in all)"
        )
    most = capacity(sc)
    if most is not None and most < needed:
        raise ClusterError(
            f"the cluster needs {needed} task slots (one per node), but this Spark application "
            f"has {most} ({sc.master}, "
            f"spark.task.cpus={sc.getConf().get('spark.task.cpus', '1')}): "
            "start it with more executors or cores, or ask for fewer nodes"
        )
    deadline = time.monotonic() + timeout
    while True:
        free = free_slots(sc)
        if free >= needed:
            return
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"the cluster needs {needed} task slots (one per node), but this Spark "
                f"application has {free} after waiting {timeout:.0f} s for executors: start it "
                "with more executors or cores, or ask for fewer nodes"
            )
        time.sleep(0.5)
