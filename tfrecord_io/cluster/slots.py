"""How many barrier tasks a Spark application can run at once.

A barrier stage needs all its tasks running together. Spark itself, when slots are short,
re-checks every 15 s for about 10 minutes before it fails; the cluster checks first and fails
at once with the numbers.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["free_slots", "capacity"]

_LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]$")


def _task_cpus(sc: Any) -> int:
    return max(1, int(sc.getConf().get("spark.task.cpus", "1")))


def free_slots(sc: Any) -> int:
    """Task slots of the executors registered now (what Spark's barrier check counts)."""
    jsc = sc._jsc.sc()  # noqa: SLF001 - Spark's own Python API has no such call
    profile = jsc.resourceProfileManager().defaultResourceProfile()
    return int(jsc.maxNumConcurrentTasks(profile))


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
