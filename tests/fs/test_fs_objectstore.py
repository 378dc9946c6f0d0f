"""The semantics every object store of tfrecord_io.fs shares (fs/objectstore.py), on the real
emulators of the stores besides S3 (whose own suite is test_fs_s3.py): ``az://`` on Azurite,
``gs://`` on fake-gcs-server, each configured the way its clients are (conftest.py's
``azure_env`` and ``gcs_env``); and the setting of how many ranged reads one reader keeps in
flight, which every store follows."""

from __future__ import annotations

import os
import tempfile
import time
import uuid

import pytest

from tfrecord_io import fs, records
from tfrecord_io.errors import (
    BucketNotFoundError,
    InputNotFoundError,
    ObjectStoreError,
    ObjectStoreFileNotFoundError,
    UnsupportedOperationError,
)
from tfrecord_io.fs.objectstore import READ_REQUESTS, READ_REQUESTS_ENV, read_requests


@pytest.fixture(params=[pytest.param("az", marks=pytest.mark.azure),
                        pytest.param("gs", marks=pytest.mark.gcs)])
def root(request) -> str:
    """``SCHEME://BUCKET`` of the store under test, its environment set for the test."""
    if request.param == "az":
        request.getfixturevalue("azure_env")
        return f"az://{request.getfixturevalue('azure_container')}"
    request.getfixturevalue("gcs_env")
    return f"gs://{request.getfixturevalue('gcs_bucket')}"


