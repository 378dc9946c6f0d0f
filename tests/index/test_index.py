"""Specification of tfrecord_io.index: the sidecar split index of docs/index-format.md."""

from __future__ import annotations

import io
import logging
import os
import random
import tracemalloc
from pathlib import Path

import pytest

from tfrecord_io import index, records
from tfrecord_io.errors import CorruptRecordError

# Records of 3, 0 and 10 bytes: framed sizes 19, 16 and 26.
SMALL = [b"abc", b"", b"0123456789"]
SMALL_INDEX = b"0 19\n19 16\n35 26\n# 3 records\n"


def make_file(tmp_path, data, name="part-r-00000.tfrecord", **kwargs) -> str:
    path = str(tmp_path / name)
    records.write(path, data, **kwargs)
    return path


def varied_records(count: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.choice([0, 1, 5, 100, 1000, 5000])) for _ in range(count)]


# -- name and place --------------------------------------------------------------------------


def test_index_path_of_a_local_file():
    assert index.index_path("/data/out/part-r-00000.tfrecord") == (
        "/data/out/_part-r-00000.tfrecord.tfindex"
    )


def test_index_path_of_a_relative_file():
    assert index.index_path("part-0") == "_part-0.tfindex"
    assert index.index_path(os.path.join("d", "part-0")) == os.path.join("d", "_part-0.tfindex")


def test_index_path_of_urls():
    assert index.index_path("hdfs://nn:8020/d/part-0.tfrecord") == (
        "hdfs://nn:8020/d/_part-0.tfrecord.tfindex"
    )
    assert index.index_path("file:///tmp/x") == "file:///tmp/_x.tfindex"
    assert index.index_path("webhdfs://nn/x") == "webhdfs://nn/_x.tfindex"


def test_index_path_of_a_directory_is_an_error():
    with pytest.raises(ValueError):
        index.index_path("hdfs://nn/d/")
    with pytest.raises(ValueError):
        index.index_path("")


# -- content ---------------------------------------------------------------------------------


def test_index_layout_matches_the_format_document_byte_for_byte(tmp_path):
    make_file(tmp_path, SMALL)
    with open(tmp_path / "_part-r-00000.tfrecord.tfindex", "rb") as f:
        assert f.read() == SMALL_INDEX


def test_index_of_an_empty_file_is_its_trailer_alone(tmp_path):
    make_file(tmp_path, [])
    assert (tmp_path / "_part-r-00000.tfrecord.tfindex").read_bytes() == b"# 0 records\n"


def test_scan_yields_offset_and_framed_length(tmp_path):
    path = make_file(tmp_path, SMALL, index=False)
    assert list(index.scan(path)) == [(0, 19), (19, 16), (35, 26)]


def test_scan_checks_crcs(tmp_path):
    path = make_file(tmp_path, SMALL, index=False)
    with open(path, "r+b") as f:
        f.seek(35 + 12)
        f.write(b"X")
    with pytest.raises(CorruptRecordError) as err:
        list(index.scan(path))
    assert err.value.offset == 35


def test_write_index_scans_the_file(tmp_path):
    path = make_file(tmp_path, SMALL, index=False)
    written = index.write_index(path)
    assert written == str(tmp_path / "_part-r-00000.tfrecord.tfindex")
    with open(written, "rb") as f:
        assert f.read() == SMALL_INDEX


def test_write_index_with_given_entries(tmp_path):
    path = make_file(tmp_path, SMALL, index=False)
    index.write_index(path, [(0, 19), (19, 16), (35, 26)])
    assert (tmp_path / "_part-r-00000.tfrecord.tfindex").read_bytes() == SMALL_INDEX


def test_write_index_rejects_entries_that_do_not_fit_the_file(tmp_path):
    path = make_file(tmp_path, SMALL, index=False)
    with pytest.raises(ValueError, match="61"):
        index.write_index(path, [(0, 19), (19, 16)])
    with pytest.raises(ValueError, match="line 2"):
        index.write_index(path, [(0, 19), (20, 16), (36, 25)])
    assert not (tmp_path / "_part-r-00000.tfrecord.tfindex").exists()


def test_write_index_refuses_compressed_files(tmp_path):
    path = make_file(tmp_path, SMALL, name="f.tfrecord.gz")
    with pytest.raises(ValueError, match="compressed"):
        index.write_index(path)


def test_writer_index_equals_the_scanned_index(tmp_path):
    data = varied_records(200)
    path = make_file(tmp_path, data)
    assert index.read_index(index.index_path(path)) == list(index.scan(path))


# -- parsing ---------------------------------------------------------------------------------


def test_read_index_parses_an_index_without_a_trailer(tmp_path):
    path = tmp_path / "_f.tfindex"
    path.write_bytes(b"0 19\n19 16\n35 26\n")  # as written before trailers, or by DALI
    assert index.read_index(str(path)) == [(0, 19), (19, 16), (35, 26)]


