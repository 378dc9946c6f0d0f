"""The tfrecord-io command when whoever reads its output goes away (``... | head -1``,
``... | true``): it stops quietly, with its usual exit status and nothing on stderr, also when
stdout is block-buffered (PYTHONUNBUFFERED unset) and the output is only written at exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfrecord_io import records
from tfrecord_io.example import encode_example

ROOT = Path(__file__).resolve().parents[2]


def run_with_stdout_closed(*argv: str | Path) -> tuple[int, str]:
    """Run ``python -m tfrecord_io.cli ARGV`` with stdout a pipe whose reading end is closed
    before the command writes anything, and PYTHONUNBUFFERED unset; (exit status, stderr)."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    process = subprocess.Popen(
        [sys.executable, "-m", "tfrecord_io.cli", *map(str, argv)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    process.stdout.close()  # the reader is gone
    try:
        err = process.stderr.read().decode()
        return process.wait(timeout=120), err
    finally:
        process.kill()
        process.stderr.close()


@pytest.fixture
def data(tmp_path) -> Path:
    """A directory of 400 indexed shards of 3 Examples: a count's output overflows stdout's
    buffer, so the reader's absence is noticed while the command runs."""
    d = tmp_path / "data"
    d.mkdir()
    for k in range(400):
        records.write(d / f"part-r-{k:05d}.tfrecord",
                      [encode_example({"id": 3 * k + i}) for i in range(3)])
    return d


@pytest.mark.parametrize(
    "argv",
    [
        ["count", "{data}/part-r-00000.tfrecord"],  # one short line, written at exit
        ["count", "{data}"],  # 401 lines, more than stdout's buffer holds
        ["head", "-n", "5", "{data}"],
        ["schema", "{data}/part-r-00000.tfrecord"],
        ["--help"],
        ["count", "--help"],
    ],
    ids=["count-one-file", "count-400-files", "head", "schema", "help", "command-help"],
)
def test_a_reader_that_goes_away_ends_the_command_quietly_with_status_0(data, argv):
    status, err = run_with_stdout_closed(*(a.format(data=data) for a in argv))
    assert (status, err) == (0, "")


def test_verify_whose_reader_goes_away_still_says_damage_with_status_1(tmp_path):
    path = tmp_path / "x.tfrecord"
    records.write(path, [encode_example({"id": i}) for i in range(10)], index=False)
    damaged = bytearray(path.read_bytes())
    damaged[20] ^= 0xFF  # inside record 0's data
    path.write_bytes(bytes(damaged))
    status, err = run_with_stdout_closed("verify", path)
    assert (status, err) == (1, "")
