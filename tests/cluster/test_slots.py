"""What the slots check decides from a Spark application's master and configuration alone,
before any job: dynamic allocation fails at once, naming the setting (Spark refuses barrier
stages with it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tfrecord_io.cluster import slots
from tfrecord_io.cluster.application import ClassicApplication, ConnectApplication
from tfrecord_io.errors import ClusterError


@dataclass
class Context:
    """The two things the check reads of a SparkContext: its master and its settings."""

    master: str
    settings: dict[str, str] = field(default_factory=dict)

    def getConf(self):  # noqa: N802 - SparkContext's name
        return self.settings


def Application(master, settings=None):  # noqa: N802 - reads as the thing it makes
    return ClassicApplication(Context(master, dict(settings or {})))


@dataclass
class RuntimeConfig:
    settings: dict[str, str]

    def get(self, key, default=None):
        return self.settings.get(key, default)


@dataclass
class ConnectSession:
    """What a Spark Connect session shows of its application: ``spark.conf``."""

    conf: RuntimeConfig


def connect_application(settings):
    return ConnectApplication(ConnectSession(RuntimeConfig(settings)))


def test_dynamic_allocation_on_yarn_fails_at_once_naming_the_setting():
    app = Application("yarn", {"spark.dynamicAllocation.enabled": "true"})
    with pytest.raises(ClusterError) as failure:
        slots.wait_for(app, 3, timeout=600)
    text = str(failure.value)
    assert "spark.dynamicAllocation.enabled=false" in text
    assert "SPARK-24954" in text and "at least 3 task slots" in text


def test_local_masters_ignore_dynamic_allocation_as_spark_does():
    assert not slots.dynamic_allocation(
        Application("local[4]", {"spark.dynamicAllocation.enabled": "true"}))
    assert slots.dynamic_allocation(Application(
        "local-cluster[2,1,1024]", {"spark.dynamicAllocation.enabled": "true",
                                    "spark.dynamicAllocation.testing": "true"}))


def test_dynamic_allocation_off_or_unset_is_no_objection():
    assert not slots.dynamic_allocation(Application("spark://master:7077"))
    assert not slots.dynamic_allocation(
        Application("yarn", {"spark.dynamicAllocation.enabled": "false"}))


def test_over_connect_capacity_comes_from_the_master_and_settings():
    assert slots.capacity(connect_application({"spark.master": "local-cluster[2,1,1024]"})) == 2
    assert slots.capacity(connect_application({"spark.master": "local[4]",
                                               "spark.task.cpus": "2"})) == 2
    assert slots.capacity(connect_application({
        "spark.master": "yarn", "spark.executor.instances": "3",
        "spark.executor.cores": "2"})) == 6
    assert slots.capacity(connect_application({"spark.master": "yarn"})) is None


def test_over_connect_too_few_slots_fail_before_submitting_naming_the_numbers():
    app = connect_application({"spark.master": "local-cluster[2,1,1024]"})
    with pytest.raises(ClusterError, match=r"needs 3 task slots .* has 2 \(local-cluster"):
        slots.wait_for(app, 3, timeout=600)


def test_over_connect_unknown_free_slots_leave_the_wait_to_spark():
    slots.wait_for(connect_application({"spark.master": "yarn"}), 3, timeout=600)


def test_feeding_with_no_slot_beside_the_nodes_fails_at_once_naming_them():
    app = Application("local-cluster[2,1,1024]")
    with pytest.raises(ClusterError) as failure:
        slots.check_feeding(app, ["worker:0", "worker:1"])
    text = str(failure.value)
    assert "has 2 (local-cluster[2,1,1024]" in text
    assert "(worker:0, worker:1)" in text and "spark.executor.cores" in text


def test_feeding_with_a_slot_beside_the_nodes_passes():
    slots.check_feeding(Application("local-cluster[2,2,1024]"), ["worker:0", "worker:1"])


@dataclass
class Counted:
    """An application whose driver counts *free* task slots now."""

    free: int | None
    master: str = "spark://master:7077"

    def free_slots(self):
        return self.free

    def conf(self, key, default=None):
        return default


def test_feeding_tasks_are_the_slots_left_beside_the_nodes():
    assert slots.feeding_tasks(Counted(5), reserved=2) == 3
    assert slots.feeding_tasks(Counted(None), reserved=2) is None


def test_no_free_slot_beside_the_nodes_fails_instead_of_waiting_in_sparks_queue():
    with pytest.raises(ClusterError, match="needs a task slot for feeding beside the 2"):
        slots.feeding_tasks(Counted(2), reserved=2)


def test_an_elastic_attempt_takes_every_worker_once_there_are_slots_for_them():
    assert slots.place(Counted(6), others=1, most=4, fewest=2, timeout=0.0, spare=1) == 4
    assert slots.place(Counted(None), others=1, most=4, fewest=2, timeout=0.0) == 4


def test_after_the_timeout_an_elastic_attempt_takes_the_workers_there_are_slots_for():
    # 4 free: the ps-mode chief, a feeding task's slot and 2 workers
    assert slots.place(Counted(4), others=1, most=5, fewest=2, timeout=0.0, spare=1) == 2


def test_a_restart_takes_the_workers_there_are_slots_for_now_without_waiting():
    assert slots.place(Counted(3), others=0, most=4, fewest=2, timeout=600.0, wait=False) == 3


def test_fewer_slots_than_min_workers_fail_after_the_timeout_naming_them():
    with pytest.raises(ClusterError, match=r"at least 3 worker\(s\) \(min_workers\) besides "
                                           r"its 1 other node\(s\) and 1 feeding task, 5 in "
                                           r"all, but this Spark application has 4 free"):
        slots.place(Counted(4), others=1, most=5, fewest=3, timeout=0.0, spare=1)


def test_an_elastic_attempt_does_not_wait_for_slots_the_application_will_never_have():
    app = Application("local-cluster[2,2,1024]")  # 4 slots, all free once the executors run
    app.free_slots = lambda: 4
    assert slots.place(app, others=0, most=6, fewest=2, timeout=600.0) == 4


def test_min_workers_beyond_the_applications_slots_fail_at_once():
    app = Application("local-cluster[2,2,1024]")
    with pytest.raises(ClusterError, match="needs 5 task slots"):
        slots.place(app, others=0, most=6, fewest=5, timeout=600.0)
