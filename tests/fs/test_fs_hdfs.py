"""tfrecord_io.fs on the real test HDFS (conftest.py's ``hdfs``: a MiniDFSCluster), through
hdfs:// (hdfs-native) and webhdfs:// alike."""

from __future__ import annotations

import random
import uuid

import pytest

from tfrecord_io import fs, index, records
from tfrecord_io.errors import HdfsError, HdfsFileNotFoundError, InputNotFoundError

pytestmark = pytest.mark.usefixtures("no_hadoop_settings")


@pytest.fixture(params=["hdfs", "webhdfs"])
def base(request, hdfs):
    """A fresh directory URL, once through hdfs:// and once through webhdfs://."""
    root = hdfs.url if request.param == "hdfs" else hdfs.webhdfs_url
    url = f"{root}/fs/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"
    fs.makedirs(url)
    return url


def _put(url: str, data: bytes = b"") -> None:
    with fs.open(url, "wb") as f:
        f.write(data)


def test_open_stat_and_exists(base):
    _put(f"{base}/d/f.bin", b"hello hdfs")  # HDFS creates the parents
    with fs.open(f"{base}/d/f.bin") as f:
        assert f.read() == b"hello hdfs"
    with fs.open(f"{base}/d/t.txt", "w") as f:
        f.write("text ü\n")
    with fs.open(f"{base}/d/t.txt") as f:
        assert f.read() == "text ü\n".encode()
    info = fs.stat(f"{base}/d/f.bin")
    assert (info.url, info.size, info.is_dir) == (f"{base}/d/f.bin", 10, False) and info.mtime > 0
    assert fs.isdir(f"{base}/d") and fs.exists(f"{base}/d/f.bin")
    assert not fs.exists(f"{base}/d/nope")


def test_a_reader_started_ahead_reads_the_files_bytes_from_its_position(base):
    data = random.Random(1).randbytes(3 << 20)
    _put(f"{base}/f.bin", data)
    with fs.open(f"{base}/f.bin") as f:
        f.start()  # the stream is open and its first chunk in before the first read
        f.start()  # a second start changes nothing
        assert f.read(1000) == data[:1000]
        f.seek(2 << 20)
        f.start()
        assert f.read() == data[2 << 20:]
        f.start()  # at the end: nothing to fetch
        assert f.read() == b""


def test_ls_glob_and_walk(base):
    for name in ("b/part-1", "b/part-0", "a/part-0", "_SUCCESS", "top"):
        _put(f"{base}/{name}", b"xy")
    assert fs.ls(base) == [f"{base}/{n}" for n in ("_SUCCESS", "a", "b", "top")]
    assert fs.glob(f"{base}/*/part-?") == [
        f"{base}/a/part-0",
        f"{base}/b/part-0",
        f"{base}/b/part-1",
    ]
    assert fs.glob(f"{base}/*", skip_hidden=True) == [f"{base}/a", f"{base}/b", f"{base}/top"]
    assert fs.glob(f"{base}/missing/*") == []
    assert list(fs.walk(base)) == [
        (base, ["a", "b"], ["_SUCCESS", "top"]),
        (f"{base}/a", [], ["part-0"]),
        (f"{base}/b", [], ["part-0", "part-1"]),
    ]


def test_expand_on_hdfs(base):
    for name, size in (("part-1", 3), ("part-0", 1), ("_SUCCESS", 0), ("_temporary/0/part-9", 2),
                       ("day=1/part-0", 4), (".part-0.crc", 2)):
        _put(f"{base}/{name}", b"x" * size)
    found = fs.expand(base, detail=True)
    assert [(i.url, i.size) for i in found] == [
        (f"{base}/day=1/part-0", 4), (f"{base}/part-0", 1), (f"{base}/part-1", 3)
    ]
    assert fs.expand([f"{base}/part-*", f"{base}/part-0"]) == [f"{base}/part-0", f"{base}/part-1"]
    with pytest.raises(HdfsFileNotFoundError) as err:
        fs.expand(f"{base}/absent")
    assert f"{base}/absent" in str(err.value) and isinstance(err.value, FileNotFoundError)
    with pytest.raises(InputNotFoundError, match="no file matches"):
        fs.expand(f"{base}/*.parquet")


def test_rename_replace_and_delete(base):
    _put(f"{base}/a", b"A")
    _put(f"{base}/b", b"B")
    with pytest.raises(FileExistsError):
        fs.rename(f"{base}/a", f"{base}/b")
    fs.replace(f"{base}/a", f"{base}/b")
    with fs.open(f"{base}/b") as f:
        assert f.read() == b"A"
    assert not fs.exists(f"{base}/a")
    fs.makedirs(f"{base}/dir/sub")
    with pytest.raises(HdfsError, match="not empty"):
        fs.delete(f"{base}/dir")
    fs.delete(f"{base}/dir", recursive=True)
    assert fs.ls(base) == [f"{base}/b"]


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


def test_records_write_their_index_through_fs(base):
    url = f"{base}/part-0.tfrecord"
    records.write(url, [b"a", b"bb"], index=True)
    assert fs.ls(base) == [f"{base}/_part-0.tfrecord.tfindex", url]
    assert index.load_index(url) == [(0, 17), (17, 18)]