@pytest.fixture
def base(root, request) -> str:
    """A fresh prefix of the session's bucket or container (nothing there yet)."""
    return f"{root}/fs/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def staging(tmp_path, monkeypatch):
    """The directory where writes are staged before their upload, empty at the start."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _put(url: str, data: bytes = b"") -> None:
    with fs.open(url, "wb") as f:
        f.write(data)


def _get(url: str) -> bytes:
    with fs.open(url) as f:
        return f.read()


def test_open_stat_and_exists(base):
    _put(f"{base}/d/f.bin", b"hello store")
    assert _get(f"{base}/d/f.bin") == b"hello store"
    info = fs.stat(f"{base}/d/f.bin")
    assert (info.url, info.size, info.is_dir) == (f"{base}/d/f.bin", 11, False)
    assert abs(info.mtime - time.time()) < 120
    assert fs.isdir(f"{base}/d") and fs.exists(f"{base}/d/f.bin")
    assert not fs.exists(f"{base}/d/nope") and not fs.isdir(f"{base}/d/f.bin")
    _put(f"{base}/empty")
    assert _get(f"{base}/empty") == b"" and fs.stat(f"{base}/empty").size == 0


def test_ls_glob_and_walk(base):
    for name in ("b/part-1", "b/part-0", "a/part-0", "_SUCCESS", "top"):
        _put(f"{base}/{name}", b"xy")
    assert fs.ls(base) == [f"{base}/{n}" for n in ("_SUCCESS", "a", "b", "top")]
    assert fs.glob(f"{base}/*/part-?") == [f"{base}/a/part-0", f"{base}/b/part-0",
                                           f"{base}/b/part-1"]
    assert list(fs.walk(base)) == [
        (base, ["a", "b"], ["_SUCCESS", "top"]),
        (f"{base}/a", [], ["part-0"]),
        (f"{base}/b", [], ["part-0", "part-1"]),
    ]
    with pytest.raises(InputNotFoundError, match="no file matches"):
        fs.expand(f"{base}/*.parquet")


def test_seeks_read_ranges_of_a_large_object(base):
    data = os.urandom(20 << 20)
    _put(f"{base}/blob", data)
    with fs.open(f"{base}/blob", buffer_size=1 << 20) as f:
        for offset, n in ((12_000_000, 100), (5, 3_000_000), (len(data) - 10, 100)):
            f.seek(offset)
            assert f.read(n) == data[offset:offset + n]
    assert _get(f"{base}/blob") == data


def test_a_large_object_reads_whole_with_one_request_in_flight_or_the_default(base,
                                                                               monkeypatch):
    data = os.urandom(5 << 20)
    _put(f"{base}/blob", data)
    for requests in ("1", ""):
        monkeypatch.setenv("TFRECORD_IO_READ_REQUESTS", requests)
        with fs.open(f"{base}/blob", buffer_size=256 << 10) as f:
            assert f.raw.fetchers == (int(requests) if requests else READ_REQUESTS)
            assert f.read() == data


def test_requests_in_flight_default_to_four_and_follow_the_setting(monkeypatch):
    monkeypatch.delenv(READ_REQUESTS_ENV, raising=False)
    assert read_requests() == READ_REQUESTS == 4
    monkeypatch.setenv(READ_REQUESTS_ENV, " 16 ")
    assert read_requests() == 16


@pytest.mark.parametrize("text", ["0", "17", "-1", "two", "1.5"])
def test_requests_in_flight_outside_one_to_sixteen_are_refused_naming_the_setting(monkeypatch,
                                                                                  text):
    monkeypatch.setenv(READ_REQUESTS_ENV, text)
    with pytest.raises(ValueError, match=f"TFRECORD_IO_READ_REQUESTS='{text}': use a whole "
                                         "number from 1 to 16"):
        read_requests()


def test_a_write_appears_only_when_closed_and_a_failed_one_never(base, staging):
    f = fs.open(f"{base}/new", "wb")
    f.write(b"x" * (3 << 20))
    f.flush()
    assert not fs.exists(f"{base}/new")
    f.close()
    assert fs.stat(f"{base}/new").size == 3 << 20
    _put(f"{base}/kept", b"old")
    for url in (f"{base}/failed", f"{base}/kept"):
        with pytest.raises(RuntimeError, match="writer failed"):
            with fs.open(url, "wb") as out:
                out.write(b"partial " * 1000)
                raise RuntimeError("writer failed")
    assert fs.ls(base) == [f"{base}/kept", f"{base}/new"]
    assert _get(f"{base}/kept") == b"old" and list(staging.iterdir()) == []


def test_makedirs_rename_replace_and_delete(base):
    fs.makedirs(f"{base}/empty/sub")
    assert fs.isdir(f"{base}/empty/sub")
    _put(f"{base}/a", b"A")
    _put(f"{base}/b", b"B")
    with pytest.raises(FileExistsError):
        fs.rename(f"{base}/a", f"{base}/b")
    fs.replace(f"{base}/a", f"{base}/b")
    assert _get(f"{base}/b") == b"A" and not fs.exists(f"{base}/a")
    for name in ("tree/x", "tree/sub/y"):
        _put(f"{base}/{name}", name.encode())
    fs.rename(f"{base}/tree", f"{base}/moved")
    assert not fs.exists(f"{base}/tree")
    assert _get(f"{base}/moved/sub/y") == b"tree/sub/y"
    with pytest.raises(ObjectStoreError, match="not empty"):
        fs.delete(f"{base}/moved")
    fs.delete(f"{base}/moved", recursive=True)
    fs.delete(f"{base}/b")
    assert not fs.exists(f"{base}/moved") and not fs.exists(f"{base}/b")
    with pytest.raises(UnsupportedOperationError):
        fs.delete(base.rsplit("/", 2)[0], recursive=True)


def test_records_with_an_index_split_into_ranges_that_cover_every_record_once(base):
    from tfrecord_io import index

    datas = [os.urandom(n) for n in (0, 1, 300, 70_000)] * 50
    url = f"{base}/part-0.tfrecord"
    records.write(url, datas, index=True)
    assert fs.ls(base) == [f"{base}/_part-0.tfrecord.tfindex", url]
    assert list(records.read(url)) == datas
    entries = index.load_index(url)
    assert entries is not None and len(entries) == len(datas)
    pieces = [list(records.read(url, start=s, end=e)) for s, e in index.split_ranges(entries, 3)]
    assert [r for piece in pieces for r in piece] == datas


def test_a_missing_object_is_file_not_found_naming_the_url(base):
    url = f"{base}/absent.tfrecord"
    for op in (lambda: fs.open(url), lambda: fs.stat(url), lambda: fs.delete(url)):
        with pytest.raises(ObjectStoreFileNotFoundError, match=url) as err:
            op()
        assert isinstance(err.value, FileNotFoundError)


def test_a_missing_bucket_is_its_own_error(root):
    scheme = root.split("://")[0]
    url = f"{scheme}://no-such-bucket-here/data/part-0"
    for op in (lambda: fs.stat(url), lambda: fs.open(url), lambda: fs.open(url, "wb"),
               lambda: fs.ls(f"{scheme}://no-such-bucket-here/data")):
        with pytest.raises(BucketNotFoundError, match="no-such-bucket-here.* does not exist"):
            op()
