"""MNIST's IDX files: their names and their format (magic number, dimensions, uint8 data)."""

from __future__ import annotations

import gzip
import io
import math
import struct
import zlib

import numpy as np

from tfrecord_io.compression import read_up_to
from tfrecord_io.errors import MnistError

__all__ = ["SPLITS", "candidate_names", "parse_idx"]

#: Set name -> file name prefix, in conversion order.
SPLITS = {"train": "train", "test": "t10k"}
_MAGIC = {"images": 2051, "labels": 2049}  # 0x00000803 (3-d ubyte), 0x00000801 (1-d ubyte)
_NDIM = {"images": 3, "labels": 1}
_CHUNK = 1 << 20  # bytes decompressed at a time


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

    Gzip data is decompressed no further than the data its header announces: the bytes after
    that are counted, not kept, so that a lying header or a "gzip bomb" costs no memory.

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
    expected = _MAGIC[kind]
    ndim = _NDIM[kind]
    extra = 0  # bytes of the content past what the header announces, not kept
    if data[:2] == b"\x1f\x8b":
        data, extra = _gunzip(data, name, 4 + 4 * ndim, expected)
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
    body = len(data) - header + extra
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


def _gunzip(data: bytes, name: str, header: int, magic: int) -> tuple[bytes, int]:
    """The content of gzip *data* up to the end of the data its IDX header announces, and how
    many bytes of content follow that (counted, not kept): a file whose content is far longer
    than its header says (a "gzip bomb") is never held in memory whole.

    Args:
        header: the IDX header's size.
        magic: the magic number expected: the dimensions after another are not trusted.

    Raises:
        MnistError: truncated or damaged gzip data (a bad CRC included), naming the file and
            how far its content goes.
    """
    done = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            head = read_up_to(f, header)
            done = len(head)
            if len(head) < header or int.from_bytes(head[:4], "big") != magic:
                return head, 0  # what parse_idx refuses, whatever follows
            size = math.prod(struct.unpack(f">{(header - 4) // 4}I", head[4:]))
            parts = [head]
            while size > 0:
                part = f.read1(min(size, _CHUNK))
                if not part:
                    break
                parts.append(part)
                done += len(part)
                size -= len(part)
            extra = 0
            while part := f.read1(_CHUNK):  # to the end, so that the CRC is checked
                extra += len(part)
                done += len(part)
    except (EOFError, OSError, zlib.error) as exc:
        raise MnistError(
            f"{name}: truncated or damaged gzip data, after {done} bytes of its content ({exc})"
        ) from None
    return b"".join(parts), extra

