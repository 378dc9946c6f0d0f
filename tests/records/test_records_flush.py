"""RecordWriter.flush hands every record written so far to a file object target, whole."""

from __future__ import annotations

import io
import os

import pytest

from tfrecord_io import records


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_after_flush_a_reader_of_the_stream_reads_every_record_written(compression):
    r, w = os.pipe()
    with os.fdopen(w, "wb") as sink, os.fdopen(r, "rb") as source:
        writer = records.RecordWriter(sink, compression=compression)
        writer.write(b"first")
        writer.write(b"second")
        writer.flush()
        os.set_blocking(source.fileno(), False)
        got = source.read()  # what the pipe holds now, the writer still open
        writer.write(b"third")
        writer.close()
    reader = records.RecordReader(io.BytesIO(got), compression=compression, on_corrupt="skip")
    assert list(reader) == [b"first", b"second"]


def test_a_file_written_to_a_path_appears_only_when_closed_even_after_flush(tmp_path):
    path = tmp_path / "a.tfrecord"
    with records.RecordWriter(path) as writer:
        writer.write(b"one")
        writer.flush()
        assert not path.exists()
    assert list(records.read(path)) == [b"one"]


def test_flush_of_a_closed_writer_is_refused():
    writer = records.RecordWriter(io.BytesIO())
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.flush()
