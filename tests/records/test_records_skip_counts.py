"""Specification of RecordReader's skip counters: a damaged stretch counts exactly its bytes,
wherever the read buffer happens to end."""

from __future__ import annotations

import pytest

from tfrecord_io import records
from tfrecord_io.records import RecordReader

RECORD = b"r" * 100  # framed: 116 bytes
TAIL = b"\x01\x02\x03\x04\x05"  # 5 bytes: less than a header


def read_skipping(path: str, buffer_size: int) -> tuple[list[bytes], int, int, list[int]]:
    offsets: list[int] = []
    with RecordReader(path, on_corrupt="skip", buffer_size=buffer_size,
                      on_skip=lambda e: offsets.append(e.offset)) as reader:
        got = list(reader)
    return got, reader.skipped_records, reader.skipped_bytes, offsets


def test_a_file_of_only_a_partial_header_skips_exactly_its_bytes(tmp_path):
    path = tmp_path / "partial.tfrecord"
    path.write_bytes(TAIL)

    assert read_skipping(str(path), 1 << 20) == ([], 1, len(TAIL), [0])


@pytest.mark.parametrize("buffer_size", [64, 116, 232, 1 << 20])
def test_a_header_cut_short_where_the_buffer_ends_skips_exactly_its_bytes(tmp_path, buffer_size):
    # The records end exactly where a read buffer ends (116 bytes: one framed record; 64: the
    # record is joined up to its end), so the cut header is found before any of its bytes are
    # in the buffer: it must still count 5 bytes, not 6.
    path = tmp_path / "cut.tfrecord"
    records.write(str(path), [RECORD, RECORD], index=False)
    with open(path, "ab") as f:
        f.write(TAIL)

    assert read_skipping(str(path), buffer_size) == ([RECORD, RECORD], 1, len(TAIL), [232])