def test_read_index_refuses_a_trailer_that_miscounts_the_entries(tmp_path):
    path = tmp_path / "_f.tfindex"
    path.write_bytes(b"0 19\n19 16\n35 26\n# 2 records\n")
    with pytest.raises(ValueError, match="says 2 records, but it lists 3"):
        index.read_index(str(path))
    path.write_bytes(b"0 19\n# 1 records\n19 16\n")  # entries after the trailer
    with pytest.raises(ValueError, match="line 3"):
        index.read_index(str(path))


def test_the_trailer_is_a_comment_to_numpy_loadtxt(tmp_path):
    import numpy as np

    path = make_file(tmp_path, SMALL)
    table = np.loadtxt(index.index_path(path), dtype=np.int64, ndmin=2)  # the tfrecord package
    assert table.tolist() == [[0, 19], [19, 16], [35, 26]]


def test_read_index_parses_entries(tmp_path):
    path = tmp_path / "_f.tfindex"
    path.write_bytes(SMALL_INDEX)
    assert index.read_index(str(path)) == [(0, 19), (19, 16), (35, 26)]
    assert index.read_index(io.BytesIO(SMALL_INDEX)) == [(0, 19), (19, 16), (35, 26)]


def test_read_index_of_an_empty_index():
    assert index.read_index(io.BytesIO(b"")) == []


def test_read_index_reads_dali_and_tfrecord_package_indexes():
    # Same layout: the PyPI tfrecord package writes "<offset> <length>\n" lines too.
    assert index.read_index(io.BytesIO(b"0 116\n116 1016\n")) == [(0, 116), (116, 1016)]


@pytest.mark.parametrize(
    "text, where",
    [
        (b"0 19\n19 16", "line 2"),  # no final newline
        (b"0 19\n19  16\n", "line 2"),  # two spaces
        (b"0 19\n19\t16\n", "line 2"),  # a tab
        (b"0 19\n-19 16\n", "line 2"),  # a sign
        (b"0 19\n\n", "line 2"),  # an empty line
        (b"0 19 7\n", "line 1"),  # three fields
        (b"0x0 19\n", "line 1"),  # hex
        (b"0 19\r\n", "line 1"),  # CRLF
        (b"5 19\n", "line 1"),  # does not start at 0
        (b"0 19\n20 16\n", "line 2"),  # a gap
        (b"0 19\n18 16\n", "line 2"),  # an overlap
        (b"0 15\n", "line 1"),  # shorter than the framing
    ],
)
def test_read_index_rejects_malformed_indexes(text, where):
    with pytest.raises(ValueError, match=f"malformed index .*{where}"):
        index.read_index(io.BytesIO(text))


def test_read_index_names_the_line_of_a_number_longer_than_any_offset():
    # longer than Python parses by default (4300 digits), and than any uint64 (20)
    text = b"0 19\n19 " + b"1" * 5000 + b"\n"
    with pytest.raises(ValueError, match="malformed index .*line 2"):
        index.read_index(io.BytesIO(text))


# -- validity --------------------------------------------------------------------------------


def test_load_index_returns_the_entries_of_a_valid_index(tmp_path):
    path = make_file(tmp_path, SMALL)
    assert index.load_index(path) == [(0, 19), (19, 16), (35, 26)]
    assert index.load_index(path, data_size=61) == [(0, 19), (19, 16), (35, 26)]


def test_load_index_without_an_index_is_none(tmp_path):
    path = make_file(tmp_path, SMALL, index=False)
    assert index.load_index(path) is None


def test_load_index_of_an_empty_file(tmp_path):
    path = make_file(tmp_path, [])
    assert index.load_index(path) == []


def test_stale_index_is_ignored_with_a_warning(tmp_path, caplog):
    path = make_file(tmp_path, SMALL)
    with open(path, "ab") as f:  # the data file grows; the index no longer describes it
        f.write(records_bytes([b"more"]))
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.index"):
        assert index.load_index(path) is None
    assert any("stale" in m and "_part-r-00000.tfrecord.tfindex" in m for m in caplog.messages)


def test_index_of_a_file_rewritten_to_the_same_size_is_stale(tmp_path, caplog):
    # Another tool rewrote the file with the same bytes in all, in other records: only the
    # records' places differ, so the size alone cannot tell.
    path = make_file(tmp_path, [b"abc", b"0123456789"])
    old_index = Path(index.index_path(path)).read_bytes()
    records.write(path, [b"0123456789", b"abc"], index=False)
    Path(index.index_path(path)).write_bytes(old_index)
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.index"):
        assert index.load_index(path) is None
    assert any(
        "stale" in m and "no record of 26 bytes at byte 19" in m for m in caplog.messages
    )


def test_index_of_a_shorter_file_is_stale(tmp_path):
    path = make_file(tmp_path, SMALL)
    assert index.load_index(path, data_size=60) is None


