"""Specification of tfrecord_io.framing: the layout, the CRCs, and the frame scanner."""

from __future__ import annotations

import os
import struct

import crc32c
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecord_io import framing, records
from tfrecord_io.framing import Stop


def masked(data: bytes) -> int:
    """Reference masked CRC-32C, written out from the format description."""
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) % (1 << 32)


def frame(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


def stream_of(datas: list[bytes]) -> bytes:
    return b"".join(frame(d) for d in datas)


def data_of(buf: bytes, frames: framing.Frames) -> list[bytes]:
    spans = zip(frames.starts.tolist(), frames.lengths.tolist(), strict=True)
    return [buf[s:s + n] for s, n in spans]


# -- layout and checksums --------------------------------------------------------------------


def test_masked_crc32c_matches_the_format_definition():
    for data in (b"", b"hello", os.urandom(1000)):
        assert framing.masked_crc32c(data) == masked(data)


def test_records_masked_crc32c_is_the_framing_one():
    assert records.masked_crc32c is framing.masked_crc32c


def test_header_is_the_length_and_its_masked_crc():
    assert framing.header(300) == frame(b"x" * 300)[:12]
    assert framing.HEADER_BYTES + framing.FOOTER_BYTES == framing.FRAMING_BYTES == 16


# -- scan ------------------------------------------------------------------------------------


def test_scan_returns_the_offsets_and_lengths_of_whole_records():
    datas = [b"a" * 10, b"", b"c" * 300]
    buf = stream_of(datas)
    frames = framing.scan(buf, final=True)
    assert frames.starts.tolist() == [12, 38, 54]
    assert frames.lengths.tolist() == [10, 0, 300]
    assert frames.offsets().tolist() == [0, 26, 42]
    assert (frames.status, frames.stop) == (Stop.END, len(buf))


def test_scan_cuts_each_record_once_when_asked():
    datas = [os.urandom(n) for n in (5, 70, 0, 1)]
    frames = framing.scan(stream_of(datas), final=True, cut=True)
    assert frames.records == datas
    assert framing.scan(stream_of(datas), final=True).records is None


def test_scan_offsets_count_from_base():
    buf = stream_of([b"x", b"yy"])
    frames = framing.scan(buf, 1000, final=True)
    assert frames.offsets().tolist() == [1000, 1017]


def test_scan_asks_for_the_rest_of_an_incomplete_record():
    buf = stream_of([b"a" * 10, b"b" * 50])
    frames = framing.scan(buf[:40])
    assert (len(frames), frames.status, frames.stop, frames.need) == (1, Stop.MORE, 26, 66)


def test_scan_asks_for_a_whole_header_first():
    buf = stream_of([b"a" * 10, b"b" * 50])
    frames = framing.scan(buf[:30])
    assert (frames.status, frames.stop, frames.need) == (Stop.MORE, 26, 12)


def test_scan_starts_at_pos():
    buf = stream_of([b"a" * 10, b"b" * 50])
    frames = framing.scan(buf, pos=26, final=True)
    assert data_of(buf, frames) == [b"b" * 50]


def test_scan_stops_before_a_record_starting_at_end():
    buf = stream_of([b"a" * 10, b"b" * 50, b"c"])
    frames = framing.scan(buf, 100, end=126)
    assert (len(frames), frames.status, frames.stop) == (1, Stop.END, 26)
    assert len(framing.scan(buf, 100, end=127)) == 2


def test_a_long_run_of_equal_lengths_is_scanned_like_any_other():
    datas = [os.urandom(64) for _ in range(500)] + [b"odd"] + [os.urandom(64) for _ in range(99)]
    buf = stream_of(datas)
    frames = framing.scan(buf, final=True, cut=True)
    assert frames.records == datas
    assert frames.status is Stop.END


def test_a_run_cut_by_the_end_of_the_buffer_leaves_the_partial_record():
    buf = stream_of([b"z" * 100] * 50)
    frames = framing.scan(buf[:-5])
    assert (len(frames), frames.status, frames.need) == (49, Stop.MORE, 116)


def test_scan_returns_the_records_before_a_data_checksum_mismatch():
    buf = bytearray(stream_of([b"a" * 10, b"b" * 20, b"c" * 30]))
    buf[26 + 12] ^= 1
    frames = framing.scan(bytes(buf), final=True, cut=True)
    assert frames.records == [b"a" * 10]
    assert (frames.status, frames.stop, frames.reason) == (
        Stop.DAMAGED, 26, framing.DATA_CHECKSUM_MISMATCH)


def test_scan_returns_the_records_before_a_length_checksum_mismatch():
    buf = bytearray(stream_of([b"a" * 10] * 40))
    buf[26 * 30 + 9] ^= 1
    frames = framing.scan(bytes(buf), final=True)
    assert (len(frames), frames.status, frames.stop, frames.reason) == (
        30, Stop.DAMAGED, 26 * 30, framing.LENGTH_CHECKSUM_MISMATCH)


def test_the_first_damage_in_order_is_the_one_reported():
    buf = bytearray(stream_of([b"a" * 10] * 40))
    buf[26 * 7 + 12] ^= 1  # data of record 7
    buf[26 * 20 + 9] ^= 1  # header of record 20
    frames = framing.scan(bytes(buf), final=True)
    assert (len(frames), frames.stop, frames.reason) == (7, 26 * 7, "data checksum mismatch")


def test_verify_false_checks_lengths_and_their_crcs_but_not_the_data_crcs():
    buf = bytearray(stream_of([b"a" * 10, b"b" * 20]))
    buf[26 + 12] ^= 1  # data of record 1
    assert len(framing.scan(bytes(buf), final=True, verify=False)) == 2
    buf[9] ^= 1  # the length CRC of record 0
    frames = framing.scan(bytes(buf), final=True, verify=False)
    assert (len(frames), frames.stop, frames.reason) == (0, 0, framing.LENGTH_CHECKSUM_MISMATCH)


def test_verify_false_reports_a_damaged_length_at_its_record_not_after_it():
    buf = bytearray(stream_of([b"a" * 10] * 40))
    buf[26 * 5] = 3  # record 5 now claims 3 bytes: misaligned from there on
    frames = framing.scan(bytes(buf), final=True, verify=False)
    assert (len(frames), frames.stop, frames.reason) == (
        5, 26 * 5, framing.LENGTH_CHECKSUM_MISMATCH)


def test_a_length_over_the_maximum_is_damage_before_any_allocation():
    buf = stream_of([b"a" * 10]) + framing.header(1 << 40)
    frames = framing.scan(buf, max_record_bytes=1000)
    assert (len(frames), frames.status, frames.stop) == (1, Stop.DAMAGED, 26)
    assert frames.reason == framing.too_long(1 << 40, 1000)


def test_a_record_cut_short_is_damage_only_when_nothing_follows():
    buf = stream_of([b"a" * 10, b"b" * 50])[:-10]
    assert framing.scan(buf).status is Stop.MORE
    frames = framing.scan(buf, final=True)
    assert (frames.status, frames.stop, frames.truncated, frames.have) == (
        Stop.DAMAGED, 26, True, 56)
    assert frames.reason == (
        "truncated record: 50 data bytes announced, the file ends 44 bytes into them")


def test_a_header_announcing_more_than_the_file_holds_is_damage_at_once():
    buf = stream_of([b"a" * 10]) + framing.header(1 << 20) + b"xyz"
    frames = framing.scan(buf, remaining=100)
    assert (frames.status, frames.stop, frames.truncated) == (Stop.DAMAGED, 26, True)
    assert "the file ends 103 bytes into them" in frames.reason


def test_a_cut_header_is_truncation():
    buf = stream_of([b"a" * 10]) + b"\x05\x00"
    frames = framing.scan(buf, final=True)
    assert (frames.status, frames.stop) == (Stop.DAMAGED, 26)
    assert frames.reason == framing.truncated(2, None)


def test_the_error_names_the_file_and_the_stream_offset():
    buf = bytearray(stream_of([b"a" * 10, b"b" * 20]))
    buf[26 + 12] ^= 1
    error = framing.scan(bytes(buf), 5000, final=True).error("f.tfrecord")
    assert (error.path, error.offset, error.reason) == ("f.tfrecord", 5026,
                                                          "data checksum mismatch")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=30), st.data())
