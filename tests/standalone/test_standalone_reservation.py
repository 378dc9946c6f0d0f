"""A Worker that joins late: ``cluster.run`` waits up to ``reservation_timeout`` for the task
slots its nodes need, starts the nodes once the host is back, and raises ``ClusterError``
(saying how many slots it had) when the host stays away, or, with ``min_workers``, starts with
the workers the hosts up can hold."""

from __future__ import annotations

import threading
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster.application import application_of
from tfrecord_io.errors import ClusterError

import manager_programs
from processes import free_slots_again

LATE = 2  # the host whose Worker is down when the cluster starts


def wait_for_slots(sc, count: int) -> None:
    """Until the task slots of the executors the scheduler has now are *count*, as the
    cluster counts them (one per executor: a task takes all of its cores). Not the block
    managers: one that registers after Spark removed its executor (a host lost right after it
    started) stays listed until its heartbeat times out."""
    free_slots_again(application_of(sc), count)


@pytest.fixture
def host_down(standalone, standalone_spark):
    """Host LATE's Worker and executor are gone: two of three slots left. The test may bring
    the Worker back itself (``rejoin()``); else it is back afterwards."""
    standalone.lose_host(LATE)
    wait_for_slots(standalone_spark.sparkContext, 2)
    back = []

    def rejoin() -> None:
        standalone.restart_worker(LATE)
        back.append(True)

    try:
        yield rejoin
    finally:
        if not back:
            standalone.restart_worker(LATE)
        wait_for_slots(standalone_spark.sparkContext, 3)


def test_a_worker_joining_within_the_reservation_timeout_gets_its_node(
        host_down, standalone_spark, network):
    joiner = threading.Timer(5.0, host_down)
    begun = time.monotonic()
    joiner.start()
    try:
        c = cluster.run(standalone_spark.sparkContext, manager_programs.host_of, {},
                        num_workers=3, reservation_timeout=120)
        with c:
            result = c.wait(timeout=300)
    finally:
        joiner.join()
    assert time.monotonic() - begun > 5.0  # it waited for the late host
    assert sorted(result.values.values()) == sorted(h.address for h in network.hosts)


def test_a_worker_that_stays_away_fails_the_run_after_the_reservation_timeout(
        host_down, standalone_spark):
    begun = time.monotonic()
    with pytest.raises(ClusterError, match=r"needs 3 task slots .* has 2 after waiting 10 s"):
        cluster.run(standalone_spark.sparkContext, manager_programs.raise_on,
                    {"node": "none"}, num_workers=3, reservation_timeout=10)
    waited = time.monotonic() - begun
    assert 10.0 <= waited < 30.0


def test_with_min_workers_a_host_that_stays_away_leaves_a_smaller_gang_after_the_timeout(
        host_down, standalone_spark, network):
    begun = time.monotonic()
    with cluster.run(standalone_spark.sparkContext, manager_programs.host_of, {},
                     num_workers=3, min_workers=2, reservation_timeout=10) as c:
        result = c.wait(timeout=300)
    assert time.monotonic() - begun >= 10.0  # it waited for the third host first
    up = sorted(h.address for i, h in enumerate(network.hosts) if i != LATE)
    assert sorted(result.values) == ["worker:0", "worker:1"]
    assert sorted(result.values.values()) == up
    assert [(r.attempt, r.before, r.after) for r in result.resizes] == [(0, 3, 2)]
    assert "task slots for 2 of the 3 workers" in result.resizes[0].cause
