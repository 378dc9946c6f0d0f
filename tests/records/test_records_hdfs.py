"""tfrecord_io.records on a real HDFS through its two clients: what one writes, the other reads.
What records do alike on every store is in test_records_stores.py."""

from __future__ import annotations

import os
import uuid

from tfrecord_io import fs, records

RECORDS = [os.urandom(n) for n in (0, 1, 100, 5000, 70000)] * 20


def test_webhdfs_reads_what_hdfs_rpc_wrote(hdfs):
    path = f"/records/rpc-then-web-{uuid.uuid4().hex[:8]}/a.tfrecord"
    records.write(f"{hdfs.url}{path}", RECORDS)
    assert list(records.read(f"{hdfs.webhdfs_url}{path}")) == RECORDS
    assert fs.stat(f"{hdfs.webhdfs_url}{path}").size == fs.stat(f"{hdfs.url}{path}").size
