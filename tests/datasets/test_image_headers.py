"""tfrecord_io.datasets.image_headers: what a JPEG or PNG header says, without decoding, and
which files are not whole. Images are made by Pillow here; the MNIST ones come from the real
test set (mnist_png_tree)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tfrecord_io.datasets.image_headers import ImageHeader, read_header
from tfrecord_io.errors import DamagedImageError, ImageError

RNG = np.random.default_rng(7)


def encoded(mode: str, fmt: str, size=(30, 20), **save) -> bytes:
    """A *fmt* file of a random *mode* image of *size* (width, height)."""
    bands = len(Image.new(mode, (1, 1)).getbands())
    if mode == "P":
        image = Image.fromarray(RNG.integers(0, 16, size[::-1], dtype=np.uint8), mode="L")
        image = image.convert("P")
    elif mode == "I;16":
        image = Image.fromarray(RNG.integers(0, 65535, size[::-1], dtype=np.uint16))
    else:
        shape = size[::-1] + ((bands,) if bands > 1 else ())
        image = Image.fromarray(RNG.integers(0, 255, shape, dtype=np.uint8).squeeze())
        image = image.convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, fmt, **save)
    return buffer.getvalue()


@pytest.mark.parametrize(("mode", "channels"), [
    ("1", 1), ("L", 1), ("I;16", 1), ("LA", 2), ("RGB", 3), ("RGBA", 4), ("P", 3),
])
def test_png_channels_follow_the_color_type(mode, channels):
    assert read_header(encoded(mode, "PNG"), "x.png") == ImageHeader("PNG", 20, 30, channels)


def test_a_palette_png_with_transparency_has_four_channels():
    assert read_header(encoded("P", "PNG", transparency=0), "x.png").channels == 4


@pytest.mark.parametrize(("mode", "channels"), [("L", 1), ("RGB", 3), ("CMYK", 4)])
def test_jpeg_channels_are_the_frame_header_components(mode, channels):
    assert read_header(encoded(mode, "JPEG"), "x.jpg") == ImageHeader("JPEG", 20, 30, channels)


def test_a_progressive_jpeg_reads():
    data = encoded("RGB", "JPEG", size=(64, 48), progressive=True)
    assert read_header(data, "x.jpg") == ImageHeader("JPEG", 48, 64, 3)


def test_a_real_mnist_png_is_28_by_28_gray(mnist_png_tree):
    path = mnist_png_tree / "7" / "00000.png"  # the test set's first image is a 7
    assert read_header(path.read_bytes(), str(path)) == ImageHeader("PNG", 28, 28, 1)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_a_file_cut_anywhere_is_damaged_and_named(fmt):
    data = encoded("RGB", fmt, size=(64, 48))
    for cut in range(0, len(data) - 1, 37):
        with pytest.raises(DamagedImageError, match=r"^cats/1\.img: ") as caught:
            read_header(data[:cut], "cats/1.img")
        assert isinstance(caught.value, ImageError)
    for cut in range(len(data) - 16, len(data)):  # the end: IEND's CRC, JPEG's EOI marker
        with pytest.raises(DamagedImageError, match=r"^cats/1\.img: "):
            read_header(data[:cut], "cats/1.img")


def test_a_png_chunk_with_a_bad_crc_is_damaged():
    data = bytearray(encoded("L", "PNG"))
    idat = data.index(b"IDAT")
    data[idat + 6] ^= 0xFF  # inside the chunk's data: its CRC no longer matches
    with pytest.raises(DamagedImageError, match="damaged PNG"):
        read_header(bytes(data), "x.png")


@pytest.mark.parametrize(("data", "what"), [
    (b"", "empty"),
    (b"hello, world\n", "text"),
    (encoded("RGB", "GIF"), "a GIF"),
    (encoded("RGB", "BMP"), "a BMP"),
])
def test_anything_but_jpeg_or_png_is_damaged_input(data, what):
    with pytest.raises(DamagedImageError, match=r"^dogs/x: not a JPEG or PNG image$"):
        read_header(data, "dogs/x")


def test_bytes_after_a_whole_jpeg_are_allowed():
    data = encoded("RGB", "JPEG") + b"\x00" * 16  # padding some cameras and tools leave
    assert read_header(data, "x.jpg").format == "JPEG"
