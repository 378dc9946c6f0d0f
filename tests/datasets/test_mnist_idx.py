"""tfrecord_io.datasets.mnist below the command line: the IDX parser (test_cli.py drives the
conversion through ``tfrecord-io mnist``)."""

from __future__ import annotations

import gzip
import struct
import tracemalloc

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


def test_a_gzip_file_is_never_decompressed_past_what_its_header_announces():
    # 10 labels, then 64 MiB of zeros: some 64 KiB of gzip (a "gzip bomb")
    data = gzip.compress(idx_bytes(np.arange(10, dtype=np.uint8)) + bytes(64 << 20),
                         compresslevel=1)
    tracemalloc.start()
    try:
        with pytest.raises(mnist.MnistError,
                           match=r"^x\.gz: 67108864 unexpected bytes after the 10 labels"):
            mnist.parse_idx(data, "x.gz", "labels")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_a_gzip_file_is_parsed_as_its_content_is():
    images = np.arange(3 * 28 * 28, dtype=np.uint64).astype(np.uint8).reshape(3, 28, 28)
    parsed = mnist.parse_idx(gzip.compress(idx_bytes(images)), "x.gz", "images")
    np.testing.assert_array_equal(parsed, images)


def test_a_truncated_gzip_file_says_where_its_content_ends():
    data = gzip.compress(idx_bytes(np.arange(100, dtype=np.uint8)), compresslevel=0)
    with pytest.raises(mnist.MnistError,
                       match=r"^x\.gz: truncated or damaged gzip data, after 60 bytes of its "
                             r"content \(.+\)$"):
        mnist.parse_idx(data[:10 + 5 + 60], "x.gz", "labels")  # gzip and stored-block headers


def test_a_gzip_file_with_a_bad_crc_is_damaged():
    data = bytearray(gzip.compress(idx_bytes(np.arange(100, dtype=np.uint8))))
    data[-8] ^= 0xFF  # the CRC-32 of the content
    with pytest.raises(mnist.MnistError, match=r"^x\.gz: truncated or damaged gzip data"):
        mnist.parse_idx(bytes(data), "x.gz", "labels")


# --------------------------------------------------------------------------------------------
# Sets given to convert() as Split objects (as python/mnist/prepare.py does)


def _split(name: str, n: int, labels: int | None = None) -> mnist.Split:
    images = np.arange(n * 4, dtype=np.uint8).reshape(n, 2, 2)
    return mnist.Split(name, images, np.arange(n if labels is None else labels, dtype=np.uint8))


def test_a_set_with_more_images_than_labels_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(mnist.MnistError, match=r"^the test set has 3 images but 2 labels"):
        mnist.convert([_split("test", 3, labels=2)], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_two_sets_of_one_name_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(mnist.MnistError, match=r"^two sets named 'train'"):
        mnist.convert([_split("train", 3), _split("train", 2)], tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["", ".", "..", "../elsewhere", "a/b", ".hidden"])
def test_a_set_name_that_is_not_one_directory_name_is_refused(tmp_path, name):
    with pytest.raises(mnist.MnistError, match="not usable as a directory name"):
        mnist.convert([_split(name, 1)], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "elsewhere").exists()


def test_images_that_are_not_uint8_are_refused_naming_the_set(tmp_path):
    split = mnist.Split("test", np.full((2, 2, 2), 0.5, dtype=np.float32),
                        np.zeros(2, dtype=np.uint8))
    with pytest.raises(mnist.MnistError, match=r"^the test set's images are float32 .*uint8"):
        mnist.convert([split], tmp_path / "out", image_format="bytes")
    assert not (tmp_path / "out").exists()


def test_sets_of_any_name_are_written_in_full(tmp_path):
    result = mnist.convert([_split("train", 5), _split("eval", 3)], tmp_path / "out", shards=2)
    assert result.records == {"train": 5, "eval": 3}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["eval", "train"]


def test_a_set_of_an_earlier_run_is_not_kept_beside_a_new_one_without_overwrite(tmp_path):
    mnist.convert([_split("test", 3)], tmp_path / "out", image_format="int64")
    with pytest.raises(mnist.MnistError, match=r"/out/test already exists.*--overwrite"):
        mnist.convert([_split("train", 5)], tmp_path / "out", image_format="bytes")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["test"]
