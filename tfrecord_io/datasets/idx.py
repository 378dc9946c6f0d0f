"""MNIST's IDX files: their names and their format (magic number, dimensions, uint8 data)."""

from __future__ import annotations

import gzip
import math
import struct
import zlib

import numpy as np

from tfrecord_io.errors import MnistError

__all__ = ["SPLITS", "candidate_names", "parse_idx"]

#: Set name -> file name prefix, in conversion order.
SPLITS = {"train": "train", "test": "t10k"}
_MAGIC = {"images": 2051, "labels": 2049}  # 0x00000803 (3-d ubyte), 0x00000801 (1-d ubyte)
_NDIM = {"images": 3, "labels": 1}


def candidate_names(split: str, kind: str) -> list[str]:
    """The file names recognized for one set's ``"images"`` or ``"labels"``, in order of
    preference, e.g. ``train-images-idx3-ubyte``, ``train-images-idx3-ubyte.gz``,
    ``train-images.idx3-ubyte``, ``train-images.idx3-ubyte.gz``."""
    prefix = SPLITS[split]
    ndim = _NDIM[kind]
    bases = [f"{prefix}-{kind}-idx{ndim}-ubyte", f"{prefix}-{kind}.idx{ndim}-ubyte"]
    return [base + ext for base in bases for ext in ("", ".gz")]


def parse_idx(data: bytes, name: str, kind: str) -> np.ndarray:
    """Parse the bytes of an MNIST IDX file (gzipped or not) into a ``uint8`` array.

    Args:
        data: the file's content.
        name: the file's name or URL, for error messages.
        kind: ``"images"`` (magic 2051, 3 dimensions) or ``"labels"`` (magic 2049, 1).

    Raises:
        MnistError: damaged gzip data, a wrong magic number, or a size that does not match the
            header (truncated file or trailing bytes); the message names the file.
    """
    if kind not in _MAGIC:
        raise ValueError(f"kind must be 'images' or 'labels', not {kind!r}")
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise MnistError(f"{name}: truncated or damaged gzip data ({exc})") from None
    expected = _MAGIC[kind]
    ndim = _NDIM[kind]
    if len(data) < 4:
        raise MnistError(f"{name}: {len(data)} bytes, too short for an IDX {kind} file")
    magic = int.from_bytes(data[:4], "big")
    if magic != expected:
        other = next((k for k, m in _MAGIC.items() if m == magic), None)
        hint = (
            f"; {magic} is the magic number of an IDX {other} file: are the file names swapped?"
            if other
            else ""
        )
        raise MnistError(
            f"{name}: not an MNIST {kind} file: magic number {magic} (0x{magic:08x}), expected "
            f"{expected} (0x{expected:08x}){hint}"
        )
    header = 4 + 4 * ndim
    if len(data) < header:
        raise MnistError(
            f"{name}: truncated: {len(data)} bytes, less than the {header}-byte IDX header"
        )
    dims = struct.unpack(f">{ndim}I", data[4:header])
    size = math.prod(dims)  # Python ints: a product past 2**63 must not wrap round
    body = len(data) - header
    shape = "x".join(map(str, dims[1:]))
    what = f"{dims[0]} {kind}" + (f" of {shape}" if shape else "")
    if body < size:
        raise MnistError(
            f"{name}: truncated: the header announces {what} ({size} bytes), but only "
            f"{body} bytes follow it"
        )
    if body > size:
        raise MnistError(
            f"{name}: {body - size} unexpected bytes after the {what} the header announces"
        )
    return np.frombuffer(data, dtype=np.uint8, count=size, offset=header).reshape(dims)
