"""tfrecord_io.testing.processes: what the tests and benchmarks read of other processes."""

from __future__ import annotations

import subprocess
import sys

from tfrecord_io.testing.processes import bytes_written


def test_bytes_written_counts_what_a_process_wrote():
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import os, sys; os.write(1, b'x' * 100_000); os.close(1); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:  # read to the end: the write has returned (and is counted) once stdout is closed
        assert len(child.stdout.read()) == 100_000
        assert bytes_written(child.pid) >= 100_000
    finally:
        child.communicate(b"")


def test_bytes_written_is_zero_without_a_process():
    assert bytes_written(None) == 0
    assert bytes_written(2**22 + 12345) == 0  # above Linux's pid limit: no such process