def test_any_prefix_of_a_stream_yields_exactly_the_records_whole_in_it(datas, data):
    buf = stream_of(datas)
    cut = data.draw(st.integers(0, len(buf)))
    frames = framing.scan(buf[:cut], cut=True)
    ends = np.cumsum([len(d) + 16 for d in datas]).tolist()
    whole = sum(1 for e in ends if e <= cut)
    assert frames.records == datas[:whole]
    assert frames.status is Stop.MORE  # without final, more may always follow
    assert frames.stop == (ends[whole - 1] if whole else 0)


# -- resync ----------------------------------------------------------------------------------


def test_resync_finds_the_next_valid_record_after_garbage():
    buf = b"garbage!" + stream_of([b"a" * 10, b"b"])
    assert framing.resync(buf, final=True) == (Stop.FOUND, 8, 0)


def test_resync_skips_a_valid_header_whose_data_is_damaged():
    damaged = bytearray(frame(b"x" * 20))
    damaged[15] ^= 1
    buf = bytes(damaged) + frame(b"ok")
    assert framing.resync(buf, final=True) == (Stop.FOUND, 36, 0)


def test_resync_asks_for_the_data_of_a_candidate():
    buf = frame(b"y" * 100)[:50]
    assert framing.resync(buf) == (Stop.MORE, 0, 116)


