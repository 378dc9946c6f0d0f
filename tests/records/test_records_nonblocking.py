"""A non-blocking stream that has no data yet is not the end of its records."""

from __future__ import annotations

import os

import pytest

from tfrecord_io import records


def test_a_non_blocking_stream_without_data_yet_is_an_error_not_the_end_of_the_records(
        tmp_path):
    path = tmp_path / "a.tfrecord"
    records.write(path, [b"one", b"two"])
    framed = path.read_bytes()
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.write(w, framed[: len(framed) // 2 + 3])  # the first record, then part of the second
    with os.fdopen(r, "rb", buffering=0) as stream, \
            pytest.raises(OSError, match="non-blocking mode"):
        list(records.read(stream))
    os.close(w)
