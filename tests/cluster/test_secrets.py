"""The cluster's secret and the keys derived from it are seen by the cluster only: a fed
cluster on a classic session and on a Spark Connect client leaves them in no event log (what
Spark's history server and the Connect server's UI show: plans with their options, job
descriptions, configuration), no log line and no repr."""

from __future__ import annotations

import json
import logging

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster import channel, driver

import feed_programs


@pytest.fixture
def known_secret(monkeypatch):
    """The secret the next cluster makes, and its two keys."""
    secret = channel.new_secret()
    monkeypatch.setattr(driver, "new_secret", lambda: secret)
    return [secret, channel.control_key(secret), channel.feed_key(secret)]


def _event_log_text(directory) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                     for p in directory.rglob("*") if p.is_file())


def test_a_fed_cluster_leaves_no_key_in_event_logs_logs_or_reprs(
        any_spark, known_secret, event_logs, tmp_path, caplog):
    data = any_spark.range(0, 200, 1, numPartitions=2).selectExpr("id")
    args = {"out": str(tmp_path), "epochs": 1, "features": {"train": "example"}}
    # tfrecord-io's own loggers at DEBUG, every other one at INFO (py4j's DEBUG trace prints
    # every argument of every call into the JVM: a debugging aid that shows any credential)
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="tfrecord_io")
    c = cluster.run(any_spark, feed_programs.read_epochs, args, num_workers=2,
                    input_mode="spark", progress=False, reservation_timeout=300)
    with c:
        report = c.train(data, num_epochs=1, timeout=300)
        shown = [repr(c), repr(report), str(report)]
        c.wait(timeout=300)
    read = [json.loads((tmp_path / f"worker-{w}-read.json").read_text()) for w in range(2)]
    assert sorted(sum((r["epochs"]["train"][0] for r in read), [])) == list(range(200))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    events = _event_log_text(event_logs)
    assert "SparkListenerJobStart" in events  # the log is there and has this run's jobs
    for value in known_secret:
        assert value not in events
        assert value not in logged
        assert not any(value in text for text in shown)
