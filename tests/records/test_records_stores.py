"""tfrecord_io.records and .index on every remote store the session serves (``hdfs://``,
``webhdfs://``, ``s3://``, ``az://``, ``gs://``; tests/stores.py): the same framing, ranges and
indexes as on local disk, damage and a missing file named with their URL; a failed writer
leaves nothing, and a file it was to replace as it was."""

from __future__ import annotations

import io
import os
import uuid

import faults
import pytest
import stores

from tfrecord_io import fs, index, records
from tfrecord_io.errors import CorruptRecordError

RECORDS = [os.urandom(n) for n in (0, 1, 100, 5000, 70000)] * 8


def _fresh(request) -> str:
    url = f"{stores.root(request, request.param)}/records/{request.node.name.split('[')[0]}-"
    url += uuid.uuid4().hex[:8]
    fs.makedirs(url)
    return url


@pytest.fixture(params=stores.params())
def base(request) -> str:
    """A fresh, existing directory of one store, its settings in the environment."""
    return _fresh(request)


def test_write_then_read_round_trip(base):
    assert records.write(f"{base}/a.tfrecord", RECORDS) == len(RECORDS)
    assert list(records.read(f"{base}/a.tfrecord")) == RECORDS
    assert fs.ls(base) == [f"{base}/a.tfrecord"]  # no index by default on remote targets


def test_gzip_round_trip_stores_the_very_bytes_compressed_once(base):
    records.write(f"{base}/a.tfrecord.gz", RECORDS)
    assert list(records.read(f"{base}/a.tfrecord.gz")) == RECORDS
    local = io.BytesIO()
    records.write(local, RECORDS, compression="gzip")
    assert stores.get(f"{base}/a.tfrecord.gz") == local.getvalue()


def test_an_index_gives_byte_ranges_covering_every_record_once(base):
    url = f"{base}/a.tfrecord"
    records.write(url, RECORDS, index=True)
    assert fs.ls(base) == [f"{base}/_a.tfrecord.tfindex", url]
    entries = index.load_index(url)
    assert entries is not None and len(entries) == len(RECORDS)
    for n in (1, 2, 3, 7):
        pieces = [
            list(records.read(url, start=s, end=e)) for s, e in index.split_ranges(entries, n)
        ]
        assert [r for piece in pieces for r in piece] == RECORDS


def test_a_writer_that_fails_leaves_nothing(base):
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
    assert fs.ls(base) == []


@pytest.mark.parametrize("base", stores.params("s3", "az", "gs"), indirect=True)
def test_a_writer_whose_last_write_fails_on_close_uploads_nothing(base):
    # The local staging file may not grow past 100 kB; close() writes the buffered 300 kB.
    outcome = faults.write_records_past_a_file_size_limit(
        f"{base}/f.tfrecord", count=300, size=1000, limit=100_000)
    assert outcome == "refused: File too large"
    assert fs.ls(base) == []


def test_a_writer_that_fails_leaves_the_file_it_was_to_replace(base):
    url = f"{base}/kept.tfrecord"
    records.write(url, RECORDS[:5])
    with pytest.raises(RuntimeError, match="producer failed"):
        with records.RecordWriter(url) as w:
            for r in RECORDS:
                w.write(r)
            raise RuntimeError("producer failed")
    assert list(records.read(url)) == RECORDS[:5]
    assert fs.ls(base) == [url]


def test_damage_names_the_url_and_offset(base):
    url = f"{base}/bad.tfrecord"
    buf = io.BytesIO()
    records.write(buf, [b"x" * 10, b"y" * 10])
    payload = bytearray(buf.getvalue())
    payload[16 + 10 + 12 + 3] ^= 0xFF  # inside the second record's data
    stores.put(url, bytes(payload))
    with pytest.raises(CorruptRecordError) as error:
        list(records.read(url))
    assert error.value.offset == 26 and url in str(error.value)


def test_reading_a_missing_file_names_it(base):
    with pytest.raises(FileNotFoundError, match=f"{base}/none.tfrecord"):
        list(records.read(f"{base}/none.tfrecord"))
