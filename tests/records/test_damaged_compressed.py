"""Damaged gzip/zlib files and hostile lengths in the Python reader (issue 12, items 1, 4, 5).

The originals are written by TensorFlow (``tf.io.TFRecordWriter`` with GZIP or ZLIB). In a
compressed file an offset counts bytes of the decompressed stream; for a broken stream it is
the offset of the first record that could not be decompressed whole.
"""

from __future__ import annotations

import io
import logging
import os
import random
import struct
import subprocess
import sys
import tracemalloc
import zlib

import pytest

from tfrecord_io import framing, records
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.records import RecordReader

SEED = 12
COUNT = 3000
NAMES = {"gzip": "f.tfrecord.gz", "zlib": "f.tfrecord.zlib"}


@pytest.fixture(scope="module")
def originals() -> list[bytes]:
    rng = random.Random(SEED)
    return [rng.randbytes(rng.randrange(0, 1500)) for _ in range(COUNT)]


@pytest.fixture(scope="module")
def tf_files(tmp_path_factory, originals) -> dict[str, bytes]:
    """The bytes of the originals as TensorFlow writes them, per compression."""
    import tensorflow as tf

    out = {}
    directory = tmp_path_factory.mktemp("tf-written")
    for kind in ("GZIP", "ZLIB"):
        path = str(directory / f"originals.{kind.lower()}")
        with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=kind)) as w:
            for record in originals:
                w.write(record)
        with open(path, "rb") as f:
            out[kind.lower()] = f.read()
    return out


