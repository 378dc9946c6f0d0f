"""Read-ahead (``tfrecord_io.fs.readahead``): the bytes a caller reads are the file's, however
it reads and seeks and however the background fetches are timed; the fetcher stays a bounded
distance ahead; a jump fetches what the read after it asks for, and the blocks ahead only once
reading goes on from its end; a fetch's error reaches the read that needs its bytes, and a retry
fetches them again; closing ends the fetcher and closes the source. Driven against a fake source
whose reads are delayed by a seeded random schedule."""

from __future__ import annotations

import io
import os
import random
import threading
import time

import pytest

from tfrecord_io.errors import FileChangedError
from tfrecord_io.fs.readahead import ReadAhead

from waiting import eventually, wait_until

BLOCK = 1000


class FakeSource(io.RawIOBase):
    """A seekable raw reader of *data*, recording what was read; each read sleeps a delay
    drawn from *rnd* (0 to 2 ms) and fails with *fail* when it covers byte *fail_at*."""

    def __init__(self, data: bytes, rnd: random.Random | None = None,
                 fail_at: int | None = None, fail: BaseException | None = None) -> None:
        super().__init__()
        self.data = data
        self.pos = 0
        self.rnd = rnd
        self.fail_at, self.fail = fail_at, fail
        self.reads: list[tuple[int, int]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.release.set()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = offset
        return offset

    def readinto(self, buffer) -> int:
        self.release.wait(10)
        if self.rnd is not None:
            with self.lock:
                delay = self.rnd.random() * 0.002
            time.sleep(delay)
        n = min(len(buffer), len(self.data) - self.pos)
        if self.fail_at is not None and self.pos <= self.fail_at < self.pos + n:
            raise self.fail
        buffer[:n] = self.data[self.pos:self.pos + n]
        self.reads.append((self.pos, n))
        self.pos += n
        return n


class PositionedSource(FakeSource):
    """A :class:`FakeSource` that also serves ``read_at`` from several threads at once (its
    position untouched), as an object store's reader does; *barrier*, when given, is waited
    at by every ``read_at`` of a block that starts before byte *barrier_before*."""

    def __init__(self, data: bytes, rnd: random.Random | None = None,
                 fail_at: int | None = None, fail: BaseException | None = None,
                 barrier: threading.Barrier | None = None, barrier_before: int = 0) -> None:
        super().__init__(data, rnd, fail_at, fail)
        self.barrier, self.barrier_before = barrier, barrier_before

    def read_at(self, offset: int, length: int) -> bytes:
        self.release.wait(10)
        if self.barrier is not None and offset < self.barrier_before:
            self.barrier.wait(10)
        if self.rnd is not None:
            with self.lock:
                delay = self.rnd.random() * 0.002
            time.sleep(delay)
        n = min(length, len(self.data) - offset)
        if self.fail_at is not None and offset <= self.fail_at < offset + n:
            raise self.fail
        with self.lock:
            self.reads.append((offset, n))
        return self.data[offset:offset + n]


def _read(f: ReadAhead, n: int) -> bytes:
    """Up to *n* bytes, by as many raw reads as it takes (a raw read may return fewer)."""
    out = b""
    while len(out) < n and (got := f.read(n - len(out))):
        out += got
    return out


def _reader(source: FakeSource, depth: int = 2, fetchers: int = 1,
            probe: int = BLOCK, name: str = "fake://f") -> ReadAhead:
    return ReadAhead(source, len(source.data), block_size=BLOCK, depth=depth, fetchers=fetchers,
                     probe_size=probe, name=name)


def _threads_of(name: str) -> list[threading.Thread]:
    """The live fetchers of the reader named *name* (not those of other tests' readers)."""
    return [t for t in threading.enumerate()
            if t.name.startswith(f"tfrecord-io-read-ahead {name}")]


def _source(fetchers: int, data: bytes, rnd: random.Random | None = None, **kw) -> FakeSource:
    """A source for *fetchers*: positioned reads when there are several."""
    return (PositionedSource if fetchers > 1 else FakeSource)(data, rnd, **kw)


@pytest.mark.parametrize("fetchers", [1, 3])
def test_reading_to_the_end_gives_the_files_bytes_in_blocks_fetched_once(fetchers):
    data = os.urandom(10 * BLOCK + 123)
    source = _source(fetchers, data)
    with _reader(source, fetchers=fetchers) as f:
        assert f.readall() == data
        assert f.read(1) == b""
    assert sorted(source.reads) == [(o, min(BLOCK, len(data) - o))
                                    for o in range(0, len(data), BLOCK)]
    assert source.closed


@pytest.mark.parametrize("fetchers", [1, 3])
@pytest.mark.parametrize("seed", range(100))
def test_any_schedule_of_reads_and_seeks_gives_the_files_bytes(seed, fetchers):
    rnd = random.Random(seed)
    data = os.urandom(rnd.randrange(1, 8 * BLOCK))
    source = _source(fetchers, data, random.Random(seed + 1000))
    probe = rnd.choice([1, 7, BLOCK // 3, BLOCK, 3 * BLOCK])
    with _reader(source, depth=rnd.randint(1, 3), fetchers=fetchers, probe=probe) as f:
        for _ in range(30):
            if rnd.random() < 0.3:
                target = rnd.randrange(0, len(data) + 10)
                assert f.seek(target) == target
            n = rnd.choice([1, 7, BLOCK // 3, BLOCK, 3 * BLOCK])
            at = f.tell()
            assert _read(f, n) == data[at:at + n]
            assert f.tell() == min(at + n, max(at, len(data)))


@pytest.mark.parametrize("fetchers", [1, 3])
def test_the_fetchers_stay_within_depth_plus_fetchers_less_one_blocks_of_the_caller(fetchers):
    data = os.urandom(20 * BLOCK)
    source = _source(fetchers, data)
    with _reader(source, depth=2, fetchers=fetchers) as f:
        for consumed in range(BLOCK, len(data) + 1, BLOCK):
            assert len(f.read(BLOCK)) == BLOCK
            assert f.wait_until_idle()  # they fetched as far as they may
            fetched = max(o + n for o, n in source.reads)
            assert fetched == min(len(data), consumed + (2 + fetchers - 1) * BLOCK)


def _settled(f: ReadAhead, source: FakeSource) -> list[tuple[int, int]]:
    """The source's reads, once the fetchers of *f* have fetched all they may."""
    assert f.wait_until_idle()
    return list(source.reads)


@pytest.mark.parametrize("fetchers", [1, 3])
def test_a_jump_fetches_only_the_probe_until_reading_goes_on_past_it(fetchers):
    data = os.urandom(20 * BLOCK)
    source = _source(fetchers, data)
    with _reader(source, fetchers=fetchers, probe=300) as f:
        assert f.read(10) == data[:10]  # the first read: blocks ahead, as for a scan
        f.seek(10 * BLOCK + 500)
        assert f.read(10) == data[10 * BLOCK + 500:10 * BLOCK + 510]
        assert f.read(100) == data[10 * BLOCK + 510:10 * BLOCK + 610]  # within the probe
        after_jump = [r for r in _settled(f, source) if r[0] >= 10 * BLOCK]
        assert after_jump == [(10 * BLOCK + 500, 300)]


@pytest.mark.parametrize("fetchers", [1, 3])
def test_a_first_read_away_from_the_start_is_a_jump(fetchers):
    data = os.urandom(20 * BLOCK)
    source = _source(fetchers, data)
    with _reader(source, fetchers=fetchers, probe=300) as f:
        f.seek(10 * BLOCK + 500)
        assert f.read(10) == data[10 * BLOCK + 500:10 * BLOCK + 510]
        assert _settled(f, source) == [(10 * BLOCK + 500, 300)]


@pytest.mark.parametrize("fetchers", [1, 3])
def test_a_read_further_on_than_the_probes_end_is_another_jump(fetchers):
    data = os.urandom(20 * BLOCK)
    source = _source(fetchers, data)
    with _reader(source, fetchers=fetchers, probe=300) as f:
        f.seek(5 * BLOCK)
        assert f.read(10) == data[5 * BLOCK:5 * BLOCK + 10]
        f.seek(5 * BLOCK + 301)  # one byte past the probe: not reading on
        assert f.read(10) == data[5 * BLOCK + 301:5 * BLOCK + 311]
        assert _settled(f, source) == [(5 * BLOCK, 300), (5 * BLOCK + 301, 300)]


@pytest.mark.parametrize("fetchers", [1, 3])
def test_a_jump_with_a_read_larger_than_the_probe_fetches_the_read_in_one_request(fetchers):
    data = os.urandom(20 * BLOCK)
    source = _source(fetchers, data)
    with _reader(source, fetchers=fetchers, probe=300) as f:
        f.read(10)
        f.seek(10 * BLOCK)
        assert f.read(700) == data[10 * BLOCK:10 * BLOCK + 700]
        assert [r for r in _settled(f, source) if r[0] >= 10 * BLOCK] == [(10 * BLOCK, 700)]
        f.seek(15 * BLOCK)
        assert f.read(5 * BLOCK) == data[15 * BLOCK:16 * BLOCK]  # at most a block at once
        assert [r for r in _settled(f, source) if r[0] >= 15 * BLOCK] == [(15 * BLOCK, BLOCK)]


@pytest.mark.parametrize("fetchers", [1, 3])
def test_reading_on_past_the_probe_fetches_whole_blocks_ahead_again(fetchers):
    data = os.urandom(20 * BLOCK)
    source = _source(fetchers, data)
    jump = 10 * BLOCK + 500
    with _reader(source, depth=2, fetchers=fetchers, probe=300) as f:
        f.read(10)
        f.seek(jump)
        assert f.read(10) == data[jump:jump + 10]
        assert _read(f, 1000) == data[jump + 10:jump + 1010]
        after_jump = sorted(r for r in _settled(f, source) if r[0] >= 10 * BLOCK)
        # The probe, then blocks of the grid it starts, as far ahead as a scan's window.
        window = 2 + fetchers - 1
        assert after_jump == [(jump, 300)] + [(jump + 300 + k * BLOCK, BLOCK)
                                              for k in range(window)]
        assert f.read() == data[jump + 1010:]


def test_several_fetchers_have_their_requests_in_flight_at_once():
    data = os.urandom(6 * BLOCK)
    # Each of the first three fetches answers only once all three are under way.
    source = PositionedSource(data, barrier=threading.Barrier(3), barrier_before=3 * BLOCK)
    with _reader(source, depth=1, fetchers=3) as f:
        assert f.read() == data
    assert not source.barrier.broken


def test_a_file_of_fewer_blocks_than_fetchers_gets_one_fetcher_a_block():
    data = os.urandom(2 * BLOCK - 1)
    with _reader(PositionedSource(data), fetchers=4, name="fake://two-blocks") as f:
        assert f.fetchers == 2
        assert f.read(1) == data[:1]
        assert len(_threads_of("fake://two-blocks")) == 2
        assert f.read() == data[1:]
    with _reader(FakeSource(b"small"), fetchers=4) as f:  # one block: no positioned reads needed
        assert f.fetchers == 1 and f.read() == b"small"


def test_several_fetchers_need_a_source_with_positioned_reads():
    with pytest.raises(ValueError, match="3 fetchers need a source with a thread-safe read_at"):
        ReadAhead(FakeSource(b"x" * 5 * BLOCK), 5 * BLOCK, block_size=BLOCK, fetchers=3)


@pytest.mark.parametrize("fetchers", [1, 3])
def test_fetched_to_end_once_every_block_to_the_end_is_asked_for(fetchers):
    data = os.urandom(10 * BLOCK)
    source = _source(fetchers, data)
    with _reader(source, depth=2, fetchers=fetchers) as f:
        assert not f.fetched_to_end  # nothing asked for yet
        assert _read(f, BLOCK) == data[:BLOCK]
        assert not f.fetched_to_end  # the window ends before the file does
        assert _read(f, 7 * BLOCK) == data[BLOCK:8 * BLOCK]
        assert eventually(lambda: f.fetched_to_end, timeout=5, what="fetched to the end")
        f.seek(0)  # a jump back: the blocks there must be asked for again
        assert f.read(10) == data[:10]
        assert not f.fetched_to_end


def test_start_fetches_before_the_first_read():
    data = os.urandom(3 * BLOCK)
    source = FakeSource(data)
    with _reader(source, depth=3) as f:
        f.start()
        wait_until(lambda: len(source.reads) >= 3, timeout=5)
        assert source.reads == [(0, BLOCK), (BLOCK, BLOCK), (2 * BLOCK, BLOCK)]
        assert f.read() == data


@pytest.mark.parametrize("fetchers", [1, 3])
def test_a_fetch_error_is_raised_by_the_read_that_needs_its_bytes(fetchers):
    data = os.urandom(6 * BLOCK)
    failure = OSError("fake://f: read byte 4000 failed: connection reset")
    source = _source(fetchers, data, fail_at=4 * BLOCK + 10, fail=failure)
    with _reader(source, fetchers=fetchers) as f:
        assert _read(f, 4 * BLOCK) == data[:4 * BLOCK]  # the bytes before it are served
        with pytest.raises(OSError, match="read byte 4000 failed") as err:
            f.read(10)
        assert err.value is failure
        f.seek(5 * BLOCK)  # elsewhere still reads
        assert f.read() == data[5 * BLOCK:]


@pytest.mark.parametrize("fetchers", [1, 3])
def test_a_read_retried_after_a_failed_fetch_fetches_its_bytes_again(fetchers):
    data = os.urandom(6 * BLOCK)
    source = _source(fetchers, data, fail_at=4 * BLOCK + 10,
                     fail=OSError("fake://f: read byte 4000 failed: connection reset"))
    with _reader(source, fetchers=fetchers) as f:
        assert _read(f, 4 * BLOCK) == data[:4 * BLOCK]
        with pytest.raises(OSError, match="connection reset"):
            f.read(10)
        with pytest.raises(OSError, match="connection reset"):  # still failing: raised again
            f.read(10)
        source.fail_at = None  # the store recovers
        assert f.tell() == 4 * BLOCK and _read(f, 2 * BLOCK) == data[4 * BLOCK:]


def test_a_source_that_ends_early_is_an_error_naming_the_file_and_the_byte():
    source = FakeSource(b"x" * 1500)
    with ReadAhead(source, 3000, block_size=BLOCK, name="fake://short") as f:
        assert f.read(BLOCK) == b"x" * BLOCK
        with pytest.raises(FileChangedError,
                           match="fake://short ended at byte 1500, before the 3000"):
            f.read(BLOCK)


@pytest.mark.parametrize("fetchers", [1, 3])
def test_closing_during_a_fetch_ends_the_fetchers_and_closes_the_source(fetchers):
    source = _source(fetchers, os.urandom(8 * BLOCK))
    f = _reader(source, fetchers=fetchers, name="fake://closed")
    assert len(f.read(10)) == 10
    source.release.clear()  # the next fetch hangs until released
    time.sleep(0.05)
    f.close()
    assert f.closed
    source.release.set()
    wait_until(lambda: source.closed and not _threads_of("fake://closed"), timeout=5)
    assert source.closed
    assert _threads_of("fake://closed") == []
    with pytest.raises(ValueError, match="closed file"):
        f.read(1)


@pytest.mark.parametrize("fetchers", [1, 3])
def test_closing_from_another_thread_ends_a_read_waiting_for_its_bytes(fetchers):
    source = _source(fetchers, os.urandom(8 * BLOCK))
    f = _reader(source, fetchers=fetchers, name="fake://closed-while-read")
    source.release.clear()  # the fetch of the first block hangs until released
    outcome: list[BaseException | bytes] = []

    def read() -> None:
        try:
            outcome.append(f.read(10))
        except BaseException as e:  # noqa: BLE001 - the outcome is the test's subject
            outcome.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    wait_until(lambda: _threads_of("fake://closed-while-read"), timeout=5)
    f.close()
    reader.join(5)
    source.release.set()
    assert not reader.is_alive()
    assert isinstance(outcome[0], ValueError)
    assert "fake://closed-while-read was closed during a read" in str(outcome[0])


def test_a_reader_never_read_starts_no_thread_and_closes_its_source():
    source = FakeSource(b"abc")
    _reader(source, name="fake://never-read").close()
    assert source.closed and _threads_of("fake://never-read") == []
