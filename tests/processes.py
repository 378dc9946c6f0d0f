"""A cluster's processes on this machine, looked at for real: its node processes (running or
left behind, and the pids they wrote when they started), listening ports, the executor a
process runs under, and the task slots the application has again after a test lost an
executor (for the tests of tests/cluster, tests/yarn and tests/standalone; a test module
cannot import ``conftest``, several share that name)."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from waiting import eventually, wait_until


def node_processes(cluster_name: str) -> list[psutil.Process]:
    """Live processes of the cluster's nodes: the node's working directory carries the
    cluster's name, and a node started as a new interpreter names it on its command line too
    (a node forked from a Spark worker keeps the worker's command line)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status", "cwd"]):
        cmdline = p.info["cmdline"] or []
        running = p.info["status"] != psutil.STATUS_ZOMBIE
        if running and any(cluster_name in part for part in [*cmdline, p.info["cwd"] or ""]):
            found.append(p)
    return found


def node_processes_after(cluster_name: str, timeout: float) -> list[psutil.Process]:
    """:func:`node_processes` once none is left or *timeout* seconds have passed: for a node
    on a host that was cut off, whose executor hears the job's cancellation only once its link
    is back (TCP's retransmission backs off over the cut)."""
    wait_until(lambda: not node_processes(cluster_name), timeout, every=0.5)
    return node_processes(cluster_name)


def alive(pid: int) -> bool:
    """Whether a process *pid* exists (a zombie not yet reaped counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def node_pids(out: Path) -> dict[str, int]:
    """The pids that nodes wrote to ``OUT/<job>-<index>.pid``, by file stem (``worker-1``)."""
    return {p.stem: int(p.read_text()) for p in out.glob("*.pid") if p.read_text()}


def started_nodes(out: Path, count: int, timeout: float = 180.0) -> dict[str, int]:
    """:func:`node_pids` once *count* nodes have written theirs."""
    __tracebackhide__ = True

    def all_started() -> dict[str, int] | None:
        pids = node_pids(out)
        return pids if len(pids) == count else None

    return eventually(all_started, timeout=timeout, every=0.2,
                      what=lambda: f"{count} nodes started (pids {node_pids(out)})")


def free_slots_again(application, slots: int, timeout: float = 120.0) -> None:
    """Wait until the Spark application has *slots* free task slots again: after a test lost
    an executor, the master starts one in its place, for the tests after it."""
    __tracebackhide__ = True
    eventually(lambda: application.free_slots() == slots, timeout=timeout, every=0.5,
               what=lambda: f"{application.free_slots()} free task slots, not {slots}")


def executor_of(pid: int) -> int:
    """The pid of the Spark executor JVM that *pid* is (a feeding task reports its JVM's pid),
    or that it descends from (a Python worker, or a process it started)."""
    process = psutil.Process(pid)
    for p in [process, *process.parents()]:
        if "CoarseGrainedExecutorBackend" in " ".join(p.cmdline()):
            return p.pid
    raise AssertionError(f"process {pid} does not run under a Spark executor")


def listening_ports() -> set[int]:
    """Ports on which something listens now (TCP, any address)."""
    return {
        c.laddr.port
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN
    }


def spec_ports(cluster_spec: dict) -> set[int]:
    return {int(a.rsplit(":", 1)[1]) for addrs in cluster_spec.values() for a in addrs}
