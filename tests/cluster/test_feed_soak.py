"""A short run of the feed soak (``bench/feed_soak.py``) on the real local-cluster: the case
that once hung (two feeds fed in turns without blocking, after earlier clusters on the same
SparkContext) several times, then one scenario of every other kind. Each is bounded in time:
a hang fails the test instead of hanging it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle

_PATH = Path(__file__).resolve().parents[2] / "bench" / "feed_soak.py"
_spec = importlib.util.spec_from_file_location("feed_soak", _PATH)
feed_soak = importlib.util.module_from_spec(_spec)
sys.modules["feed_soak"] = feed_soak
_spec.loader.exec_module(feed_soak)
cloudpickle.register_pickle_by_value(feed_soak)  # executors do not have bench/ on their path

LIMIT = 240.0


@pytest.mark.parametrize("seed", range(2))
def test_two_feeds_fed_in_turns_end_with_every_record_once(spark, tmp_path, seed):
    outcome = feed_soak.run_one(spark, feed_soak.plan(seed, "turns"), tmp_path, LIMIT)
    assert outcome["outcome"] == "ok", outcome


@pytest.mark.parametrize("kind", ["blocking", "three", "stop", "fail", "stream"])
def test_each_kind_of_soak_scenario_ends_as_it_should(spark, tmp_path, kind):
    outcome = feed_soak.run_one(spark, feed_soak.plan(7, kind), tmp_path, LIMIT)
    assert outcome["outcome"] == "ok", outcome
