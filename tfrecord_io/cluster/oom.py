"""Whether the kernel's out-of-memory killer ended a node process.

A node process killed by ``SIGKILL`` may have been killed by hand, by its task (frozen), or by
the kernel's OOM killer: when the memory cgroup it runs in (its container's, its executor's)
reaches its limit, or when the host runs out of memory. Only the last needs more memory, and
the signal alone does not tell them apart. The kernel counts its kills, though: in each memory
cgroup, for its processes, whatever ran out (the ``oom_kill`` line of ``memory.events`` under
cgroup v2, of ``memory.oom_control`` under v1), and for the whole host (``oom_kill`` in
``/proc/vmstat``, read only when the cgroup's count cannot be). :class:`OomWatch` reads the
counts when a process starts; a count that rose by the time it was killed names the cause.
"""

from __future__ import annotations

import os

__all__ = ["OomWatch"]

_CGROUP_ROOT = "/sys/fs/cgroup"
_VMSTAT = "/proc/vmstat"


def _cgroup_counter(pid: int) -> str | None:
    """The file counting the OOM kills of *pid*'s memory cgroup, or None (no such file, or
    no memory cgroup that this process can see)."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):  # cgroup v1's memory hierarchy
            candidates.append((os.path.join(_CGROUP_ROOT, "memory"), path, "memory.oom_control"))
        elif not controllers:  # cgroup v2's unified hierarchy
            candidates.append((_CGROUP_ROOT, path, "memory.events"))
    for mount, path, name in candidates:
        # A cgroup namespace shows the path from its own root: drop leading parts until the
        # directory is found under the mount.
        parts = [p for p in path.split("/") if p]
        for start in range(len(parts) + 1):
            counter = os.path.join(mount, *parts[start:], name)
            if os.path.isfile(counter):
                return counter
    return None


def _oom_kills(path: str | None) -> int | None:
    """The ``oom_kill`` count of a counter file (``key value`` lines), or None."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


class OomWatch:
    """The kernel's OOM kills counted for a process's memory cgroup and for its host, from when
    the watch is made (just after the process started) to when :meth:`cause` is asked (once it
    has been killed)."""

    def __init__(self, pid: int) -> None:
        self._counter = _cgroup_counter(pid)
        self._cgroup = _oom_kills(self._counter)
        self._host = _oom_kills(_VMSTAT)

    def cause(self) -> str | None:
        """Why the process was killed, when the OOM killer did it: a sentence saying so and
        what to do, or None (no OOM kill counted meanwhile, or the counts cannot be read)."""
        cgroup = _oom_kills(self._counter)
        if cgroup is not None and self._cgroup is not None:
            # The victim's cgroup counts every OOM kill of its processes, the host's too.
            if cgroup <= self._cgroup:
                return None
            where = ("the kernel's out-of-memory killer killed a process of its memory "
                     "cgroup (its container's or executor's) while it ran, most likely this "
                     "one: the cgroup reached its memory limit, or the host ran out of memory")
        else:
            host = _oom_kills(_VMSTAT)
            if host is None or self._host is None or host <= self._host:
                return None
            where = ("the kernel's out-of-memory killer ended a process on its host while it "
                     "ran, most likely this one")
        return (f"{where}. Give it more memory (on YARN or Kubernetes raise "
                "spark.executor.memoryOverhead: TensorFlow's memory is outside the JVM heap) "
                "or make main_fun use less")
