"""tfrecord_io.tf.chunks, the Python half of TensorFlow's reader=\"python\" path: a record's
announced length is never trusted for memory."""

from __future__ import annotations

import gzip
import tracemalloc

import pytest

from tfrecord_io import framing
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.sharding import Piece
from tfrecord_io.tf.chunks import read_chunks


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_crafted_length_in_a_small_file_is_damage_found_without_allocating_it(
        tmp_path, compression):
    good = b"x" * 20
    data = (framing.header(len(good)) + good + framing.masked_crc32c(good).to_bytes(4, "little")
            + framing.header(framing.DEFAULT_MAX_RECORD_BYTES - 1) + b"y" * 100)
    path = tmp_path / "crafted.tfrecord"
    path.write_bytes(gzip.compress(data) if compression == "gzip" else data)
    piece = Piece(str(path), compression, 0, None, path.stat().st_size)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError) as damaged:
            for _ in read_chunks(piece, True, 1 << 20):
                pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert damaged.value.offset == len(good) + framing.FRAMING_BYTES
    assert peak < 16 << 20  # the announced 256 MiB were never asked for


def test_a_piece_that_begins_inside_a_record_says_so(tmp_path):
    record = b"r" * 40
    footer = framing.masked_crc32c(record).to_bytes(4, "little")
    frame = framing.header(len(record)) + record + footer
    path = tmp_path / "two.tfrecord"
    path.write_bytes(frame * 2)
    piece = Piece(str(path), "none", 10, len(frame) * 2, len(frame) * 2 - 10)
    with pytest.raises(CorruptRecordError) as damaged:
        list(read_chunks(piece, True, 1 << 20))
    assert damaged.value.offset == 10
    assert damaged.value.advice == framing.RANGE_START_ADVICE