def test_resync_with_nothing_valid_ends_at_the_end_of_the_data():
    assert framing.resync(os.urandom(5000), final=True) == (Stop.END, 5000, 0)


def test_resync_without_a_whole_header_left_asks_for_more():
    status, pos, need = framing.resync(b"\xff" * 100)
    assert (status, pos, need) == (Stop.MORE, 89, 12)


def test_resync_spends_its_budget_on_valid_headers_and_stops_when_it_is_spent():
    damaged = bytearray(frame(b"x" * 20))
    damaged[15] ^= 1
    buf = bytes(damaged) * 3 + frame(b"ok")
    budget = framing.CrcBudget(50)
    assert framing.resync(buf, final=True, budget=budget) == (Stop.DAMAGED, 72, 0)
    assert budget.left == 10  # two candidates of 20 bytes checked, the third not affordable
    assert framing.resync(buf, final=True, budget=framing.CrcBudget(62)) == (Stop.FOUND, 108, 0)


def test_resync_stops_at_end():
    buf = os.urandom(100) + frame(b"late")
    assert framing.resync(buf, 0, end=50)[0] is Stop.END


def test_resync_rejects_headers_announcing_more_than_can_exist():
    # 4 MiB of headers with valid CRCs, each announcing 8 MiB: none can be whole.
    buf = framing.header(8 << 20) * ((4 << 20) // 12)
    assert framing.resync(buf, final=True) == (Stop.END, len(buf), 0)
    assert framing.resync(buf, remaining=0)[0] is Stop.MORE  # only the last 11 bytes are open


def test_resync_over_zeros_rejects_every_position_without_a_data_check():
    assert framing.resync(bytes(1 << 20), final=True) == (Stop.END, 1 << 20, 0)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200), st.lists(st.binary(min_size=1, max_size=100), min_size=1,
                                         max_size=5))
def test_resync_never_passes_a_valid_record(garbage, datas):
    buf = garbage + stream_of(datas)
    status, pos, _ = framing.resync(buf, final=True)
    assert status is Stop.FOUND
    assert pos <= len(garbage)
    assert framing.scan(buf, pos=pos, final=True).status in (Stop.END, Stop.DAMAGED)


def test_resync_with_a_limit_beyond_int64_rejects_lengths_no_file_can_hold():
    # max_record_bytes=2**64 ("no limit") turned any 8 bytes >= 2**63 into a negative int64
    # length, and packing it for the header CRC raised struct.error (records.read of a damaged
    # gzip file with on_corrupt="skip" failed so).
    assert framing.resync(b"\xff" * 100, max_record_bytes=2**64) == (Stop.MORE, 89, 12)
    buf = b"\xff" * 100 + frame(b"ok")
    assert framing.resync(buf, max_record_bytes=2**64, final=True) == (Stop.FOUND, 100, 0)
