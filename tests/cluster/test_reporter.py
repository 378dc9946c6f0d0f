"""``ctx.report`` in the node process (tfrecord_io.cluster.reporter): a report is refused at the
call when its metrics would not fit a control message, and kept when they do. No Spark (the
metrics' way to the driver is in test_cluster_results.py)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
from fractions import Fraction

import numpy as np
import pytest

from tfrecord_io.cluster.channel import ControlServer, NodeConnection, control_key, new_secret
from tfrecord_io.cluster.messages import Hello, Report
from tfrecord_io.cluster.reporter import MAX_REPORT_BYTES, Reporter, keras_callback
from tfrecord_io.cluster.task import _forward_reports

from waiting import eventually


@pytest.fixture
def pipe():
    read, write = os.pipe()
    reporter = Reporter(write, "worker:0", attempt=0)
    yield reporter, os.fdopen(read, "rb")
    reporter.close()
    os.close(write)


def test_a_report_is_one_json_line_on_the_pipe(pipe):
    reporter, lines = pipe
    reporter.report(3, {"loss": 0.5})
    record = json.loads(lines.readline())
    assert (record["step"], record["attempt"], record["values"]) == (3, 0, {"loss": 0.5})


def test_a_report_too_large_for_the_driver_is_refused_at_the_call(pipe):
    reporter, _ = pipe
    metrics = {f"metric_{i:05d}_{'n' * 40}": float(i) for i in range(2000)}
    with pytest.raises(ValueError, match=f"a report of 2000 metrics takes .* bytes: at most "
                                         f"{MAX_REPORT_BYTES} go to the driver"):
        reporter.report(1, metrics)


@pytest.mark.parametrize("step", [1.7, float("nan"), float("inf"), np.float32(2.5)])
def test_a_step_with_a_fractional_part_is_refused_never_rounded(pipe, step):
    reporter, _ = pipe
    with pytest.raises(ValueError, match="step must be a whole number"):
        reporter.report(step, {"loss": 0.5})


@pytest.mark.parametrize("step", ["3", True, [1, 2]])
def test_a_step_that_is_not_a_number_is_refused(pipe, step):
    reporter, _ = pipe
    with pytest.raises(TypeError, match="step must be an int"):
        reporter.report(step, {"loss": 0.5})


@pytest.mark.parametrize("step", [7, np.int64(7), np.array(7), 7.0])
def test_an_integral_step_of_any_numeric_type_is_kept_as_that_int(pipe, step):
    reporter, lines = pipe
    reporter.report(step, {"loss": 0.5})
    record = json.loads(lines.readline())
    assert record["step"] == 7 and isinstance(record["step"], int)


@pytest.mark.parametrize("every", [2.5, True, "3"])
def test_a_keras_callback_every_n_batches_that_is_not_an_int_is_refused(every):
    with pytest.raises(TypeError, match="every_n_batches must be an int"):
        keras_callback(Reporter(None, "worker:0", attempt=0), every_n_batches=every)


def test_reports_that_never_reach_the_driver_are_counted_and_the_count_is_logged(caplog):
    # Nobody reads the pipe (a driver that does not keep up): the writer waits on the full
    # pipe, the queue fills, reports are dropped; those still queued when the reporter closes
    # never reach the driver either.
    caplog.set_level(logging.INFO, logger="tfrecord_io.cluster.node")
    read, write = os.pipe()
    reporter = Reporter(write, "worker:1", attempt=0, capacity=2)
    metrics = {f"metric_{i:03d}_{'n' * 40}": float(i) for i in range(400)}  # ~24 KB a line
    for step in range(40):
        reporter.report(step, metrics)
    reporter.close(timeout=0.2)
    os.set_blocking(read, False)
    received = bytearray()

    def delivered() -> int:
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(read, 1 << 16):
                received.extend(chunk)
        return received.count(b"\n")

    try:
        eventually(lambda: delivered() + reporter.dropped == 40, timeout=10,
                   what=lambda: f"{delivered()} delivered, {reporter.dropped} counted dropped")
        assert reporter.dropped > 0
        assert (f"{reporter.dropped} of the 40 ctx.report records of worker:1 did not reach "
                "the driver") in caplog.text
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize("value", [10**400, -(10**400), Fraction(10**400, 3)],
                         ids=["10**400", "-10**400", "Fraction"])
def test_a_metric_beyond_a_float_s_range_is_refused_with_a_value_error(pipe, value):
    reporter, _ = pipe
    with pytest.raises(ValueError, match=r"metric 'loss' \(\w+\) is beyond a float's range"):
        reporter.report(1, {"loss": value})


def test_nan_and_infinite_metrics_reach_the_driver_as_they_are(pipe):
    reporter, lines = pipe
    key = control_key(new_secret())
    received = []
    server = ControlServer("127.0.0.1", key, lambda hello, message, payload: received.append(
        message), lambda hello, reason: None, admit=lambda hello: None)
    try:
        conn = NodeConnection(server.address, key, Hello(node="worker:0", attempt=0,
                                                         host="127.0.0.1", pid=1, gpus=[]))
        reporter.report(1, {"loss": float("nan"), "up": float("inf"), "down": -math.inf})
        reporter.close()
        _forward_reports(io.BytesIO(lines.readline()), conn)  # as the node's task does
        (report,) = eventually(lambda: [m for m in received if isinstance(m, Report)],
                               timeout=10, what="the report on the driver")
        conn.close()
    finally:
        server.close()
    assert math.isnan(report.values["loss"])
    assert (report.values["up"], report.values["down"]) == (math.inf, -math.inf)
