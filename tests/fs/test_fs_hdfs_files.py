"""Which byte ranges :class:`tfrecord_io.fs.hdfs.HdfsReader` asks its client to stream: a scan
from the start streams to the end of the file; a jump (a seek away from the stream, or a first
read away from byte 0) streams only what its read asks for, at least a probe; reading on from the
end of a jump's bytes streams to the end again. Driven against a fake client that records the
ranges and serves a known file, through seeded sequences of seeks and reads as well.
"""

from __future__ import annotations

import io
import random
import time
from types import SimpleNamespace

import pytest

from tfrecord_io.errors import HdfsError
from tfrecord_io.fs.backend import PROBE_SIZE
from tfrecord_io.fs.hdfs import HdfsReader, files
from tfrecord_io.fs.hdfs.client import ChunkStream, Client
from tfrecord_io.fs.hdfs.urls import Location

CHUNK = 64 * 1024
SIZE = 5 * PROBE_SIZE + 12345
DATA = random.Random(0).randbytes(SIZE)


class RecordingClient(Client):
    """Serves :data:`DATA` in 64 KiB chunks and records each stream's ``(offset, length)``;
    the stream opened *break_stream*-th (counting from 0) breaks after *break_after* chunks."""

    def __init__(self, break_stream: int | None = None, break_after: int = 0) -> None:
        self.ranges: list[tuple[int, int]] = []
        self.served = 0  # chunks yielded, by every stream
        self.breaks: list[int] = []  # offsets where a stream broke
        self._break_stream = break_stream
        self._break_after = break_after

    def open_stream(self, handle: object, offset: int, length: int) -> ChunkStream:
        assert offset >= 0 and length > 0 and offset + length <= SIZE, (offset, length)
        index = len(self.ranges)
        self.ranges.append((offset, length))

        def chunks():
            for k, start in enumerate(range(offset, offset + length, CHUNK)):
                if index == self._break_stream and k == self._break_after:
                    self.breaks.append(start)
                    raise ConnectionResetError("DataNode went away")
                self.served += 1
                yield DATA[start : min(start + CHUNK, offset + length)]

        return ChunkStream(chunks())


@pytest.fixture(autouse=True)
def no_retry_pause(monkeypatch):
    """A broken stream is reopened at once, not after the reader's back-off."""
    clock = SimpleNamespace(monotonic=time.monotonic, sleep=lambda seconds: None)
    monkeypatch.setattr(files, "time", clock)


def reader(client: Client, offset: int = 0) -> HdfsReader:
    return HdfsReader(Location("hdfs", "nn:8020", "/f", "hdfs://nn:8020"), client, SIZE, offset)


def test_a_read_from_the_start_streams_to_the_end_of_the_file():
    client = RecordingClient()
    with reader(client) as f:
        assert f.read(100) == DATA[:100]
        assert f.read() == DATA[100:]
    assert client.ranges == [(0, SIZE)]


def test_a_seek_elsewhere_streams_a_probe_from_there():
    client = RecordingClient()
    with reader(client) as f:
        f.read(10)
        f.seek(3 * PROBE_SIZE)
        assert f.read(1024) == DATA[3 * PROBE_SIZE : 3 * PROBE_SIZE + 1024]
    assert client.ranges == [(0, SIZE), (3 * PROBE_SIZE, PROBE_SIZE)]


def test_a_first_read_away_from_the_start_is_a_jump():
    client = RecordingClient()
    with reader(client, offset=2 * PROBE_SIZE + 7) as f:
        assert f.read(5) == DATA[2 * PROBE_SIZE + 7 : 2 * PROBE_SIZE + 12]
    assert client.ranges == [(2 * PROBE_SIZE + 7, PROBE_SIZE)]


def test_a_jump_larger_than_the_probe_streams_what_the_read_asks_for():
    client = RecordingClient()
    with reader(client) as f:
        f.seek(PROBE_SIZE)
        assert f.read(3 * PROBE_SIZE) == DATA[PROBE_SIZE : 4 * PROBE_SIZE]
    assert client.ranges == [(PROBE_SIZE, 3 * PROBE_SIZE)]


def test_a_probe_near_the_end_stops_at_the_end_of_the_file():
    client = RecordingClient()
    with reader(client) as f:
        f.seek(SIZE - 100)
        assert f.read() == DATA[-100:]
    assert client.ranges == [(SIZE - 100, 100)]


def test_reading_on_from_the_end_of_a_jumps_bytes_streams_to_the_end_of_the_file():
    client = RecordingClient()
    start = PROBE_SIZE + 3
    with reader(client) as f:
        f.seek(start)
        assert f.read(PROBE_SIZE - 10) == DATA[start : start + PROBE_SIZE - 10]
        assert f.read(100) == DATA[start + PROBE_SIZE - 10 : start + PROBE_SIZE + 90]
        assert f.read() == DATA[start + PROBE_SIZE + 90 :]
    assert client.ranges == [(start, PROBE_SIZE), (start + PROBE_SIZE, SIZE - start - PROBE_SIZE)]


def test_a_seek_to_the_end_of_a_jumps_bytes_reads_on():
    client = RecordingClient()
    with reader(client) as f:
        f.seek(PROBE_SIZE)
        f.read(10)
        f.seek(2 * PROBE_SIZE)
        assert f.read(10) == DATA[2 * PROBE_SIZE : 2 * PROBE_SIZE + 10]
    assert client.ranges == [(PROBE_SIZE, PROBE_SIZE), (2 * PROBE_SIZE, SIZE - 2 * PROBE_SIZE)]


