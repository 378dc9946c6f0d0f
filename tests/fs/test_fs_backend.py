"""What every backend shares (``tfrecord_io.fs.backend``): the seek arithmetic of its readers."""

from __future__ import annotations

import io

import pytest

from tfrecord_io.fs.backend import seek_position


def test_seek_position_is_from_the_start_the_current_position_or_the_end():
    assert seek_position("f", 10, 100, 5) == 5
    assert seek_position("f", 10, 100, 5, io.SEEK_CUR) == 15
    assert seek_position("f", 10, 100, -5, io.SEEK_END) == 95
    assert seek_position("f", 10, 100, 20, io.SEEK_END) == 120  # past the end, as files allow


def test_seek_position_refuses_a_position_before_the_start_naming_the_file():
    with pytest.raises(ValueError, match="negative seek position -1 in s3://b/k"):
        seek_position("s3://b/k", 0, 100, -1)
    with pytest.raises(ValueError, match="invalid whence 7"):
        seek_position("f", 0, 100, 0, 7)


def test_seek_from_the_end_of_a_file_of_unknown_size_is_unsupported():
    with pytest.raises(io.UnsupportedOperation, match="http://h/f: the server does not give"):
        seek_position("http://h/f", 0, None, -1, io.SEEK_END)
