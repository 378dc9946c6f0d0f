"""What the slots check decides from a Spark application's master and configuration alone,
before any job: dynamic allocation fails at once, naming the setting (Spark refuses barrier
stages with it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tfrecord_io.cluster import slots
from tfrecord_io.errors import ClusterError


@dataclass
class Application:
    """The two things the check reads of a SparkContext: its master and its settings."""

    master: str
    conf: dict[str, str] = field(default_factory=dict)

    def getConf(self):  # noqa: N802 - SparkContext's name
        return self.conf


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
