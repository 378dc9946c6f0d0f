"""What a JPEG or PNG file's header says -- format, height, width, channels -- read without
decoding its pixels, and whether the file is whole.

Pillow reads the header (its JPEG or PNG reader, picked by the file's signature, parses the
markers or chunks up to the image data and stops there). The checks that the file is whole are
as cheap:

* **PNG**: every chunk's CRC up to ``IEND`` (Pillow's ``verify()``, which walks the chunks
  without inflating the image data), and the ``IEND`` chunk itself, whole;
* **JPEG**: an end-of-image marker (``FF D9``) after the last start-of-scan header; entropy-coded
  data cannot contain one, so a file cut anywhere after its header lacks it.

A JPEG with a Multi-Picture segment (``APP2`` ``MPF``, what many phones and cameras write,
which ``PIL.Image.open`` calls "MPO") is a JPEG: its first picture is what decoders read, and the
end-of-image check is that picture's. The header is read whatever the image's size: nothing is
decoded, so Pillow's decompression-bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``) does not apply
here, and is left as it is for the rest of the process.

Channels follow what TensorFlow's ``decode_png``/``decode_jpeg`` give with ``channels=0``: for a
JPEG 1 (gray) or 3 (YCbCr/RGB, and CMYK/YCCK too: TensorFlow converts those to RGB); for a PNG
its color type's (gray 1, gray + alpha 2, RGB 3, RGBA 4; a palette 3, or 4 with a
transparency chunk).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from tfrecord_io.errors import DamagedImageError
from tfrecord_io.extras import require

__all__ = ["FORMATS", "ImageHeader", "read_header"]

#: The formats read, as ``image/format`` spells them.
FORMATS = ("JPEG", "PNG")

# Pillow's modes for JPEG and PNG files -> channels TensorFlow decodes them to (a CMYK or YCCK
# JPEG to RGB, as decode_jpeg(channels=0) does).
_CHANNELS = {
    "1": 1, "L": 1, "I": 1, "I;16": 1, "I;16B": 1, "I;16L": 1,
    "LA": 2,
    "RGB": 3, "YCbCr": 3, "CMYK": 3,
    "RGBA": 4,
}

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_SIGNATURE = b"\xff\xd8\xff"  # SOI, then a marker's first byte

_EOI = b"\xff\xd9"
_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"  # the whole IEND chunk: length 0, type, CRC


@dataclass(frozen=True)
class ImageHeader:
    """A JPEG or PNG file's header.

    Attributes:
        format: ``"JPEG"`` or ``"PNG"``.
        height, width: in pixels.
        channels: the channels TensorFlow decodes the file to with ``channels=0``.
    """

    format: str
    height: int
    width: int
    channels: int


def read_header(data: bytes, name: str) -> ImageHeader:
    """The header of the JPEG or PNG file whose whole content is *data*, after checking that
    the file is whole (see the module's docstring); the pixels are not decoded.

    Args:
        data: the file's bytes.
        name: what to call the file in an error (its path).

    Raises:
        DamagedImageError: not a JPEG or PNG, or cut short, or a damaged PNG chunk; the message
            names *name*.
        MissingDependencyError: Pillow is not installed (``pip install 'tfrecord-io[images]'``).
    """
    require("PIL.Image", "reading image headers")
    opener = _opener(data)
    if opener is None:
        raise DamagedImageError(f"{name}: not a JPEG or PNG image")
    try:
        image = opener(io.BytesIO(data))
        header_end = image.fp.tell()
        width, height = image.size
        mode, info = image.mode, dict(image.info)
        kind = image.format
        if kind == "PNG":
            image.verify()  # every chunk's CRC, up to IEND
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError,
            struct.error) as exc:
        raise DamagedImageError(f"{name}: damaged {_kind_of(data)} ({exc})") from None
    if kind == "PNG" and data.find(_IEND, header_end) < 0:
        raise DamagedImageError(f"{name}: truncated PNG (no IEND chunk)")
    if kind == "JPEG" and data.find(_EOI, header_end) < 0:
        raise DamagedImageError(
            f"{name}: truncated JPEG (no end-of-image marker after its image data)"
        )
    if mode == "P":
        channels = 4 if "transparency" in info else 3
    else:
        channels = _CHANNELS.get(mode, 0)
    if not channels or width < 1 or height < 1:
        raise DamagedImageError(f"{name}: unsupported {kind} image ({mode}, {width}x{height})")
    return ImageHeader(kind, height, width, channels)


def _opener(data: bytes) -> Callable[[IO[bytes]], Any] | None:
    """Pillow's reader of the JPEG or PNG file *data* starts as (by its signature, as
    ``PIL.Image.open`` tells them apart), or None for anything else.

    The readers are called directly, not through ``PIL.Image.open``, which refuses images
    above ``PIL.Image.MAX_IMAGE_PIXELS`` (a decompression bomb) once their header is read:
    a process-wide setting, for code that decodes pixels, which reading a header never does.
    A JPEG is read as one, also with a Multi-Picture segment (``PIL.Image.open`` makes that an
    "MPO" image, positioned back at the file's start): format ``"JPEG"``, and the reader stops
    after the first picture's start-of-scan header, where its end-of-image marker is looked for.
    """
    if data.startswith(_PNG_SIGNATURE):
        return require("PIL.PngImagePlugin", "reading image headers").PngImageFile
    if data.startswith(_JPEG_SIGNATURE):
        return require("PIL.JpegImagePlugin", "reading image headers").JpegImageFile
    return None


def _kind_of(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "PNG"
    if data.startswith(b"\xff\xd8"):
        return "JPEG"
    return "image"
