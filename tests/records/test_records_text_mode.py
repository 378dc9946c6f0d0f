"""Specification of the readers and writers given a text-mode file object: refused at once,
saying to open it in binary mode, not a decoding error from deep inside."""

from __future__ import annotations

import io

import pytest

from tfrecord_io import records
from tfrecord_io.records import RecordReader, RecordWriter


def test_a_text_mode_source_is_refused_naming_it_and_the_mode_to_use(tmp_path):
    path = tmp_path / "data.tfrecord"
    records.write(str(path), [b"a" * 10, b"b" * 20], index=False)

    with open(path) as text, pytest.raises(TypeError, match="text-mode") as caught:
        RecordReader(text)

    assert str(path) in str(caught.value) and "'rb'" in str(caught.value)


def test_a_text_mode_target_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "out.tfrecord"

    with open(path, "w") as text, pytest.raises(TypeError, match="text-mode") as caught:
        RecordWriter(text)

    assert "'wb'" in str(caught.value) and path.read_bytes() == b""


def test_a_binary_file_object_is_still_read_and_written():
    target = io.BytesIO()
    with RecordWriter(target) as writer:
        writer.write(b"x" * 3)

    assert list(RecordReader(io.BytesIO(target.getvalue()))) == [b"x" * 3]
