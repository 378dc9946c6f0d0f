"""Specification of tfrecord_io.records.read_batches and RecordReader.chunks."""

from __future__ import annotations

import io
import os
import random

import pyarrow as pa
import pytest

from tfrecord_io import records
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.records import RecordReader


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> tuple[str, list[bytes]]:
    """A file of 5,000 records of 0-3,000 bytes: more than one read buffer."""
    rng = random.Random(3)
    datas = [rng.randbytes(rng.randrange(0, 3000)) for _ in range(5000)]
    path = str(tmp_path_factory.mktemp("batches") / "mixed.tfrecord")
    records.write(path, datas)
    return path, datas


@pytest.fixture(scope="module")
def fixed(tmp_path_factory) -> tuple[str, list[bytes]]:
    """A file of 3,000 records of 1 KB each."""
    datas = [os.urandom(1024) for _ in range(3000)]
    path = str(tmp_path_factory.mktemp("batches") / "fixed.tfrecord")
    records.write(path, datas)
    return path, datas


@pytest.mark.parametrize("size", [1, 7, 1000, 4096, 100_000])
def test_list_batches_hold_the_records_in_order(mixed, size):
    path, datas = mixed
    batches = list(records.read_batches(path, size))
    assert all(len(b) == size for b in batches[:-1]) and 0 < len(batches[-1]) <= size
    assert [r for b in batches for r in b] == datas


@pytest.mark.parametrize("file", ["mixed", "fixed"])
@pytest.mark.parametrize("size", [1, 333, 2048, 100_000])
def test_arrow_batches_hold_the_records_in_order(request, file, size):
    path, datas = request.getfixturevalue(file)
    batches = list(records.read_batches(path, size, format="arrow"))
    for batch in batches:
        assert isinstance(batch, pa.BinaryArray)
        batch.validate(full=True)
    assert all(len(b) == size for b in batches[:-1])
    assert [r for b in batches for r in b.to_pylist()] == datas


def test_an_arrow_batch_is_one_data_buffer_and_offsets(fixed):
    path, datas = fixed
    batch = next(records.read_batches(path, 100, format="arrow"))
    validity, offsets, values = batch.buffers()
    assert validity is None
    assert values.size == 100 * 1024
    assert values.to_pybytes() == b"".join(datas[:100])


def test_arrow_batches_go_into_pandas(fixed):
    path, datas = fixed
    batch = next(records.read_batches(path, 10, format="arrow"))
    frame = pa.table({"record": batch}).to_pandas()
    assert frame["record"].tolist() == datas[:10]


def test_batches_of_a_compressed_file(tmp_path):
    datas = [os.urandom(n) for n in range(0, 5000, 7)]
    path = str(tmp_path / "f.tfrecord.gz")
    records.write(path, datas)
    assert [r for b in records.read_batches(path, 50) for r in b] == datas
    got = [r for b in records.read_batches(path, 50, format="arrow") for r in b.to_pylist()]
    assert got == datas


def test_batches_of_an_empty_file(tmp_path):
    path = str(tmp_path / "empty.tfrecord")
    records.write(path, [])
    assert list(records.read_batches(path)) == []
    assert list(records.read_batches(path, format="arrow")) == []


def test_batches_of_a_byte_range(mixed):
    path, datas = mixed
    start = 16 + len(datas[0])
    end = start + 16 + len(datas[1]) + 1
    assert list(records.read_batches(path, 10, start=start, end=end)) == [datas[1:3]]


def test_records_before_damage_come_in_a_last_batch_before_the_error(tmp_path):
    datas = [bytes([i]) * 100 for i in range(50)]
    raw = bytearray(b"".join(_framed(d) for d in datas))
    raw[116 * 23 + 20] ^= 1  # data of record 23
    path = str(tmp_path / "f.tfrecord")
    with open(path, "wb") as f:
        f.write(raw)
    for fmt in ("list", "arrow"):
        got = []
        with pytest.raises(CorruptRecordError) as err:
            for batch in records.read_batches(path, 10, format=fmt):
                got.extend(batch if fmt == "list" else batch.to_pylist())
        assert got == datas[:23]
        assert (err.value.path, err.value.offset) == (path, 116 * 23)
        skipped = [r for b in records.read_batches(path, 10, format=fmt, on_corrupt="skip")
                   for r in (b if fmt == "list" else b.to_pylist())]
        assert skipped == datas[:23] + datas[24:]


def test_bad_batch_arguments_are_rejected(fixed):
    path, _ = fixed
    with pytest.raises(ValueError, match="batch_size"):
        next(records.read_batches(path, 0))
    with pytest.raises(ValueError, match="format"):
        next(records.read_batches(path, format="numpy"))


def test_chunks_give_buffers_offsets_and_lengths(mixed):
    path, datas = mixed
    got, offsets = [], []
    with RecordReader(path, buffer_size=1 << 16) as reader:
        for chunk in reader.chunks():
            for start, length in zip(chunk.starts.tolist(), chunk.lengths.tolist(), strict=True):
                got.append(chunk.buffer[start:start + length])
            offsets.extend(chunk.offsets.tolist())
    assert got == datas
    expected, at = [], 0
    for d in datas:
        expected.append(at)
        at += len(d) + 16
    assert offsets == expected


def test_reading_through_small_uneven_reads_gives_the_same_records(mixed):
    path, datas = mixed
    with open(path, "rb") as f:
        data = f.read()

    class Trickle(io.RawIOBase):
        def __init__(self) -> None:
            self.pos = 0
            self.rng = random.Random(9)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            n = min(len(buffer), self.rng.randrange(1, 5000), len(data) - self.pos)
            buffer[:n] = data[self.pos:self.pos + n]
            self.pos += n
            return n

    with RecordReader(Trickle(), buffer_size=3000) as reader:
        offsets = []
        got = []
        for record in reader:
            got.append(record)
            offsets.append(reader.offset)
    assert got == datas
    assert offsets[:3] == [0, 16 + len(datas[0]), 32 + len(datas[0]) + len(datas[1])]


def test_read_returns_a_closable_iterator(mixed):
    path, datas = mixed
    it = records.read(path)
    assert next(it) == datas[0]
    it.close()
    with pytest.raises(StopIteration):
        next(it)


def _framed(data: bytes) -> bytes:
    import struct

    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", records.masked_crc32c(length)) + data
            + struct.pack("<I", records.masked_crc32c(data)))


def test_arrow_batches_without_crc_checks(mixed):
    path, datas = mixed
    got = [r for b in records.read_batches(path, 777, format="arrow", verify=False)
           for r in b.to_pylist()]
    assert got == datas