def test_a_short_skip_inside_the_stream_reads_through_it():
    client = RecordingClient()
    with reader(client) as f:
        f.seek(PROBE_SIZE)
        f.read(10)
        f.seek(PROBE_SIZE + 300_000)
        assert f.read(10) == DATA[PROBE_SIZE + 300_000 : PROBE_SIZE + 300_010]
    assert client.ranges == [(PROBE_SIZE, PROBE_SIZE)]


def test_a_skip_past_a_jumps_bytes_is_another_jump():
    client = RecordingClient()
    with reader(client) as f:
        f.seek(PROBE_SIZE)
        f.read(10)
        f.seek(2 * PROBE_SIZE + 100)
        assert f.read(10) == DATA[2 * PROBE_SIZE + 100 : 2 * PROBE_SIZE + 110]
    assert client.ranges == [(PROBE_SIZE, PROBE_SIZE), (2 * PROBE_SIZE + 100, PROBE_SIZE)]


def test_a_broken_jump_stream_is_reopened_for_the_rest_of_its_range():
    client = RecordingClient(break_stream=0, break_after=3)
    with reader(client) as f:
        f.seek(PROBE_SIZE)
        assert f.read(PROBE_SIZE) == DATA[PROBE_SIZE : 2 * PROBE_SIZE]
    broke_at = PROBE_SIZE + 3 * CHUNK
    assert client.ranges == [(PROBE_SIZE, PROBE_SIZE), (broke_at, 2 * PROBE_SIZE - broke_at)]


def test_a_reader_started_ahead_of_a_jump_streams_a_probe():
    client = RecordingClient()
    with reader(client, offset=PROBE_SIZE) as f:
        f.start()
        assert f.read(10) == DATA[PROBE_SIZE : PROBE_SIZE + 10]
    assert client.ranges == [(PROBE_SIZE, PROBE_SIZE)]


def test_a_reader_started_without_a_size_buffers_one_chunk():
    client = RecordingClient()
    with reader(client) as f:
        f.start()
        assert client.served == 1
        assert f.read(CHUNK) == DATA[:CHUNK]
        assert client.served == 1


def test_a_reader_started_for_a_read_buffers_all_that_read_asks_for():
    client = RecordingClient()
    size = 3 * CHUNK + 5
    with reader(client) as f:
        f.start(size)
        assert client.served == 4
        assert f.read(size) == DATA[:size]  # from the buffer: no chunk more
        assert client.served == 4
        assert f.read(10) == DATA[size : size + 10]
    assert client.ranges == [(0, SIZE)]


def test_a_reader_started_for_more_than_the_file_holds_buffers_it_to_its_end():
    client = RecordingClient()
    with reader(client, offset=SIZE - 100) as f:
        f.start(PROBE_SIZE)
        assert f.read() == DATA[SIZE - 100 :]
    assert client.ranges == [(SIZE - 100, 100)]


def test_a_stream_that_breaks_while_a_reader_starts_is_reopened_where_it_broke():
    client = RecordingClient(break_stream=0, break_after=2)
    with reader(client) as f:
        f.start(4 * CHUNK)
        assert f.read(5 * CHUNK) == DATA[: 5 * CHUNK]
    assert client.ranges == [(0, SIZE), (2 * CHUNK, SIZE - 2 * CHUNK)]


def test_starting_a_reader_whose_bytes_are_buffered_changes_nothing():
    client = RecordingClient()
    with reader(client) as f:
        f.start(2 * CHUNK)
        f.start(8 * CHUNK)
        assert client.served == 2
        assert f.read(3 * CHUNK) == DATA[: 3 * CHUNK]


@pytest.mark.parametrize("seed", range(200))
def test_any_sequence_of_seeks_and_reads_gives_the_files_bytes_and_bounded_streams(seed):
    """Every read returns the file's bytes; a stream that does not start where another one's
    range ended (or broke) asks for no more than its read or a probe."""
    rng = random.Random(seed)
    client = RecordingClient(break_stream=rng.choice([None, 0, 1, 2]), break_after=rng.randrange(4))
    offset = rng.choice([0, rng.randrange(SIZE)])
    with reader(client, offset=offset) as f:
        pos = offset
        for _ in range(12):
            action = rng.random()
            if action < 0.3:
                pos = rng.choice([rng.randrange(SIZE), pos + rng.randrange(2 * PROBE_SIZE)])
                f.seek(pos)
            elif action < 0.4:
                f.seek(-rng.randrange(1, 1000), io.SEEK_END)
                pos = f.tell()
            n = rng.choice([1, 100, 70_000, PROBE_SIZE, 3 * PROBE_SIZE])
            if rng.random() < 0.5:
                got = f.read(n)
            else:
                buf = bytearray(n)
                got = bytes(buf[: f.readinto(buf)])
            assert got == DATA[pos : pos + n], (seed, pos, n)
            pos += len(got)
    ends = {0} | {o + n for o, n in client.ranges} | set(client.breaks)
    for o, n in client.ranges:
        if o not in ends:
            assert n <= 3 * PROBE_SIZE, (seed, o, n)


class FailingHandle:
    """A client's file handle whose writes fail (a DataNode pipeline that broke); records
    whether it was closed."""

    def __init__(self) -> None:
        self.closed = False

    def write(self, data: bytes) -> None:
        raise ConnectionResetError("DataNode pipeline broke")

    def close(self) -> None:
        self.closed = True


def test_closing_a_writer_whose_last_write_fails_still_closes_the_clients_file():
    handle = FailingHandle()
    writer = files.HdfsWriter(Location("hdfs", "nn:8020", "/out", "hdfs://nn:8020"), handle)
    writer.write(b"buffered until close")
    with pytest.raises(HdfsError, match="hdfs://nn:8020/out"):
        writer.close()
    assert handle.closed and writer.closed
