"""What a cluster reports back: every node's return value and the chief's in ``wait()``'s
Result, the metrics of ``ctx.report`` in order (also those of a failed attempt), ``on_report``,
the progress line, Keras's callback; and a shutdown that cannot lose work. On a real
local-cluster."""

from __future__ import annotations

import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.cluster.results import MAX_VALUE_BYTES, MetricRecord, Metrics, Result

import cluster_programs
from processes import node_processes


@pytest.fixture(scope="module")
def reported(sc):
    """Two sync workers report 3 steps each and return a value; worker:1 fails after its
    reports on the first attempt, the second attempt succeeds."""
    seen = []
    c = cluster.run(sc, cluster_programs.report_and_return, {"steps": 3, "fail_on": "worker:1"},
                    num_workers=2, max_attempts=2, on_report=seen.append, progress=False)
    result = c.wait(timeout=300)
    return result, seen, c


def test_wait_returns_every_nodes_value_and_the_chiefs(reported):
    result, _, _ = reported
    assert isinstance(result, Result)
    assert result.values == {"worker:0": {"node": "worker:0", "attempt": 1},
                             "worker:1": {"node": "worker:1", "attempt": 1}}
    assert result.chief == {"node": "worker:0", "attempt": 1}
    assert result.attempts == 2
    assert result.elapsed > 0


def test_the_metrics_of_every_node_arrive_in_order_also_from_the_failed_attempt(reported):
    result, _, _ = reported
    for attempt in (0, 1):
        for index in (0, 1):
            steps = [(r.step, r.values) for r in result.metrics
                     if r.attempt == attempt and r.node == f"worker:{index}"]
            assert steps == [(s, {"loss": s / 10, "index": float(index)}) for s in (1, 2, 3)]


def test_on_report_is_called_with_each_record_in_order(reported):
    result, seen, c = reported
    assert seen == list(result.metrics)
    assert c.metrics == result.metrics


def test_the_result_has_every_report_while_a_slow_on_report_is_still_behind(sc):
    called = []

    def slow(record):  # holds the reports' thread while the attempt ends
        called.append(record)
        if len(called) == 1:
            time.sleep(3)

    c = cluster.run(sc, cluster_programs.report_and_return, {"steps": 3}, num_workers=2,
                    on_report=slow, progress=False)
    result = c.wait(timeout=300)
    assert sorted((r.node, r.step) for r in result.metrics) == [
        (f"worker:{w}", s) for w in (0, 1) for s in (1, 2, 3)]
    assert called == list(result.metrics)  # on_report still saw each, in the same order


def test_metrics_become_a_pandas_frame(reported):
    frame = reported[0].metrics.to_pandas()
    assert list(frame.columns[:4]) == ["node", "attempt", "step", "time"]
    assert len(frame) == 12 and set(frame["loss"]) == {0.1, 0.2, 0.3}


def test_a_metric_named_like_a_records_column_gets_a_column_of_its_own():
    metrics = Metrics([
        MetricRecord("worker:0", 0, 1, 1000.0, {"loss": 0.5, "time": 2.5, "node": 7.0}),
        MetricRecord("worker:1", 1, None, 1001.0, {"loss": 0.25}),
    ])
    frame = metrics.to_pandas()
    assert list(frame.columns) == ["node", "attempt", "step", "time", "loss", "time_metric",
                                   "node_metric"]
    assert frame["node"].tolist() == ["worker:0", "worker:1"]
    assert frame["time"].tolist() == [1000.0, 1001.0]
    assert frame["time_metric"].iloc[0] == 2.5 and frame["node_metric"].iloc[0] == 7.0


def test_a_renamed_metric_takes_no_other_metrics_column():
    frame = Metrics([MetricRecord("worker:0", 0, 1, 1000.0,
                                  {"time": 2.5, "time_metric": 3.5})]).to_pandas()
    assert frame[["time", "time_metric_metric", "time_metric"]].values.tolist() == [
        [1000.0, 2.5, 3.5]]


