"""tfrecord_io.datasets.mnist below the command line: the IDX parser (test_cli.py drives the
conversion through ``tfrecord-io mnist``)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tfrecord_io.datasets import mnist


def idx_bytes(array: np.ndarray, magic: int | None = None) -> bytes:
    """An IDX file of uint8 data, written out from the format description."""
    if magic is None:
        magic = 0x0800 | array.ndim
    return struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.astype(np.uint8).tobytes()


def test_parse_idx_is_strict():
    labels = np.arange(10, dtype=np.uint8)
    np.testing.assert_array_equal(mnist.parse_idx(idx_bytes(labels), "x", "labels"), labels)
    with pytest.raises(mnist.MnistError, match="x: 3 bytes, too short"):
        mnist.parse_idx(b"\x00\x00\x08", "x", "labels")


def test_dimensions_whose_product_overflows_int64_are_a_truncated_file_named():
    # 2**31 * 2**31 * 4 == 2**64, which wraps round to 0 in a 64-bit integer
    header = struct.pack(">IIII", 2051, 2**31, 2**31, 4)
    with pytest.raises(mnist.MnistError,
                       match=r"^x/train-images-idx3-ubyte: truncated: the header announces "
                             r"2147483648 images of 2147483648x4 \(18446744073709551616 bytes\), "
                             r"but only 0 bytes follow it$"):
        mnist.parse_idx(header, "x/train-images-idx3-ubyte", "images")
