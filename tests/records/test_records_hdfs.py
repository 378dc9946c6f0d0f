"""tfrecord_io.records and .index on a real HDFS: the same framing, ranges and indexes."""

from __future__ import annotations

import os

import pytest

from tfrecord_io import fs, index, records
from tfrecord_io.errors import CorruptRecordError

RECORDS = [os.urandom(n) for n in (0, 1, 100, 5000, 70000)] * 20


@pytest.fixture
def base(hdfs, request):
    url = f"{hdfs.url}/records/{request.node.name}"
    fs.makedirs(url)
    return url


def test_write_then_read_round_trip_on_hdfs(base):
    assert records.write(f"{base}/a.tfrecord", RECORDS) == len(RECORDS)
    assert list(records.read(f"{base}/a.tfrecord")) == RECORDS


def test_gzip_round_trip_on_hdfs(base):
    records.write(f"{base}/a.tfrecord.gz", RECORDS)
    assert list(records.read(f"{base}/a.tfrecord.gz")) == RECORDS


def test_index_on_hdfs_gives_byte_ranges_covering_every_record_once(base):
    url = f"{base}/a.tfrecord"
    records.write(url, RECORDS, index=True)
    entries = index.load_index(url)
    assert entries is not None and len(entries) == len(RECORDS)
    for n in (1, 2, 3, 7):
        pieces = [
            list(records.read(url, start=s, end=e)) for s, e in index.split_ranges(entries, n)
        ]
        assert [r for piece in pieces for r in piece] == RECORDS


def test_webhdfs_reads_what_hdfs_rpc_wrote(hdfs, base):
    records.write(f"{base}/a.tfrecord", RECORDS)
    web = f"{hdfs.webhdfs_url}{base[len(hdfs.url):]}/a.tfrecord"
    assert list(records.read(web)) == RECORDS


def test_damage_on_hdfs_names_the_url_and_offset(base):
    url = f"{base}/bad.tfrecord"
    payload = bytearray()
    for r in [b"x" * 10, b"y" * 10]:
        payload += records_bytes(r)
    payload[16 + 10 + 12 + 3] ^= 0xFF  # inside the second record's data
    with fs.open(url, "wb") as out:
        out.write(bytes(payload))
    with pytest.raises(CorruptRecordError) as error:
        list(records.read(url))
    assert error.value.offset == 26
    assert url in str(error.value)


def records_bytes(data: bytes) -> bytes:
    import io

    buf = io.BytesIO()
    records.write(buf, [data])
    return buf.getvalue()