def test_the_progress_line_shows_the_attempt_and_the_last_metrics(sc, capsys):
    with cluster.run(sc, cluster_programs.report_and_return, {"steps": 2},
                     num_workers=1, progress=True) as c:
        c.wait(timeout=300)
    err = capsys.readouterr().err
    assert "attempt 1" in err and "1/1 nodes" in err
    assert "[worker:0] step 2 loss=0.2 index=0" in err


def test_where_the_line_cannot_render_the_attempt_and_last_reports_are_logged_once(
    sc, capsys, cluster_log
):
    with cluster.run(sc, cluster_programs.report_and_return, {"steps": 3},
                     num_workers=2) as c:  # standard error is captured: not a terminal
        c.wait(timeout=300)
    assert "nodes" not in capsys.readouterr().err
    lines = [r.getMessage() for r in cluster_log.records if c.name in r.getMessage()]
    assert [line for line in lines if "nodes running" in line] == [
        f"{c.name}: attempt 1: 2/2 nodes running"]
    last = sorted(line for line in lines if "last report" in line)
    assert last == [f"{c.name}: last report of attempt 1: [worker:{i}] step 3 loss=0.3 index={i}"
                    for i in range(2)]


def test_a_failure_prints_the_nodes_traceback_without_any_logging_setup(sc, capsys):
    with pytest.raises(cluster.ClusterError):
        with cluster.run(sc, cluster_programs.report_and_return, {"fail_on": "worker:0"},
                         num_workers=1, progress=False) as c:
            c.wait(timeout=300)
    err = capsys.readouterr().err
    assert "worker:0 failed" in err and "planned failure after reporting" in err
    assert "Traceback" in err


def test_a_value_over_the_bound_fails_the_node_with_what_to_do(sc):
    with pytest.raises(cluster.ClusterError, match="return their paths") as info:
        with cluster.run(sc, cluster_programs.report_and_return,
                         {"steps": 0, "big": MAX_VALUE_BYTES + 1}, num_workers=1,
                         progress=False) as c:
            c.wait(timeout=300)
    assert info.value.node == "worker:0"


def test_main_fun_ending_with_sys_exit_0_finishes_returning_none(sc):
    with cluster.run(sc, cluster_programs.exit_with, {"code": 0}, num_workers=1,
                     progress=False) as c:
        result = c.wait(timeout=300)
    assert result.values == {"worker:0": None}
    assert result.attempts == 1


def test_keras_callback_reports_every_epoch_and_every_nth_batch(sc):
    with cluster.run(sc, cluster_programs.keras_report, {}, num_workers=1, keras="legacy",
                     progress=False) as c:
        result = c.wait(timeout=300)
    steps = [(r.step, sorted(r.values)) for r in result.metrics]
    assert [s for s, names in steps if names == ["loss"]] == [2, 4, 1, 6, 8, 2, 10, 12, 3]


def test_a_with_block_left_without_wait_trains_to_the_end(sc, tmp_path):
    with cluster.run(sc, cluster_programs.sleep_then_write, {"seconds": 3, "out": str(tmp_path)},
                     num_workers=2, progress=False) as c:
        pass
    assert sorted(p.name for p in tmp_path.glob("*.done")) == ["worker-0.done", "worker-1.done"]
    assert node_processes(c.name) == []


def test_shutdown_without_wait_stops_at_once(sc, tmp_path):
    c = cluster.run(sc, cluster_programs.sleep_then_write, {"seconds": 600, "out": str(tmp_path)},
                    num_workers=2, progress=False)
    c.shutdown(wait=False)
    assert node_processes(c.name) == []
    assert list(tmp_path.glob("*.done")) == []
    with pytest.raises(cluster.ClusterError, match="shut down before main_fun finished"):
        c.wait(timeout=10)
