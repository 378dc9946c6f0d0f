"""What a JPEG or PNG file's header says -- format, height, width, channels -- read without
decoding its pixels, and whether the file is whole.

Pillow reads the header (``PIL.Image.open`` parses the markers or chunks up to the image data
and stops there). The checks that the file is whole are as cheap:

* **PNG**: every chunk's CRC up to ``IEND`` (Pillow's ``verify()``, which walks the chunks
  without inflating the image data), and the ``IEND`` chunk itself, whole;
* **JPEG**: an end-of-image marker (``FF D9``) after the last start-of-scan header; entropy-coded
  data cannot contain one, so a file cut anywhere after its header lacks it.

Channels follow what TensorFlow's ``decode_png``/``decode_jpeg`` give with ``channels=0``: the
JPEG frame header's component count (1 gray, 3 YCbCr/RGB, 4 CMYK); the PNG color type's
(gray 1, gray + alpha 2, RGB 3, RGBA 4; a palette 3, or 4 with a transparency chunk).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from tfrecord_io.errors import DamagedImageError
from tfrecord_io.extras import require

__all__ = ["FORMATS", "ImageHeader", "read_header"]

#: The formats read, as ``image/format`` spells them.
FORMATS = ("JPEG", "PNG")

# Pillow's modes for JPEG and PNG files -> channels TensorFlow decodes them to.
_CHANNELS = {
    "1": 1, "L": 1, "I": 1, "I;16": 1, "I;16B": 1, "I;16L": 1,
    "LA": 2,
    "RGB": 3, "YCbCr": 3,
    "RGBA": 4, "CMYK": 4,
}

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
    image_module = require("PIL.Image", "reading image headers")
    try:
        with warnings.catch_warnings():
            # A large image is not a decompression bomb here: its pixels are never decoded.
            warnings.simplefilter("ignore", image_module.DecompressionBombWarning)
            image = image_module.open(io.BytesIO(data), formats=FORMATS)
            header_end = image.fp.tell()
            width, height = image.size
            mode, info = image.mode, dict(image.info)
            kind = image.format
            if kind == "PNG":
                image.verify()  # every chunk's CRC, up to IEND
    except image_module.UnidentifiedImageError:
        raise DamagedImageError(f"{name}: not a JPEG or PNG image") from None
    except (OSError, SyntaxError, ValueError, EOFError, image_module.DecompressionBombError) as exc:
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


def _kind_of(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "PNG"
    if data.startswith(b"\xff\xd8"):
        return "JPEG"
    return "image"
