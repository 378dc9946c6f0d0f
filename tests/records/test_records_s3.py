"""tfrecord_io.records and .index on a real S3-compatible server (conftest.py's ``s3``): the same
framing, ranges and indexes as on local disk, and a failed writer leaves no object."""

from __future__ import annotations

import io
import os
import uuid

import pytest

from tfrecord_io import fs, index, records
from tfrecord_io.errors import CorruptRecordError, ObjectStoreFileNotFoundError

RECORDS = [os.urandom(n) for n in (0, 1, 100, 5000, 70000)] * 8


@pytest.fixture
def base(s3_env, s3_bucket, request):
    return f"s3://{s3_bucket}/records/{request.node.name}-{uuid.uuid4().hex[:8]}"


def test_write_then_read_round_trip_on_s3(base):
    assert records.write(f"{base}/a.tfrecord", RECORDS) == len(RECORDS)
    assert list(records.read(f"{base}/a.tfrecord")) == RECORDS
    assert fs.ls(base) == [f"{base}/a.tfrecord"]  # no index by default on remote targets


def test_gzip_round_trip_on_s3(base, s3_env):
    records.write(f"{base}/a.tfrecord.gz", RECORDS)
    assert list(records.read(f"{base}/a.tfrecord.gz")) == RECORDS
    local = io.BytesIO()
    records.write(local, RECORDS, compression="gzip")
    bucket, key = base[len("s3://"):].split("/", 1)
    stored = s3_env.client().get_object(Bucket=bucket, Key=f"{key}/a.tfrecord.gz")["Body"].read()
    assert stored == local.getvalue()  # the very bytes: not compressed again on the way


def test_index_on_s3_gives_byte_ranges_covering_every_record_once(base):
    url = f"{base}/a.tfrecord"
    records.write(url, RECORDS, index=True)
    assert fs.ls(base) == [f"{base}/_a.tfrecord.tfindex", url]
    entries = index.load_index(url)
    assert entries is not None and len(entries) == len(RECORDS)
    for n in (1, 3):
        pieces = [
            list(records.read(url, start=s, end=e)) for s, e in index.split_ranges(entries, n)
        ]
        assert [r for piece in pieces for r in piece] == RECORDS


def test_a_writer_that_fails_leaves_no_object(base):
    url = f"{base}/failed.tfrecord"
    with pytest.raises(RuntimeError, match="producer failed"):
        with records.RecordWriter(url, index=True) as w:
            for r in RECORDS:
                w.write(r)
            raise RuntimeError("producer failed")
    assert not fs.exists(url) and not fs.exists(index.index_path(url))

    def failing():
        yield from RECORDS[:3]
        raise ValueError("bad record source")

    with pytest.raises(ValueError, match="bad record source"):
        records.write(url, failing(), compression="gzip")
    assert not fs.exists(url)


def test_damage_on_s3_names_the_url_and_offset(base):
    url = f"{base}/bad.tfrecord"
    buf = io.BytesIO()
    records.write(buf, [b"x" * 10, b"y" * 10])
    payload = bytearray(buf.getvalue())
    payload[16 + 10 + 12 + 3] ^= 0xFF  # inside the second record's data
    with fs.open(url, "wb") as out:
        out.write(bytes(payload))
    with pytest.raises(CorruptRecordError) as error:
        list(records.read(url))
    assert error.value.offset == 26 and url in str(error.value)


def test_reading_a_missing_object_names_it(base):
    with pytest.raises(ObjectStoreFileNotFoundError, match=f"{base}/none.tfrecord"):
        list(records.read(f"{base}/none.tfrecord"))
