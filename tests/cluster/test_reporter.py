"""``ctx.report`` in the node process (tfrecord_io.cluster.reporter): a report is refused at the
call when its metrics would not fit a control message, and kept when they do. No Spark (the
metrics' way to the driver is in test_cluster_results.py)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tfrecord_io.cluster.reporter import MAX_REPORT_BYTES, Reporter, keras_callback


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
