"""Mutation fuzzing of the Python reader and `tfrecord-io verify` (issue 12, item 6).

Every variant of TensorFlow-written files (see conftest.py: bit flips, overwrites, truncation,
inserted and appended bytes, length fields with recomputed CRCs, damaged gzip/zlib headers,
deflate data and trailers, damage inside the compressed records, concatenated members) must
give, under ``on_corrupt="fail"``: only original records, in order, as a prefix, then (if
anything is damaged) a CorruptRecordError naming the file and the offset where that prefix
ends; under ``"skip"``: original records in order, starting with that prefix, the first
damage reported being the same; memory bounded; no hang. `tfrecord-io verify` must report
the same damaged stretches as the reader. Run many more variants with
``TFRECORD_IO_FUZZ_VARIANTS=200000``.
"""

from __future__ import annotations

import contextlib
import io
import re
import signal
import subprocess
import sys
import tracemalloc
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecord_io import framing, records
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.records import RecordReader

SECONDS_PER_VARIANT = 20  # a hang guard, not a speed check
MEMORY_EVERY = 25  # variants between two memory measurements
MEMORY_LIMIT = 16 << 20  # bytes a ~15 KB file may make the reader allocate at its peak


@contextlib.contextmanager
def deadline(seconds: int, what: str):
    def expired(signum, frame):
        raise TimeoutError(f"{what}: still reading after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def ends_of(originals: list[bytes]) -> list[int]:
    """ends[k]: the stream offset just after the first k originals."""
    ends = [0]
    for record in originals:
        ends.append(ends[-1] + len(record) + 16)
    return ends


def in_order(got: list[bytes], originals: list[bytes]) -> bool:
    """Whether *got* is a subsequence of *originals*."""
    remaining = iter(originals)
    return all(any(r == o for o in remaining) for r in got)


def read_failing(source) -> tuple[list[bytes], CorruptRecordError | None]:
    got: list[bytes] = []
    try:
        for record in records.read(source):
            got.append(record)
    except CorruptRecordError as exc:
        return got, exc
    return got, None


def read_skipping(source) -> tuple[list[bytes], RecordReader, list[CorruptRecordError]]:
    seen: list[CorruptRecordError] = []
    with RecordReader(source, on_corrupt="skip", on_skip=seen.append) as reader:
        got = list(reader)
    return got, reader, seen


def check(path: str, name: str, originals: list[bytes], ends: list[int]) -> list[int]:
    """Both policies on one file; returns the offsets of the damage reported under skip."""
    got, error = read_failing(path)
    assert got == originals[: len(got)], f"{name}: not a prefix of the originals"
    if error is not None:
        assert error.path == path, f"{name}: the error names {error.path}"
        assert error.offset == ends[len(got)], (
            f"{name}: offset {error.offset}, the prefix ends at {ends[len(got)]}")
    skipped, reader, seen = read_skipping(path)
    assert in_order(skipped, originals), f"{name}: records that are not originals, in order"
    assert skipped[: len(got)] == got, f"{name}: skip lost records that fail returned"
    assert reader.skipped_records == len(seen), f"{name}: a stretch reported twice or never"
    if error is None:
        assert (skipped, seen) == (got, []), f"{name}: skip saw damage that fail did not"
    else:
        assert seen and (seen[0].offset, seen[0].reason) == (error.offset, error.reason), name
        offsets = [e.offset for e in seen]
        assert offsets == sorted(set(offsets)), f"{name}: reports out of order {offsets}"
    return [e.offset for e in seen]


@pytest.fixture(scope="module")
def reported(fuzz_files, fuzz_originals) -> dict[str, list[int]]:
    """Every variant checked (both policies, memory now and then, a hang guard): path -> the
    offsets of the damage the skip policy reported."""
    ends = ends_of(fuzz_originals)
    out = {}
    for number, (path, variant) in enumerate(fuzz_files.items()):
        with deadline(SECONDS_PER_VARIANT, variant.name):
            if number % MEMORY_EVERY:
                out[path] = check(path, variant.name, fuzz_originals, ends)
                continue
            tracemalloc.start()
            try:
                out[path] = check(path, variant.name, fuzz_originals, ends)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert peak < MEMORY_LIMIT, f"{variant.name}: {peak} bytes at the peak"
    return out


def test_the_python_reader_keeps_its_promises_on_every_variant(reported, fuzz_files):
    assert len(reported) == len(fuzz_files)
    mutations = {v.name.split("-")[1] for v in fuzz_files.values()}
    damaged = {fuzz_files[p].name.split("-")[1] for p, offsets in reported.items() if offsets}
    assert len(mutations) == 11, mutations  # every mutation was tried
    assert damaged >= mutations - {"members"}, damaged  # and every one but members damaged
    assert not any(reported[p] for p, v in fuzz_files.items() if "-members-" in v.name)


LINE = re.compile(r"^(?P<path>.*?): byte offset (?P<offset>\d+): (?P<reason>.*)$")


def test_verify_reports_the_damage_the_reader_reports(reported, fuzz_files):
    found: dict[str, list[int]] = defaultdict(list)
    paths = list(fuzz_files)
    for i in range(0, len(paths), 1000):
        run = subprocess.run(
            [sys.executable, "-m", "tfrecord_io.cli", "verify", *paths[i:i + 1000]],
            capture_output=True, text=True, timeout=600,
        )
        assert "Traceback" not in run.stderr, run.stderr[-2000:]
        for line in run.stdout.splitlines():
            match = LINE.match(line)
            assert match, f"unexpected verify output: {line!r}"
            found[match["path"]].append(int(match["offset"]))
    for path, offsets in reported.items():
        assert found.get(path, []) == offsets, f"{fuzz_files[path].name}: verify disagrees"


# -- property-based: any single mutation of any uncompressed stream ---------------------------


def stream_of(datas: list[bytes]) -> bytes:
    out = io.BytesIO()
    records.write(out, datas)
    return out.getvalue()


mutations = st.one_of(
    st.tuples(st.just("overwrite"), st.floats(0, 1), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("truncate"), st.floats(0, 1), st.just(b"")),
    st.tuples(st.just("relength"), st.floats(0, 1), st.integers(0, (1 << 64) - 1)),
)


def mutated(data: bytes, datas: list[bytes], mutation) -> bytes:
    how, where, what = mutation
    at = min(int(where * len(data)), max(len(data) - 1, 0))
    if how == "overwrite":
        return data[:at] + what + data[at + len(what):]
    if how == "insert":
        return data[:at] + what + data[at:]
    if how == "truncate":
        return data[:at]
    if not datas:
        return data
    index = min(int(where * len(datas)), len(datas) - 1)
    offset = ends_of(datas)[index]
    return data[:offset] + framing.header(what) + data[offset + 12:]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=12, unique=True), mutations)
def test_any_single_mutation_keeps_the_reader_s_promises(datas, mutation):
    data = mutated(stream_of(datas), datas, mutation)
    ends = ends_of(datas)
    got, error = read_failing(io.BytesIO(data))
    assert got == datas[: len(got)]
    if error is not None:
        assert error.offset == ends[len(got)]
    skipped, reader, seen = read_skipping(io.BytesIO(data))
    assert in_order(skipped, datas) and skipped[: len(got)] == got
    assert reader.skipped_records == len(seen) == (0 if error is None else len(seen))
    assert (error is None) == (not seen)
