"""Fixtures and helpers of the cluster tests: processes and ports of a cluster, listed for real."""

from __future__ import annotations

import logging

import psutil
import pytest
from pyspark import cloudpickle

import cluster_programs
import feed_programs

# Node programs travel by value: executors and node processes do not have tests/ on their path.
cloudpickle.register_pickle_by_value(cluster_programs)
cloudpickle.register_pickle_by_value(feed_programs)


def node_processes(cluster_name: str) -> list[psutil.Process]:
    """Live processes of the cluster's nodes: their command lines name the node's working
    directory, which carries the cluster's name."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmdline = p.info["cmdline"] or []
        alive = p.info["status"] != psutil.STATUS_ZOMBIE
        if alive and any(cluster_name in part for part in cmdline):
            found.append(p)
    return found


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


@pytest.fixture
def cluster_log(caplog):
    """Records of the ``tfrecord_io.cluster`` logger at INFO."""
    caplog.set_level(logging.INFO, logger="tfrecord_io.cluster")
    return caplog