def test_an_index_longer_than_any_index_of_its_file_is_stale_without_being_read_whole(
    tmp_path, caplog
):
    # The index of a big file, left beside the small file that replaced it: read whole (over
    # HDFS, by every reader that plans its shards), it was found stale only after parsing.
    path = make_file(tmp_path, SMALL)
    with open(index.index_path(path), "wb") as f:
        f.write(b"0 116\n" * (4 << 20))
    tracemalloc.start()
    try:
        with caplog.at_level(logging.WARNING, logger="tfrecord_io.index"):
            assert index.load_index(path) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert any("stale" in m and "longer than any index of the 61 bytes" in m
               for m in caplog.messages)


def test_malformed_index_is_ignored_with_a_warning(tmp_path, caplog):
    path = make_file(tmp_path, SMALL)
    with open(index.index_path(path), "wb") as f:
        f.write(b"0 19\n19 sixteen\n")
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.index"):
        assert index.load_index(path) is None
    assert any("malformed" in m for m in caplog.messages)


def test_an_index_that_cannot_be_read_is_an_error_not_no_index(tmp_path):
    # Taken for "no index" in one worker only, it would make that worker cut the file
    # differently from the others: records read twice or not at all.
    path = make_file(tmp_path, SMALL, index=False)
    os.mkdir(index.index_path(path))  # there, but not readable as a file
    with pytest.raises(OSError) as err:
        index.load_index(path)
    assert not isinstance(err.value, FileNotFoundError)


def test_load_index_works_with_file_urls(tmp_path):
    path = make_file(tmp_path, SMALL)
    assert index.load_index("file://" + path) == [(0, 19), (19, 16), (35, 26)]


def records_bytes(data) -> bytes:
    out = io.BytesIO()
    records.write(out, data)
    return out.getvalue()


# -- splits ----------------------------------------------------------------------------------


def test_split_ranges_of_no_records_is_empty():
    assert index.split_ranges([], 4) == []


def test_split_ranges_needs_at_least_one_split():
    with pytest.raises(ValueError):
        index.split_ranges([(0, 16)], 0)


def test_one_split_is_the_whole_file():
    assert index.split_ranges([(0, 19), (19, 16), (35, 26)], 1) == [(0, 61)]


def test_equal_records_split_evenly():
    entries = [(i * 100, 100) for i in range(100)]
    assert index.split_ranges(entries, 4) == [(0, 2500), (2500, 5000), (5000, 7500), (7500, 10000)]


def test_more_splits_than_records_gives_one_record_per_split():
    assert index.split_ranges([(0, 19), (19, 16), (35, 26)], 10) == [(0, 19), (19, 35), (35, 61)]


def test_splits_follow_bytes_not_record_counts():
    # One large record and many small ones: the large one gets a split of its own.
    entries = [(0, 1000)] + [(1000 + 10 * i, 10) for i in range(100)]
    assert index.split_ranges(entries, 2) == [(0, 1000), (1000, 2000)]


def test_byte_ranges_cover_each_record_exactly_once_for_every_split_count(tmp_path):
    data = varied_records(40)
    path = make_file(tmp_path, data)
    entries = index.load_index(path)
    assert entries is not None and len(entries) == 40
    size = os.path.getsize(path)
    for num_splits in range(1, len(data) + 3):
        ranges = index.split_ranges(entries, num_splits)
        assert len(ranges) == min(num_splits, len(data))
        assert ranges[0][0] == 0 and ranges[-1][1] == size
        assert all(a < b for a, b in ranges), "no empty range"
        assert all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1))
        got = []
        for start, end in ranges:
            got.extend(records.read(path, start=start, end=end))
        assert got == data, f"num_splits={num_splits}"


def test_splits_are_balanced_in_bytes(tmp_path):
    data = varied_records(2000, seed=3)
    path = make_file(tmp_path, data)
    entries = index.load_index(path)
    largest = max(length for _, length in entries)
    size = os.path.getsize(path)
    for num_splits in (2, 3, 7, 16):
        for start, end in index.split_ranges(entries, num_splits):
            assert abs((end - start) - size / num_splits) <= largest


def test_ranges_for_size_moves_cuts_to_the_next_record_boundary():
    entries = [(0, 19), (19, 16), (35, 26)]
    assert index.ranges_for_size(entries, 20) == [(0, 35), (35, 61)]
    assert index.ranges_for_size(entries, 19) == [(0, 19), (19, 61)]
    assert index.ranges_for_size(entries, 16) == [(0, 19), (19, 35), (35, 61)]
    assert index.ranges_for_size(entries, 1000) == [(0, 61)]
    assert index.ranges_for_size(entries, 1) == [(0, 19), (19, 35), (35, 61)]
    assert index.ranges_for_size([], 10) == []


def test_ranges_for_size_cover_each_record_exactly_once(tmp_path):
    data = varied_records(100, seed=11)
    path = make_file(tmp_path, data)
    entries = index.load_index(path)
    for split_bytes in (1, 100, 4096, 50_000, 10**9):
        got = []
        for start, end in index.ranges_for_size(entries, split_bytes):
            got.extend(records.read(path, start=start, end=end))
        assert got == data
