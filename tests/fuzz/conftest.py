"""The mutation fuzzer's material: originals written by TensorFlow, and seeded variants of them.

    TFRECORD_IO_FUZZ_VARIANTS=200000 .venv/bin/python -m pytest tests/fuzz -q   # many more

``TFRECORD_IO_FUZZ_VARIANTS`` (default 3000) sets how many variants each fuzz test makes,
``TFRECORD_IO_FUZZ_SEED`` the seed (default fixed, so a failure reproduces; the failing
variant's name says its mutation and number).
"""

from __future__ import annotations

import os
import random
import struct
import zlib
from dataclasses import dataclass
from itertools import pairwise

import pytest

from tfrecord_io import framing

VARIANTS = int(os.environ.get("TFRECORD_IO_FUZZ_VARIANTS", "3000"))
SEED = int(os.environ.get("TFRECORD_IO_FUZZ_SEED", "20261123"))
KINDS = ("none", "gzip", "zlib")
# File name endings, as Hadoop names them (DefaultCodec's is .deflate), so both readers agree.
SUFFIX = {"none": ".tfrecord", "gzip": ".tfrecord.gz", "zlib": ".tfrecord.deflate"}


@dataclass(frozen=True)
class Variant:
    name: str  # "<kind>-<mutation>-<number>"
    kind: str  # the compression: none, gzip, zlib
    data: bytes

    @property
    def filename(self) -> str:
        return self.name + SUFFIX[self.kind]


@pytest.fixture(scope="session")
def fuzz_originals() -> list[bytes]:
    """40 records of 0-600 random bytes (distinct)."""
    rng = random.Random(SEED)
    return [bytes([i]) + rng.randbytes(rng.randrange(0, 600)) for i in range(40)]


@pytest.fixture(scope="session")
def fuzz_sources(tmp_path_factory, fuzz_originals) -> dict[str, bytes]:
    """The originals as TensorFlow writes them: uncompressed, GZIP and ZLIB."""
    import tensorflow as tf

    directory = tmp_path_factory.mktemp("fuzz-originals")
    out = {}
    for kind in KINDS:
        path = str(directory / ("originals" + SUFFIX[kind]))
        options = tf.io.TFRecordOptions(compression_type="" if kind == "none" else kind.upper())
        with tf.io.TFRecordWriter(path, options) as writer:
            for record in fuzz_originals:
                writer.write(record)
        with open(path, "rb") as f:
            out[kind] = f.read()
    return out


def _compress(kind: str, raw: bytes) -> bytes:
    wbits = 16 + zlib.MAX_WBITS if kind == "gzip" else zlib.MAX_WBITS
    c = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return c.compress(raw) + c.flush()


def _relength(raw: bytes, originals: list[bytes], rng: random.Random) -> bytes:
    """A record's length field changed, with its header CRC recomputed to match."""
    index = rng.randrange(len(originals))
    at = sum(len(r) + 16 for r in originals[:index])
    old = struct.unpack_from("<Q", raw, at)[0]
    new = rng.choice([
        old + rng.randrange(1, 40), max(old - rng.randrange(1, 40), 0) if old else 1,
        rng.randrange(1 << 10, 1 << 24), rng.randrange(1 << 28, 1 << 40), (1 << 64) - 1,
        len(raw) - at - 16 + rng.randrange(-20, 20),
    ])
    new = min(max(new, 0), (1 << 64) - 1)
    if new == old:
        new = old + 1
    return raw[:at] + framing.header(new) + raw[at + 12:]


def _mutate_bytes(data: bytes, rng: random.Random, originals: list[bytes], raw: bytes,
                  kind: str) -> tuple[str, bytes]:
    """One random mutation of *data* (the file's bytes); *raw* is the uncompressed stream."""
    n = len(data)
    choices = ["flip", "overwrite", "truncate", "insert", "append", "relength"]
    if kind != "none":
        choices += ["header", "trailer", "body", "members", "inner"]
    how = rng.choice(choices)
    if how == "flip":
        out = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(n)
            out[at] ^= 1 << rng.randrange(8)
        return how, bytes(out)
    if how == "overwrite":
        at = rng.randrange(n)
        span = rng.randrange(1, 17)
        return how, data[:at] + rng.randbytes(span) + data[at + span:]
    if how == "truncate":
        return how, data[:rng.randrange(n)]
    if how == "insert":
        at = rng.randrange(n + 1)
        return how, data[:at] + rng.randbytes(rng.randrange(1, 21)) + data[at:]
    if how == "append":
        return how, data + rng.randbytes(rng.randrange(1, 21))
    if how == "relength":
        changed = _relength(raw, originals, rng)
        return how, changed if kind == "none" else _compress(kind, changed)
    if how == "header":  # the gzip/zlib header
        out = bytearray(data)
        at = rng.randrange(min(10 if kind == "gzip" else 2, n))
        out[at] ^= 1 << rng.randrange(8)
        return how, bytes(out)
    if how == "trailer":  # gzip CRC-32 + ISIZE, zlib Adler-32
        out = bytearray(data)
        at = n - 1 - rng.randrange(8 if kind == "gzip" else 4)
        out[at] ^= 1 << rng.randrange(8)
        return how, bytes(out)
    if how == "body":  # a run of bytes inside the deflate data
        out = bytearray(data)
        at = rng.randrange(10, max(n - 8, 11))
        out[at:at + 4] = rng.randbytes(4)
        return how, bytes(out[:n])
    if how == "members":  # the same records as two or three concatenated streams: valid
        cuts = sorted(rng.randrange(len(raw) + 1) for _ in range(rng.randrange(1, 3)))
        bounds = [0, *cuts, len(raw)]
        return how, b"".join(_compress(kind, raw[a:b]) for a, b in pairwise(bounds))
    # "inner": damage inside the decompressed stream, compressed again
    out = bytearray(raw)
    at = rng.randrange(len(out))
    out[at] ^= 1 << rng.randrange(8)
    return how, _compress(kind, bytes(out))


@pytest.fixture(scope="session")
def fuzz_variants(fuzz_sources, fuzz_originals) -> list[Variant]:
    """``TFRECORD_IO_FUZZ_VARIANTS`` seeded variants, a third of each compression."""
    rng = random.Random(SEED)
    raw = fuzz_sources["none"]
    out = []
    for number in range(VARIANTS):
        kind = KINDS[number % 3]
        how, data = _mutate_bytes(fuzz_sources[kind], rng, fuzz_originals, raw, kind)
        out.append(Variant(f"{kind}-{how}-{number}", kind, data))
    return out


@pytest.fixture(scope="session")
def fuzz_files(tmp_path_factory, fuzz_variants) -> dict[str, Variant]:
    """The variants written to files: path -> variant."""
    directory = tmp_path_factory.mktemp("fuzz-variants")
    paths = {}
    for variant in fuzz_variants:
        path = str(directory / variant.filename)
        with open(path, "wb") as f:
            f.write(variant.data)
        paths[path] = variant
    return paths
