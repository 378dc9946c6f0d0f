"""tfrecord_io.fs on the real test HDFS (conftest.py's ``hdfs``: a MiniDFSCluster), through
hdfs:// (hdfs-native) and webhdfs:// alike: what only HDFS does. What every store does alike
(open, stat, list, glob, walk, expand, makedirs, rename, replace, delete) is in
test_fs_stores.py."""

from __future__ import annotations

import random
import threading
import time

import pytest
import stores

from tfrecord_io import fs, index, records

pytestmark = pytest.mark.usefixtures("no_hadoop_settings")


@pytest.fixture
def base(hdfs_dir):
    """A fresh directory URL, once through hdfs:// and once through webhdfs://."""
    return hdfs_dir


def test_a_reader_started_ahead_reads_the_files_bytes_from_its_position(base):
    data = random.Random(1).randbytes(3 << 20)
    stores.put(f"{base}/f.bin", data)
    with fs.open(f"{base}/f.bin") as f:
        f.start()  # the stream is open and its first chunk in before the first read
        f.start()  # a second start changes nothing
        assert f.read(1000) == data[:1000]
        f.seek(2 << 20)
        f.start()
        assert f.read() == data[2 << 20:]
        f.start()  # at the end: nothing to fetch
        assert f.read() == b""


def test_atomic_write_on_hdfs_leaves_no_temporary_file(base):
    target = f"{base}/_part-0.tfindex"
    with fs.atomic_write(target) as f:
        f.write(b"0 17\n")
    with fs.atomic_write(target) as f:  # replaces an existing file
        f.write(b"0 18\n")
    with pytest.raises(RuntimeError):
        with fs.atomic_write(target) as f:
            f.write(b"partial")
            raise RuntimeError("writer failed")
    with fs.open(target) as f:
        assert f.read() == b"0 18\n"
    assert fs.ls(base) == [target]


def test_replace_on_hdfs_never_leaves_the_target_missing(base):
    stores.put(f"{base}/target", b"0")
    missing = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if not fs.exists(f"{base}/target"):
                missing.append(time.monotonic())

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for n in range(1, 41):
            stores.put(f"{base}/next", str(n).encode())
            fs.replace(f"{base}/next", f"{base}/target")
    finally:
        done.set()
        watcher.join(timeout=30)
    assert missing == []  # one NameNode call: the old file or the new one, never none
    assert stores.get(f"{base}/target") == b"40" and fs.ls(base) == [f"{base}/target"]


def test_records_write_their_index_through_fs(base):
    url = f"{base}/part-0.tfrecord"
    records.write(url, [b"a", b"bb"], index=True)
    assert fs.ls(base) == [f"{base}/_part-0.tfrecord.tfindex", url]
    assert index.load_index(url) == [(0, 17), (17, 18)]
