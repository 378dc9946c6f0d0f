"""Specification of tfrecord_io.records: TFRecord framing, compression, damage handling."""

from __future__ import annotations

import gzip
import io
import logging
import os
import pickle
import re
import struct
import zlib

import crc32c
import faults
import pytest

from tfrecord_io import framing, records
from tfrecord_io.errors import CorruptRecordError, UnsupportedCompressionError
from tfrecord_io.records import RecordReader, RecordWriter


def masked(data: bytes) -> int:
    """Reference masked CRC-32C, written out from the format description."""
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) % (1 << 32)


def frame(data: bytes) -> bytes:
    """Reference framing of one record."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


# Three records at offsets 0, 26 and 62; the file is 108 bytes long.
ABC = [b"a" * 10, b"b" * 20, b"c" * 30]
ABC_OFFSETS = [0, 26, 62]
ABC_SIZE = 108


@pytest.fixture
def abc_bytes() -> bytearray:
    return bytearray(b"".join(frame(r) for r in ABC))


def put(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return str(path)


# -- framing and round trips ----------------------------------------------------------------


def test_masked_crc32c_matches_the_format_definition():
    assert records.masked_crc32c(b"hello") == masked(b"hello")
    assert records.masked_crc32c(b"") == 0xA282EAD8


def test_write_produces_the_reference_framing(tmp_path):
    path = str(tmp_path / "f.tfrecord")
    records.write(path, ABC)
    with open(path, "rb") as f:
        assert f.read() == b"".join(frame(r) for r in ABC)


def test_write_returns_the_number_of_records(tmp_path):
    assert records.write(str(tmp_path / "f.tfrecord"), [b"x"] * 7) == 7


def test_round_trip_of_random_records_of_many_sizes(tmp_path):
    data = [os.urandom(n) for n in (0, 1, 7, 100, 4095, 4096, 65537, 300_000)]
    path = str(tmp_path / "f.tfrecord")
    records.write(path, data)
    assert list(records.read(path)) == data


def test_round_trip_of_empty_records(tmp_path):
    path = str(tmp_path / "f.tfrecord")
    records.write(path, [b"", b"", b"x", b""])
    assert list(records.read(path)) == [b"", b"", b"x", b""]
    assert os.path.getsize(path) == 3 * 16 + 17


def test_empty_file_has_no_records(tmp_path):
    path = put(tmp_path, "empty.tfrecord", b"")
    assert list(records.read(path)) == []


def test_writing_no_records_makes_an_empty_file(tmp_path):
    path = str(tmp_path / "f.tfrecord")
    assert records.write(path, []) == 0
    assert os.path.getsize(path) == 0


def test_record_larger_than_the_read_buffer(tmp_path):
    big = os.urandom(3 * 1024 * 1024 + 5)  # the default buffer is 1 MiB
    path = str(tmp_path / "f.tfrecord")
    records.write(path, [b"before", big, b"after"])
    assert list(records.read(path)) == [b"before", big, b"after"]


def test_records_larger_than_a_tiny_buffer(tmp_path):
    data = [os.urandom(n) for n in (50, 1000, 3, 64, 65, 2000)]
    path = str(tmp_path / "f.tfrecord")
    records.write(path, data)
    with RecordReader(path, buffer_size=64) as reader:
        assert list(reader) == data


def test_bytes_like_records_are_accepted(tmp_path):
    path = str(tmp_path / "f.tfrecord")
    records.write(path, [bytearray(b"ab"), memoryview(b"cd"), b"ef"])
    assert list(records.read(path)) == [b"ab", b"cd", b"ef"]


def test_str_records_are_rejected(tmp_path):
    with pytest.raises(TypeError, match="bytes-like"):
        records.write(str(tmp_path / "f.tfrecord"), ["text"])


def test_read_accepts_path_objects(tmp_path):
    path = tmp_path / "f.tfrecord"
    records.write(path, ABC)
    assert list(records.read(path)) == ABC


def test_read_and_write_accept_file_urls(tmp_path):
    path = tmp_path / "f.tfrecord"
    records.write(path.as_uri(), ABC)
    assert path.read_bytes() == b"".join(frame(r) for r in ABC)
    assert list(records.read(path.as_uri())) == ABC
    assert list(records.read("file:" + str(path))) == ABC  # Hadoop's spelling


def test_unsupported_url_scheme_is_rejected():
    with pytest.raises(ValueError, match="s3a"):
        list(records.read("s3a://bucket/f.tfrecord"))


def test_read_from_a_file_object(abc_bytes):
    assert list(records.read(io.BytesIO(abc_bytes))) == ABC


def test_a_file_object_decompressing_a_file_is_read_past_the_files_size(tmp_path):
    # gzip.open's file object has the .gz file's descriptor, but holds more bytes than the
    # file: more than a read buffer of them (1 MiB), so records follow the first buffer.
    path = str(tmp_path / "f.tfrecord.gz")
    many = [bytes([i % 256]) * 1000 for i in range(3000)]
    with gzip.open(path, "wb") as out:
        records.write(out, many)
    assert os.path.getsize(path) < records.DEFAULT_BUFFER_SIZE
    with gzip.open(path, "rb") as stream:
        assert list(records.read(stream)) == many


def test_write_to_a_file_object_leaves_it_open():
    out = io.BytesIO()
    assert records.write(out, ABC) == 3
    assert not out.closed
    assert out.getvalue() == b"".join(frame(r) for r in ABC)


def test_reader_reports_the_offset_of_each_record(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    offsets = []
    with RecordReader(path) as reader:
        assert reader.offset is None
        for _ in reader:
            offsets.append(reader.offset)
    assert offsets == ABC_OFFSETS


def test_reader_is_an_iterator(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with RecordReader(path) as reader:
        assert next(reader) == ABC[0]
        assert list(reader) == ABC[1:]


def test_reader_does_not_close_a_file_object(abc_bytes):
    stream = io.BytesIO(abc_bytes)
    with RecordReader(stream) as reader:
        assert list(reader) == ABC
    assert not stream.closed


def test_writer_counts_records_and_bytes(tmp_path):
    with RecordWriter(str(tmp_path / "f.tfrecord")) as writer:
        for r in ABC:
            writer.write(r)
        assert writer.count == 3
        assert writer.bytes_written == ABC_SIZE


def test_writer_refuses_writes_after_close(tmp_path):
    writer = RecordWriter(str(tmp_path / "f.tfrecord"))
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"x")


# -- byte ranges -----------------------------------------------------------------------------


def test_byte_range_yields_records_starting_inside_it(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    assert list(records.read(path, start=0, end=26)) == ABC[:1]
    assert list(records.read(path, start=0, end=27)) == ABC[:2]
    assert list(records.read(path, start=26, end=62)) == ABC[1:2]
    assert list(records.read(path, start=26)) == ABC[1:]
    assert list(records.read(path, start=62, end=1000)) == ABC[2:]
    assert list(records.read(path, start=26, end=26)) == []
    assert list(records.read(path, start=ABC_SIZE)) == []


def test_byte_range_on_a_file_object_counts_from_its_position(abc_bytes):
    stream = io.BytesIO(abc_bytes)
    assert list(records.read(stream, start=26, end=62)) == ABC[1:2]


def test_errors_in_a_byte_range_name_the_absolute_offset(tmp_path, abc_bytes):
    abc_bytes[62 + 12] ^= 0xFF
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path, start=26))
    assert err.value.offset == 62


def test_a_byte_range_that_begins_inside_a_record_says_so(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path, start=30, end=62))
    assert err.value.offset == 30
    assert "no valid record header where the byte range begins" in err.value.reason
    assert "split index" in err.value.advice


def test_damaged_data_at_a_byte_ranges_start_is_damage(tmp_path, abc_bytes):
    abc_bytes[26 + 12] ^= 0xFF  # the record there begins, its data is damaged
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path, start=26, end=62))
    assert err.value.reason == "data checksum mismatch"


def test_byte_range_on_compressed_input_is_rejected(tmp_path):
    path = str(tmp_path / "f.tfrecord.gz")
    records.write(path, ABC)
    with pytest.raises(ValueError, match="uncompressed"):
        list(records.read(path, start=0, end=10))
    with pytest.raises(ValueError, match="uncompressed"):
        list(records.read(io.BytesIO(), compression="zlib", start=5))


def test_negative_or_inverted_range_is_rejected(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(ValueError):
        list(records.read(path, start=-1))
    with pytest.raises(ValueError):
        list(records.read(path, start=26, end=10))


# -- damage: fail policy ---------------------------------------------------------------------


def test_length_checksum_mismatch_names_file_and_offset(tmp_path, abc_bytes):
    abc_bytes[26 + 8] ^= 0x01  # header CRC of the second record
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.path == path
    assert err.value.offset == 26
    assert "length checksum" in err.value.reason


def test_corrupted_length_field_is_caught_by_the_header_checksum(tmp_path, abc_bytes):
    abc_bytes[62] ^= 0x04  # length of the third record: 30 -> 26
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.offset == 62
    assert "length checksum" in err.value.reason


def test_data_checksum_mismatch_names_file_and_offset(tmp_path, abc_bytes):
    abc_bytes[62 + 12 + 5] ^= 0x80  # a data byte of the third record
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.path == path
    assert err.value.offset == 62
    assert "data checksum" in err.value.reason


def test_records_before_the_damage_are_delivered(tmp_path, abc_bytes):
    abc_bytes[62 + 12] ^= 0xFF
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    got = []
    with pytest.raises(CorruptRecordError):
        for record in records.read(path):
            got.append(record)
    assert got == ABC[:2]


def test_truncated_data_names_the_offset_of_the_cut_record(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes[:100])
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.offset == 62
    assert "truncated" in err.value.reason


def test_missing_data_checksum_is_truncation(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes[:ABC_SIZE - 2])
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.offset == 62
    assert "truncated" in err.value.reason


def test_truncated_header_names_the_offset_of_the_cut_record(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes[:62 + 5])
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.offset == 62
    assert "header" in err.value.reason


def test_error_message_names_file_and_offset(tmp_path, abc_bytes):
    abc_bytes[26 + 12] ^= 0xFF
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(CorruptRecordError, match=r"f\.tfrecord at byte offset 26"):
        list(records.read(path))


def test_verify_false_does_not_check_checksums(tmp_path, abc_bytes):
    abc_bytes[26 + 12] = ord("X")
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    assert list(records.read(path, verify=False)) == [ABC[0], b"X" + b"b" * 19, ABC[2]]


def test_verify_false_still_detects_truncation(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes[:100])
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path, verify=False))
    assert err.value.offset == 62


def test_length_over_max_record_bytes_is_corruption(tmp_path):
    path = put(tmp_path, "f.tfrecord", frame(b"x" * 100))
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path, max_record_bytes=99))
    assert err.value.offset == 0
    assert "max_record_bytes" in err.value.reason
    assert list(records.read(path, max_record_bytes=100)) == [b"x" * 100]


def test_huge_length_with_valid_header_checksum_is_not_allocated(tmp_path):
    length = struct.pack("<Q", 1 << 60)
    header = length + struct.pack("<I", masked(length))
    path = put(tmp_path, "f.tfrecord", frame(b"ok") + header + b"tiny")
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.offset == 18
    assert str(1 << 60) in err.value.reason


def test_unknown_corruption_policy_is_rejected(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with pytest.raises(ValueError, match="on_corrupt"):
        list(records.read(path, on_corrupt="ignore"))


# -- damage: skip policy ---------------------------------------------------------------------


def read_skipping(path, **kwargs):
    with RecordReader(path, on_corrupt="skip", **kwargs) as reader:
        got = list(reader)
    return got, reader.skipped_records, reader.skipped_bytes


def test_skip_drops_a_record_with_bad_data(tmp_path, abc_bytes):
    abc_bytes[26 + 12] ^= 0xFF
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    assert read_skipping(path) == ([ABC[0], ABC[2]], 1, 36)


def test_skip_drops_a_record_with_a_bad_header(tmp_path, abc_bytes):
    abc_bytes[26 + 9] ^= 0xFF
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    assert read_skipping(path) == ([ABC[0], ABC[2]], 1, 36)


def test_skip_resyncs_past_garbage_between_records(tmp_path, abc_bytes):
    damaged = abc_bytes[:26] + b"garbage" + abc_bytes[26:]
    path = put(tmp_path, "f.tfrecord", damaged)
    assert read_skipping(path) == (ABC, 1, 7)


def test_skip_counts_each_damaged_stretch(tmp_path, abc_bytes):
    abc_bytes[0 + 12] ^= 0xFF
    abc_bytes[62 + 12] ^= 0xFF
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    assert read_skipping(path) == ([ABC[1]], 2, 26 + 46)


def test_skip_drops_a_truncated_last_record(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes[:100])
    assert read_skipping(path) == (ABC[:2], 1, 100 - 62)


def test_skip_drops_a_truncated_header(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes[:66])
    assert read_skipping(path) == (ABC[:2], 1, 4)


def test_skip_past_an_oversized_record(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    assert read_skipping(path, max_record_bytes=25) == ([ABC[0], ABC[1]], 1, 46)


def test_skip_resyncs_with_a_tiny_buffer(tmp_path):
    data = [os.urandom(n) for n in (70, 300, 20, 90)]
    raw = bytearray(b"".join(frame(r) for r in data))
    raw[86 + 12 + 100] ^= 0xFF  # inside the 300-byte record, larger than the buffer
    path = put(tmp_path, "f.tfrecord", raw)
    got, skipped, skipped_bytes = read_skipping(path, buffer_size=64)
    assert got == [data[0], data[2], data[3]]
    assert (skipped, skipped_bytes) == (1, 316)


def test_skip_logs_a_warning_naming_file_and_offset(tmp_path, abc_bytes, caplog):
    abc_bytes[26 + 12] ^= 0xFF
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.records"):
        read_skipping(path)
    assert any(path in m and "26" in m for m in caplog.messages)


def test_skip_with_nothing_damaged_skips_nothing(tmp_path, abc_bytes):
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    assert read_skipping(path) == (ABC, 0, 0)


# -- compression -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["f.tfrecord.gz", "f.GZ"])
def test_gz_name_means_gzip(tmp_path, name):
    path = str(tmp_path / name)
    records.write(path, ABC)
    with open(path, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    with gzip.open(path, "rb") as f:
        assert f.read() == b"".join(frame(r) for r in ABC)
    assert list(records.read(path)) == ABC


@pytest.mark.parametrize("name", ["f.deflate", "f.zlib", "f.tfrecord.zz"])
def test_deflate_zlib_and_zz_names_mean_zlib(tmp_path, name):
    path = str(tmp_path / name)
    records.write(path, ABC)
    with open(path, "rb") as f:
        assert zlib.decompress(f.read()) == b"".join(frame(r) for r in ABC)
    assert list(records.read(path)) == ABC


@pytest.mark.parametrize("compression", ["gzip", "GZIP", "zlib", "ZLIB"])
def test_explicit_compression_overrides_the_name(tmp_path, compression):
    path = str(tmp_path / "f.tfrecord")
    records.write(path, ABC, compression=compression)
    assert list(records.read(path, compression=compression)) == ABC
    with pytest.raises(CorruptRecordError):
        list(records.read(path))


@pytest.mark.parametrize("compression", ["", "none", "NONE"])
def test_empty_or_none_compression_means_uncompressed(tmp_path, compression):
    path = str(tmp_path / "f.gz")
    records.write(path, ABC, compression=compression)
    with open(path, "rb") as f:
        assert f.read() == b"".join(frame(r) for r in ABC)
    assert list(records.read(path, compression=compression)) == ABC


@pytest.mark.parametrize("name, codec_name", [
    ("part-r-00000.tfrecord.bz2", "bzip2"), ("a.snappy", "Snappy"), ("a.LZ4", "LZ4"),
    ("a.tfrecord.zst", "zstd")])
def test_a_file_of_a_codec_no_reader_reads_is_refused_by_name_not_read_as_damage(
        tmp_path, name, codec_name):
    path = tmp_path / name
    path.write_bytes(b"BZh91AY&SY" + bytes(40))  # what Hadoop's BZip2Codec starts with
    with pytest.raises(UnsupportedCompressionError,
                       match=f"{re.escape(str(path))} is {codec_name}-compressed.*gzip"):
        list(records.read(path))
    with pytest.raises(UnsupportedCompressionError):
        records.write(path, ABC)
    assert list(records.read(path, compression="none", on_corrupt="skip")) == []


def test_unknown_compression_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="compression"):
        records.write(str(tmp_path / "f"), ABC, compression="snappy")


def test_compressed_file_objects(tmp_path):
    for compression in ("gzip", "zlib"):
        out = io.BytesIO()
        records.write(out, ABC, compression=compression)
        assert list(records.read(io.BytesIO(out.getvalue()), compression=compression)) == ABC


def test_compressed_round_trip_of_many_records(tmp_path):
    data = [os.urandom(n % 3000) for n in range(0, 600_000, 997)]
    for name in ("f.gz", "f.deflate"):
        path = str(tmp_path / name)
        records.write(path, data)
        assert list(records.read(path)) == data


def test_concatenated_gzip_members_are_read_to_the_end(tmp_path):
    path = put(
        tmp_path,
        "f.gz",
        gzip.compress(frame(b"one")) + gzip.compress(frame(b"two") + frame(b"three")),
    )
    assert list(records.read(path)) == [b"one", b"two", b"three"]


def test_empty_compressed_files(tmp_path):
    for name in ("a.gz", "a.zz"):
        path = str(tmp_path / name)
        records.write(path, [])
        assert os.path.getsize(path) > 0  # a valid, empty stream
        assert list(records.read(path)) == []
        assert list(records.read(put(tmp_path, "zero-" + name, b""))) == []


def test_damage_inside_compressed_data_names_the_uncompressed_offset(tmp_path, abc_bytes):
    abc_bytes[26 + 12] ^= 0xFF
    path = put(tmp_path, "f.gz", gzip.compress(bytes(abc_bytes)))
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.offset == 26
    assert read_skipping(path) == ([ABC[0], ABC[2]], 1, 36)


def test_truncated_gzip_stream_is_corruption(tmp_path):
    packed = gzip.compress(b"".join(frame(os.urandom(1000)) for _ in range(50)))
    path = put(tmp_path, "f.gz", packed[: len(packed) // 2])
    with pytest.raises(CorruptRecordError) as err:
        list(records.read(path))
    assert err.value.path == path
    assert "gzip" in err.value.reason


# -- the sidecar index, from the writer's side -----------------------------------------------


def test_write_indexes_an_uncompressed_local_file(tmp_path):
    path = str(tmp_path / "part-0.tfrecord")
    records.write(path, ABC)
    with open(tmp_path / "_part-0.tfrecord.tfindex", "rb") as f:
        assert f.read() == b"0 26\n26 36\n62 46\n# 3 records\n"


def test_writer_exposes_its_index_path(tmp_path):
    path = str(tmp_path / "part-0.tfrecord")
    with RecordWriter(path) as writer:
        assert writer.index_path == str(tmp_path / "_part-0.tfrecord.tfindex")


def test_write_with_index_false_writes_no_index(tmp_path):
    records.write(str(tmp_path / "f.tfrecord"), ABC, index=False)
    assert os.listdir(tmp_path) == ["f.tfrecord"]


def test_compressed_files_get_no_index(tmp_path):
    records.write(str(tmp_path / "f.tfrecord.gz"), ABC)
    assert os.listdir(tmp_path) == ["f.tfrecord.gz"]


def test_index_true_is_refused_for_compressed_output(tmp_path):
    with pytest.raises(ValueError, match="compressed"):
        records.write(str(tmp_path / "f.gz"), ABC, index=True)


def test_index_true_is_refused_for_a_file_object():
    with pytest.raises(ValueError, match="file object"):
        records.write(io.BytesIO(), ABC, index=True)


def test_overwriting_a_file_removes_its_old_index(tmp_path):
    path = str(tmp_path / "f.tfrecord")
    records.write(path, ABC)
    records.write(path, [b"new"], index=False)
    assert os.listdir(tmp_path) == ["f.tfrecord"]


def test_failed_write_leaves_the_old_file_as_it_was_and_no_index(tmp_path):
    path = str(tmp_path / "f.tfrecord")
    records.write(path, ABC, index=False)
    old = (tmp_path / "f.tfrecord").read_bytes()

    def failing():
        yield b"first"
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError):
        records.write(path, failing())
    assert os.listdir(tmp_path) == ["f.tfrecord"]
    assert (tmp_path / "f.tfrecord").read_bytes() == old


def test_a_failed_overwrite_keeps_the_old_files_index(tmp_path):
    path = str(tmp_path / "f.tfrecord")
    records.write(path, ABC)
    old_index = (tmp_path / "_f.tfrecord.tfindex").read_bytes()
    with pytest.raises(RuntimeError):
        with RecordWriter(path) as w:
            w.write(b"first")
            raise RuntimeError("source failed")
    assert (tmp_path / "_f.tfrecord.tfindex").read_bytes() == old_index
    assert list(records.read(path)) == ABC


def test_a_writer_that_fails_after_flushing_leaves_no_shorter_file(tmp_path):
    path = tmp_path / "f.tfrecord"
    with pytest.raises(RuntimeError, match="producer failed"):
        with RecordWriter(str(path)) as w:
            for _ in range(300):  # 3 MB: flushed to the file system more than once
                w.write(b"x" * 10_000)
            raise RuntimeError("producer failed")
    assert os.listdir(tmp_path) == []


def test_a_writer_whose_last_write_fails_on_close_leaves_no_file(tmp_path):
    # 300 kB of records, all still buffered when close() writes them past a 100 kB limit
    outcome = faults.write_records_past_a_file_size_limit(
        str(tmp_path / "f.tfrecord"), count=300, size=1000, limit=100_000)
    assert outcome == "refused: File too large"
    assert os.listdir(tmp_path) == []


def test_a_file_appears_only_when_its_writer_closes(tmp_path):
    path = tmp_path / "f.tfrecord"
    w = RecordWriter(str(path), index=False)
    for _ in range(300):
        w.write(b"x" * 10_000)
    assert not path.exists()
    w.close()
    assert list(records.read(str(path))) == [b"x" * 10_000] * 300
    assert os.listdir(tmp_path) == ["f.tfrecord"]


def test_writing_into_a_missing_directory_names_the_file(tmp_path):
    target = tmp_path / "missing" / "f.tfrecord"
    with pytest.raises(FileNotFoundError, match="missing/f.tfrecord"):
        records.write(str(target), ABC)


def test_on_skip_sees_each_damaged_stretch(tmp_path, abc_bytes):
    abc_bytes[0 + 12] ^= 0xFF
    abc_bytes[62 + 8] ^= 0xFF
    path = put(tmp_path, "f.tfrecord", abc_bytes)
    seen = []
    with RecordReader(path, on_corrupt="skip", on_skip=seen.append) as reader:
        assert list(reader) == [ABC[1]]
    assert [(e.path, e.offset) for e in seen] == [(path, 0), (path, 62)]
    assert "data checksum" in seen[0].reason and "length checksum" in seen[1].reason


def test_skipping_past_crafted_headers_gives_up_within_a_budget_naming_the_damage(tmp_path):
    # Back-to-back headers whose own CRCs match, each announcing data to the end of the file:
    # checking them all would cost time quadratic in the file's size.
    size = 4 << 20
    crafted = bytearray(16)  # the damage the skipping starts from, at byte 0
    while len(crafted) + 12 < size:
        crafted += framing.header(size - len(crafted) - 16)
    path = tmp_path / "crafted.tfrecord"
    path.write_bytes(bytes(crafted).ljust(size, b"\0"))
    with records.RecordReader(str(path), on_corrupt="skip", on_skip=lambda e: None) as reader:
        with pytest.raises(CorruptRecordError, match="after the damage at byte offset 0, so many "
                                                     "record headers look valid") as gave_up:
            list(reader)
    assert str(path) in str(gave_up.value)
    assert gave_up.value.offset > 0


def test_a_corrupt_record_error_pickles_whole():
    error = CorruptRecordError("hdfs://nn/x.tfrecord", 1024, "data checksum mismatch")
    again = pickle.loads(pickle.dumps(error))
    assert (again.path, again.offset, again.reason, str(again)) == (
        error.path, error.offset, error.reason, str(error))
