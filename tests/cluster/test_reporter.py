"""``ctx.report`` in the node process (tfrecord_io.cluster.reporter): a report is refused at the
call when its metrics would not fit a control message, and kept when they do. No Spark (the
metrics' way to the driver is in test_cluster_results.py)."""

from __future__ import annotations

import json
import os

import pytest

from tfrecord_io.cluster.reporter import MAX_REPORT_BYTES, Reporter


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
