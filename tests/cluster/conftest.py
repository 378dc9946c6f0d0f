"""Fixtures of the cluster tests (the checks of what a cluster left behind: ``processes``)."""

from __future__ import annotations

import logging

import pytest
from pyspark import cloudpickle

import cluster_programs
import feed_programs

# Node programs travel by value: executors and node processes do not have tests/ on their path.
cloudpickle.register_pickle_by_value(cluster_programs)
cloudpickle.register_pickle_by_value(feed_programs)


@pytest.fixture
def cluster_log(caplog):
    """Records of the ``tfrecord_io.cluster`` logger at INFO."""
    caplog.set_level(logging.INFO, logger="tfrecord_io.cluster")
    return caplog


@pytest.fixture(scope="module")
def fed_records(sc):
    """A cached RDD of ``feed_programs.FED_RECORDS`` raw records ``b"r<N>"`` in 2 partitions,
    to feed."""
    rdd = sc.parallelize([b"r%d" % i for i in range(feed_programs.FED_RECORDS)], 2).cache()
    rdd.count()
    yield rdd
    rdd.unpersist()