def put(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def decodable(data: bytes) -> bytes:
    """Everything zlib decodes from *data* before it fails (a single stream): the longest
    prefix of the input that decompresses without an error, decompressed."""
    def attempt(k: int) -> bytes | None:
        try:
            return zlib.decompressobj(32 + zlib.MAX_WBITS).decompress(data[:k])
        except zlib.error:
            return None

    lo, hi = 0, len(data)  # attempt(lo) succeeds
    if attempt(hi) is not None:
        return attempt(hi)  # type: ignore[return-value]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if attempt(mid) is None:
            hi = mid
        else:
            lo = mid
    return attempt(lo)  # type: ignore[return-value]


def whole_records(data: bytes, originals: list[bytes]) -> int:
    """How many originals are whole in the decompressed bytes *data*."""
    offset = count = 0
    for record in originals:
        offset += len(record) + 16
        if offset > len(data):
            break
        count += 1
    return count


def offset_of(originals: list[bytes], count: int) -> int:
    return sum(len(r) + 16 for r in originals[:count])


def read_failing(path: str) -> tuple[list[bytes], CorruptRecordError | None]:
    got: list[bytes] = []
    try:
        for record in records.read(path):
            got.append(record)
    except CorruptRecordError as exc:
        return got, exc
    return got, None


def read_skipping(path: str) -> tuple[list[bytes], RecordReader, list[CorruptRecordError]]:
    seen: list[CorruptRecordError] = []
    with RecordReader(path, on_corrupt="skip", on_skip=seen.append) as reader:
        got = list(reader)
    return got, reader, seen


def tf_count(path: str, kind: str) -> int:
    """How many records TensorFlow returns before it stops on the damage."""
    import tensorflow as tf

    n = 0
    try:
        for _ in tf.data.TFRecordDataset(path, compression_type=kind.upper()):
            n += 1
    except tf.errors.OpError:
        pass
    return n


# -- item 1: every record decompressed whole comes first, then the offset ----------------------


@pytest.mark.parametrize("kind", ["gzip", "zlib"])
@pytest.mark.parametrize("cut", [1, 7, 300, 5000, "half"])
def test_a_cut_stream_returns_every_record_decompressed_whole_then_its_offset(
    tmp_path, tf_files, originals, kind, cut
):
    packed = tf_files[kind]
    keep = len(packed) // 2 if cut == "half" else len(packed) - cut
    path = put(tmp_path, NAMES[kind], packed[:keep])
    expected = whole_records(decodable(packed[:keep]), originals)
    got, error = read_failing(path)
    assert got == originals[:expected]
    assert error is not None and error.path == path
    assert error.offset == offset_of(originals, expected)
    assert f"damaged {kind if kind == 'gzip' else 'zlib'} stream" in error.reason
    assert len(got) >= tf_count(path, kind)


@pytest.mark.parametrize("kind", ["gzip", "zlib"])
def test_a_cut_stream_under_skip_keeps_the_same_records_and_ends_the_file(
    tmp_path, tf_files, originals, kind
):
    packed = tf_files[kind]
    path = put(tmp_path, NAMES[kind], packed[: len(packed) - 1000])
    expected = whole_records(decodable(packed[: len(packed) - 1000]), originals)
    got, reader, seen = read_skipping(path)
    assert got == originals[:expected]
    assert reader.skipped_records == 1
    assert [(e.path, e.offset) for e in seen] == [(path, offset_of(originals, expected))]


@pytest.mark.parametrize("kind", ["gzip", "zlib"])
@pytest.mark.parametrize("stray", [b"\x00", b"xyz", b"\x1f\x8b\x08\x00garbage"])
def test_stray_bytes_after_a_complete_stream_come_after_every_record(
    tmp_path, tf_files, originals, kind, stray
):
    path = put(tmp_path, NAMES[kind], tf_files[kind] + stray)
    got, error = read_failing(path)
    assert got == originals
    assert error is not None and error.offset == offset_of(originals, COUNT)
    got, reader, seen = read_skipping(path)
    assert got == originals and reader.skipped_records == 1 and reader.skipped_bytes == 0


@pytest.mark.parametrize("kind", ["gzip", "zlib"])
def test_a_damaged_trailer_comes_after_every_record(tmp_path, tf_files, originals, kind):
    damaged = bytearray(tf_files[kind])
    damaged[-2] ^= 0x40  # gzip: ISIZE; zlib: Adler-32
    path = put(tmp_path, NAMES[kind], bytes(damaged))
    got, error = read_failing(path)
    assert got == originals
    assert error is not None and error.offset == offset_of(originals, COUNT)
    assert "incorrect" in error.reason


@pytest.mark.parametrize("kind", ["gzip", "zlib"])
@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_damage_inside_the_deflate_data_keeps_what_decompresses(
    tmp_path, tf_files, originals, kind, where
):
    damaged = bytearray(tf_files[kind])
    at = int(len(damaged) * where)
    damaged[at:at + 8] = b"\xff" * 8
    path = put(tmp_path, NAMES[kind], bytes(damaged))
    got, error = read_failing(path)
    assert error is not None and error.path == path
    assert got == originals[: len(got)]
    assert error.offset == offset_of(originals, len(got))
    if "stream" in error.reason:  # zlib noticed: every record it decoded whole came first
        assert len(got) == whole_records(decodable(bytes(damaged)), originals)
    else:  # zlib decoded garbage: the record's own CRC noticed
        assert error.reason == framing.DATA_CHECKSUM_MISMATCH
    assert len(got) >= tf_count(path, kind)


@pytest.mark.parametrize("kind", ["gzip", "zlib"])
def test_a_damaged_stream_header_is_damage_at_offset_zero(tmp_path, tf_files, kind):
    damaged = bytearray(tf_files[kind])
    damaged[0] ^= 0xFF
    path = put(tmp_path, NAMES[kind], bytes(damaged))
    got, error = read_failing(path)
    assert got == [] and error is not None and error.offset == 0
    got, reader, seen = read_skipping(path)
    assert got == [] and reader.skipped_records == 1 and [e.offset for e in seen] == [0]


def test_a_big_file_loses_nothing_before_a_cut_near_its_end(tmp_path):
    rng = random.Random(5)
    datas = [rng.randbytes(1000) for _ in range(4000)]  # 4 MB: more than one read buffer
    raw = io.BytesIO()
    records.write(raw, datas)
    packed = zlib.compress(raw.getvalue())
    path = put(tmp_path, "big.zlib", packed[:-20])
    got, error = read_failing(path)
    assert got == datas[:3999]  # the last record is cut; none of the last MiB before it is lost
    assert whole_records(decodable(packed[:-20]), datas) == 3999
    assert error is not None and error.offset == 3999 * 1016


def test_verify_reports_the_offset_the_reader_raises(tmp_path, tf_files, originals):
    packed = tf_files["gzip"]
    path = put(tmp_path, "f.gz", packed[: len(packed) * 2 // 3])
    _, error = read_failing(path)
    assert error is not None
    run = subprocess.run([sys.executable, "-m", "tfrecord_io.cli", "verify", path],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert run.stdout.splitlines() == [f"{path}: byte offset {error.offset}: {error.reason}"]


# -- issue 10 item 7: each damaged stretch is reported once ------------------------------------


def test_the_reader_logs_each_damaged_stretch_once(tmp_path, tf_files, caplog):
    damaged = bytearray(tf_files["zlib"])
    damaged[len(damaged) // 2:len(damaged) // 2 + 8] = b"\xff" * 8
    path = put(tmp_path, "f.zlib", bytes(damaged))
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.records"):
        with RecordReader(path, on_corrupt="skip") as reader:
            list(reader)
    warnings = [r for r in caplog.records if r.name == "tfrecord_io.records"]
    assert len(warnings) == reader.skipped_records >= 1
    assert len({r.getMessage() for r in warnings}) == len(warnings)


def test_with_on_skip_the_reader_logs_nothing(tmp_path, tf_files, caplog):
    path = put(tmp_path, "f.gz", tf_files["gzip"][:-100])
    seen = []
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.records"):
        with RecordReader(path, on_corrupt="skip", on_skip=seen.append) as reader:
            list(reader)
    assert len(seen) == reader.skipped_records == 1
    assert not [r for r in caplog.records if r.name == "tfrecord_io.records"]


# -- items 4 and 5: hostile lengths ------------------------------------------------------------


class CountingFile(io.RawIOBase):
    """A file object that counts what is read from it."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)
        self.bytes_read = 0
        self.calls = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._inner.readinto(buffer)
        self.bytes_read += n
        self.calls += 1
        return n


def hostile_headers(size: int, announced: int) -> bytes:
    """*size* bytes of headers with valid CRCs, each announcing *announced* data bytes."""
    return framing.header(announced) * (size // 12)


@pytest.mark.parametrize("announced", [8 << 20, 200 << 20, 1 << 40])
def test_skip_over_headers_announcing_too_much_reads_each_byte_once(announced):
    data = hostile_headers(4 << 20, announced)
    source = CountingFile(data)
    with RecordReader(source, on_corrupt="skip") as reader:
        assert list(reader) == []
    assert reader.skipped_records == 1 and reader.skipped_bytes == len(data)
    assert source.bytes_read == len(data)
    assert source.calls <= len(data) // records.DEFAULT_BUFFER_SIZE + 8


def test_skip_over_a_compressed_file_of_hostile_headers_ends_it(tmp_path):
    data = hostile_headers(4 << 20, 100 << 20)
    path = put(tmp_path, "f.gz", zlib.compress(data))
    got, reader, seen = read_skipping(path)
    assert got == [] and reader.skipped_records == 1 and reader.skipped_bytes == len(data)


@pytest.mark.parametrize("name", ["f.tfrecord", "f.tfrecord.gz"])
def test_a_header_announcing_256_mib_allocates_nothing_for_it(tmp_path, name):
    body = framing.header(256 << 20) + os.urandom(100)
    data = zlib.compress(body) if name.endswith(".gz") else body
    path = put(tmp_path, name, data)
    assert len(body) == 112
    for policy in ("fail", "skip"):
        tracemalloc.start()
        try:
            with RecordReader(path, on_corrupt=policy) as reader:
                try:
                    list(reader)
                except CorruptRecordError as exc:
                    assert exc.offset == 0 and policy == "fail"
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 << 20, f"{policy}: {peak} bytes allocated for a 112-byte file"


def test_a_length_with_a_valid_crc_past_the_end_is_reported_without_reading(tmp_path):
    good = framing.header(3) + b"abc" + struct.pack("<I", framing.masked_crc32c(b"abc"))
    path = put(tmp_path, "f.tfrecord", good + framing.header(100 << 20) + b"x" * 50)
    got, error = read_failing(path)
    assert got == [b"abc"]
    assert error is not None and error.offset == 19
    assert error.reason == framing.truncated(62, 100 << 20)


def test_a_gzip_header_with_reserved_flags_fails_at_the_header(tmp_path, tf_files):
    damaged = bytearray(tf_files["gzip"])
    damaged[3] |= 0x80  # a reserved FLG bit: RFC 1952 says refuse the member
    path = put(tmp_path, "f.tfrecord.gz", bytes(damaged))
    got, error = read_failing(path)
    assert got == []
    assert error is not None and error.offset == 0
    assert "reserved flag bits" in error.reason


def test_a_second_gzip_member_with_reserved_flags_fails_before_its_first_record(
    tmp_path, originals
):
    split = 1000
    second = bytearray(gzip_member(originals[split:]))
    second[3] |= 0x20
    path = put(tmp_path, "f.tfrecord.gz", gzip_member(originals[:split]) + bytes(second))
    got, error = read_failing(path)
    assert got == originals[:split]
    assert error is not None and error.offset == offset_of(originals, split)
    assert "reserved flag bits" in error.reason


def gzip_member(chunk: list[bytes]) -> bytes:
    """One gzip member holding *chunk* framed as TFRecords."""
    buf = io.BytesIO()
    with records.RecordWriter(buf, "gzip") as writer:
        for record in chunk:
            writer.write(record)
    return buf.getvalue()
