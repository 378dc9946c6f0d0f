"""tfrecord_io.tf.chunks, the Python half of TensorFlow's reader=\"python\" path: a record's
announced length is never trusted for memory."""

from __future__ import annotations

import errno
import gzip
import io
import threading
import tracemalloc

import pytest

from tfrecord_io import framing, fs
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.sharding import Piece
from tfrecord_io.tf import chunks
from tfrecord_io.tf.chunks import read_chunks

from waiting import wait_until


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_crafted_length_in_a_small_file_is_damage_found_without_allocating_it(
        tmp_path, compression):
    good = b"x" * 20
    data = (framing.header(len(good)) + good + framing.masked_crc32c(good).to_bytes(4, "little")
            + framing.header(framing.DEFAULT_MAX_RECORD_BYTES - 1) + b"y" * 100)
    path = tmp_path / "crafted.tfrecord"
    path.write_bytes(gzip.compress(data) if compression == "gzip" else data)
    piece = Piece(str(path), compression, 0, None, path.stat().st_size)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError) as damaged:
            for _ in read_chunks(piece, True, 1 << 20):
                pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert damaged.value.offset == len(good) + framing.FRAMING_BYTES
    assert peak < 16 << 20  # the announced 256 MiB were never asked for


def test_a_piece_that_begins_inside_a_record_says_so(tmp_path):
    record = b"r" * 40
    footer = framing.masked_crc32c(record).to_bytes(4, "little")
    frame = framing.header(len(record)) + record + footer
    path = tmp_path / "two.tfrecord"
    path.write_bytes(frame * 2)
    piece = Piece(str(path), "none", 10, len(frame) * 2, len(frame) * 2 - 10)
    with pytest.raises(CorruptRecordError) as damaged:
        list(read_chunks(piece, True, 1 << 20))
    assert damaged.value.offset == 10
    assert damaged.value.advice == framing.RANGE_START_ADVICE


class _SlowAfterFirstRead(io.RawIOBase):
    """A stream whose second read blocks until *go* is set; it records a close during a read."""

    def __init__(self, data: bytes, go: threading.Event) -> None:
        self._data, self._go = data, go
        self.reads = 0
        self.reading = threading.Event()
        self.closed_during_read = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self.reads += 1
        if self.reads > 1:
            self.reading.set()
            self._go.wait(10)
            self.reading.clear()
            return 0
        buffer[:len(self._data)] = self._data
        return len(self._data)

    def close(self) -> None:
        self.closed_during_read |= self.reading.is_set()
        super().close()


def test_a_stream_is_closed_only_once_a_slow_read_ahead_returns(monkeypatch):
    record = b"r" * 40
    frame = framing.header(len(record)) + record + framing.masked_crc32c(record).to_bytes(
        4, "little")
    go = threading.Event()
    stream = _SlowAfterFirstRead(frame, go)
    monkeypatch.setattr(fs, "open", lambda url, mode="rb": stream)
    monkeypatch.setattr(chunks, "_CLOSE_WAIT", 0.05)
    reader = read_chunks(Piece("slow://x", "none", 0, None, 1 << 20), True, len(frame))
    next(reader)  # the first record; the read-ahead thread is now stuck in its next read
    assert stream.reading.wait(10)
    reader.close()  # gives up waiting for that read
    assert not stream.closed
    go.set()
    wait_until(lambda: stream.closed, timeout=10, every=0.01)
    assert not stream.closed_during_read


class _FailingAfter(io.RawIOBase):
    """A local file whose reads fail with EIO once *good* bytes have been read (a failing
    disk, an NFS server gone): the error the OS gives names no file."""

    def __init__(self, path, good: int) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._left = good

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def readinto(self, buffer) -> int:
        if self._left <= 0:
            raise OSError(errno.EIO, "Input/output error")
        n = self._file.readinto(memoryview(buffer)[: self._left])
        self._left -= n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def _frames(count: int, size: int) -> bytes:
    record = b"r" * size
    return (framing.header(size) + record
            + framing.masked_crc32c(record).to_bytes(4, "little")) * count


@pytest.mark.parametrize("reader", [chunks.read_chunks, chunks.read_chunks_skipping])
def test_a_read_error_mid_file_names_the_file_and_the_first_record_not_read(
        tmp_path, monkeypatch, reader):
    path = tmp_path / "data.tfrecord"
    path.write_bytes(_frames(10, 84))  # frames of 100 bytes
    monkeypatch.setattr(fs, "open", lambda url, mode="rb": _FailingAfter(url, 450))
    got = []
    with pytest.raises(OSError) as failed:
        for buffer, starts, lengths in reader(
                Piece(str(path), "none", 0, None, 1000), True, 100):
            got += [buffer[s:s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
    assert failed.value.errno == errno.EIO  # the error itself, for `except OSError` callers
    assert len(got) == 4  # the records read whole before the failure come first
    assert any(str(path) in note and "byte offset 400" in note
               for note in getattr(failed.value, "__notes__", [])), failed.value
