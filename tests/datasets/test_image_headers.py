"""tfrecord_io.datasets.image_headers: what a JPEG or PNG header says, without decoding, and
which files are not whole. Images are made by Pillow here; the MNIST ones come from the real
test set (mnist_png_tree)."""

from __future__ import annotations

import io
import struct
import zlib

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


@pytest.mark.parametrize(("mode", "channels"), [("L", 1), ("RGB", 3), ("CMYK", 3)])
def test_jpeg_channels_are_what_decode_jpeg_gives(mode, channels):
    # TensorFlow's decode_jpeg(channels=0) gives RGB for a CMYK JPEG: 3 channels, not 4
    assert read_header(encoded(mode, "JPEG"), "x.jpg") == ImageHeader("JPEG", 20, 30, channels)


def multi_picture_jpeg() -> tuple[bytes, int]:
    """A JPEG with a Multi-Picture segment and a second picture, as phones and cameras write
    them, and where its first picture ends. Each picture has a comment holding an end-of-image
    marker, as an EXIF thumbnail in its header would."""
    first, second = Image.new("RGB", (64, 48), (200, 10, 10)), Image.new("RGB", (64, 48))
    buffer = io.BytesIO()
    first.save(buffer, "MPO", save_all=True, append_images=[second], comment=b"\xff\xd9")
    data = buffer.getvalue()
    assert b"MPF\x00" in data and data.count(b"\xff\xd8\xff") == 2
    second_start = data.index(b"\xff\xd8\xff", 2)
    return data, data.rindex(b"\xff\xd9", 0, second_start) + 2


def test_a_multi_picture_jpeg_is_a_jpeg():
    data, _ = multi_picture_jpeg()
    assert read_header(data, "cam/IMG_0001.JPG") == ImageHeader("JPEG", 48, 64, 3)


def test_a_multi_picture_jpeg_cut_in_its_first_picture_is_damaged():
    data, first_end = multi_picture_jpeg()
    for cut in range(0, first_end - 1, 7):
        with pytest.raises(DamagedImageError, match=r"^cam/IMG_0001\.JPG: "):
            read_header(data[:cut], "cam/IMG_0001.JPG")
    with pytest.raises(DamagedImageError, match="truncated JPEG"):
        read_header(data[:first_end - 1], "cam/IMG_0001.JPG")


def huge_png(width: int, height: int) -> bytes:
    """A whole 1-bit black PNG of *width* x *height* pixels, its chunks written out (a few
    kilobytes: the rows compress to almost nothing)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))

    compressor = zlib.compressobj(9)
    row = bytes(1 + (width + 7) // 8)  # filter type 0, then the row's bits
    rows = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit gray
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows)
            + chunk(b"IEND", b""))


def test_an_image_above_pillows_decompression_bomb_limit_reads():
    limit = Image.MAX_IMAGE_PIXELS
    data = huge_png(20_000, 20_000)  # 400 M pixels: more than twice Pillow's default limit
    assert 20_000 * 20_000 > 2 * limit
    assert read_header(data, "maps/huge.png") == ImageHeader("PNG", 20_000, 20_000, 1)
    assert Image.MAX_IMAGE_PIXELS == limit  # Pillow's limit stays as it was for other code
    with pytest.raises(Image.DecompressionBombError):
        Image.open(io.BytesIO(data))


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
