"""The semantics every object store of tfrecord_io.fs shares (fs/objectstore.py), on the real
emulators of the stores besides S3 (whose own suite is test_fs_s3.py): ``az://`` on Azurite,
``gs://`` on fake-gcs-server, each configured the way its clients are (conftest.py's
``azure_env`` and ``gcs_env``); and the setting of how many ranged reads one reader keeps in
flight, which every store follows; and keys with an empty path part (``dir//x``), which pyarrow's
clients cannot name, on every object store, S3 too. What every store does alike, HDFS too (open,
stat, list, glob, walk, expand, makedirs, rename, replace, delete), is in test_fs_stores.py."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import uuid
from collections.abc import Iterator
from unittest import mock

import pytest
import stores

from tfrecord_io import fs
from tfrecord_io.errors import (
    BucketNotFoundError,
    FileChangedError,
    ObjectStoreError,
    ObjectStoreFileNotFoundError,
    UnsupportedOperationError,
)
from tfrecord_io.fs import objectstore
from tfrecord_io.fs.objectstore import READ_REQUESTS, READ_REQUESTS_ENV, read_requests


@pytest.fixture(params=stores.params("az", "gs"))
def root(request) -> str:
    """``SCHEME://BUCKET`` of the store under test, its environment set for the test."""
    return stores.root(request, request.param)


@pytest.fixture
def base(root, request) -> str:
    """A fresh prefix of the session's bucket or container (nothing there yet)."""
    return f"{root}/fs/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def staging(tmp_path, monkeypatch):
    """The directory where writes are staged before their upload, empty at the start."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_seeks_read_ranges_of_a_large_object(base):
    data = os.urandom(20 << 20)
    stores.put(f"{base}/blob", data)
    with fs.open(f"{base}/blob", buffer_size=1 << 20) as f:
        for offset, n in ((12_000_000, 100), (5, 3_000_000), (len(data) - 10, 100)):
            f.seek(offset)
            assert f.read(n) == data[offset:offset + n]
    assert stores.get(f"{base}/blob") == data


def test_a_large_object_reads_whole_with_one_request_in_flight_or_the_default(base,
                                                                               monkeypatch):
    data = os.urandom(5 << 20)
    stores.put(f"{base}/blob", data)
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
    stores.put(f"{base}/kept", b"old")
    for url in (f"{base}/failed", f"{base}/kept"):
        with pytest.raises(RuntimeError, match="writer failed"):
            with fs.open(url, "wb") as out:
                out.write(b"partial " * 1000)
                raise RuntimeError("writer failed")
    assert fs.ls(base) == [f"{base}/kept", f"{base}/new"]
    assert stores.get(f"{base}/kept") == b"old" and list(staging.iterdir()) == []


def test_an_upload_that_cannot_read_its_staged_data_publishes_nothing(any_base,
                                                                      monkeypatch):
    stores.put(f"{any_base}/kept", b"old")

    def unreadable(*args, **kwargs):
        raise OSError(5, "the staged file cannot be read")

    with monkeypatch.context() as patched:
        patched.setattr(objectstore.pa, "memory_map", unreadable)
        for url in (f"{any_base}/new", f"{any_base}/kept"):
            with pytest.raises(OSError, match="staged file cannot be read"):
                with fs.open(url, "wb") as out:
                    out.write(b"new " * 1000)
    assert fs.ls(any_base) == [f"{any_base}/kept"]
    assert stores.get(f"{any_base}/kept") == b"old"


def test_a_file_is_not_written_over_a_directory(any_base):
    stores.put(f"{any_base}/train/part-0", b"kept")
    with pytest.raises(IsADirectoryError, match=f"cannot write {any_base}/train: it is a dir"):
        fs.open(f"{any_base}/train", "wb")
    assert fs.expand(f"{any_base}/train") == [f"{any_base}/train/part-0"]


def test_opening_a_directory_says_it_is_one(any_base):
    stores.put(f"{any_base}/train/part-0", b"kept")
    with pytest.raises(IsADirectoryError, match=f"{any_base}/train is a directory"):
        fs.open(f"{any_base}/train")


@pytest.mark.parametrize("store", stores.params("s3", "az", "gs"))
def test_an_object_replaced_while_it_is_read_is_a_file_changed_error(request, store):
    url = f"{stores.root(request, store)}/fs/replaced-{uuid.uuid4().hex[:8]}/part-0"
    block = 256 << 10
    old, new = os.urandom(40 * block), os.urandom(40 * block)
    stores.put(url, old)
    with fs.open(url, buffer_size=block) as f:
        assert f.read(block) == old[:block]
        assert f.raw.wait_until_idle()  # the blocks ahead are in: the rest is fetched later
        stores.put(url, new)
        with pytest.raises(FileChangedError, match=f"{url} was .*replaced while being read"):
            f.read()


@pytest.mark.parametrize("store", stores.params("s3", "az", "gs"))
def test_an_object_read_whole_in_many_requests_is_not_taken_for_changed(request, store):
    url = f"{stores.root(request, store)}/fs/unchanged-{uuid.uuid4().hex[:8]}/part-0"
    data = os.urandom(3 << 20)
    stores.put(url, data)
    with fs.open(url, buffer_size=256 << 10) as f:
        assert f.read() == data


def test_deleting_a_whole_bucket_is_refused(base):
    stores.put(f"{base}/x", b"x")
    with pytest.raises(UnsupportedOperationError):
        fs.delete(base.rsplit("/", 2)[0], recursive=True)
    assert fs.exists(f"{base}/x")


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


# -- keys with an empty path part ----------------------------------------------------------------


def _put_raw(request, url: str, data: bytes = b"x") -> None:
    """Writes the object at *url* through the store's own API, not pyarrow's: its key as
    written, empty path parts (``a//b``, a leading ``/``) included."""
    scheme, rest = url.split("://", 1)
    bucket, _, key = rest.partition("/")
    if scheme == "s3":
        request.getfixturevalue("s3").client().put_object(Bucket=bucket, Key=key, Body=data)
    elif scheme == "az":
        request.getfixturevalue("azurite").put_blob(bucket, key, data)
    else:
        request.getfixturevalue("gcs").put_object(bucket, key, data)


@pytest.fixture(params=stores.params("s3", "az", "gs"))
def any_base(request) -> str:
    """A fresh prefix of the session's bucket or container, on every object store."""
    root = stores.root(request, request.param)
    return f"{root}/fs/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(params=stores.params("s3", "az"))
def own_bucket(request) -> str:
    """``SCHEME://BUCKET`` of a new, empty bucket or container of the stores whose listing by
    delimiter names an empty path part's prefix (GCS's is derived from all the keys below)."""
    stores.root(request, request.param)
    name = f"empty-parts-{uuid.uuid4().hex[:8]}"
    if request.param == "s3":
        request.getfixturevalue("s3").create_bucket(name)
        return f"s3://{name}"
    return request.getfixturevalue("azurite").create_container(name)


def test_a_listing_leaves_out_keys_below_an_empty_path_part_and_warns_once(own_bucket, request,
                                                                          caplog):
    base = f"{own_bucket}/ds"
    for url in (f"{base}//x.tfrecord", f"{base}/y.tfrecord", f"{own_bucket}//lead/z.tfrecord"):
        _put_raw(request, url)
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.fs.objectstore"):
        assert fs.ls(base) == [f"{base}/y.tfrecord"]
        assert fs.glob(f"{base}/*") == [f"{base}/y.tfrecord"]
        assert fs.expand(base) == [f"{base}/y.tfrecord"]
        assert list(fs.walk(base)) == [(base, [], ["y.tfrecord"])]
        assert fs.ls(own_bucket) == fs.glob(f"{own_bucket}/*") == [base]
    warnings = [r.getMessage() for r in caplog.records if "empty path part" in r.getMessage()]
    assert len(warnings) == 2  # once for each directory, however often it is listed
    assert warnings[0].startswith(f"{base} holds keys below an empty path part ({base}//NAME)")
    assert warnings[1].startswith(f"{own_bucket} holds keys below an empty path part")


def test_a_url_whose_key_has_an_empty_path_part_is_an_object_store_error_saying_so(any_base,
                                                                                   request):
    url = f"{any_base}//x.tfrecord"
    _put_raw(request, url)
    for op in (lambda: fs.open(url), lambda: fs.stat(url), lambda: fs.exists(url),
               lambda: fs.ls(f"{any_base}//sub"), lambda: fs.open(url, "wb")):
        with pytest.raises(ObjectStoreError, match="its key has an empty path part") as err:
            op()
        assert any_base in str(err.value) and isinstance(err.value, OSError)


# Not on az://: pyarrow's recursive listing of such a key crashes the process.
@pytest.mark.parametrize("store", stores.params("s3", "gs"))
def test_a_directory_holding_a_key_below_an_empty_path_part_is_not_moved_nor_taken_for_empty(
        request, store):
    any_base = f"{stores.root(request, store)}/fs/not-moved-{uuid.uuid4().hex[:8]}"
    _put_raw(request, f"{any_base}/tree//x.tfrecord", b"kept")
    with pytest.raises(ObjectStoreError,
                       match=f"cannot move the directory {any_base}/tree: it holds a key with an "
                             f"empty path part \\({any_base}/tree//x.tfrecord\\); nothing was "
                             "moved"):
        fs.rename(f"{any_base}/tree", f"{any_base}/moved")
    with pytest.raises(OSError, match="not empty"):
        fs.delete(f"{any_base}/tree")
    assert not fs.exists(f"{any_base}/moved") and fs.exists(f"{any_base}/tree")


# -- a key that is also the prefix of other keys ----------------------------------------------


def test_an_object_whose_key_is_also_a_directory_is_listed_as_both_and_expanded_whole(any_base):
    """``x`` and ``x/y`` both objects (as a tool that writes a name and then a tree below it
    leaves them): no store loses either from a listing, so no reader skips one's data."""
    for name, data in (("x", b"file"), ("x/y", b"below"), ("x1", b"beside")):
        stores.put(f"{any_base}/{name}", data)
    entries = sorted((e.url, e.is_dir) for e in fs.ls(any_base, detail=True))
    assert entries == [(f"{any_base}/x", False), (f"{any_base}/x", True),
                       (f"{any_base}/x1", False)]
    assert fs.expand(any_base) == [f"{any_base}/x", f"{any_base}/x/y", f"{any_base}/x1"]
    assert stores.get(f"{any_base}/x") == b"file" and stores.get(f"{any_base}/x/y") == b"below"


def test_a_glob_matches_a_key_that_is_also_a_directory_once(any_base):
    for name, data in (("x", b"file"), ("x/y", b"below"), ("x1", b"beside")):
        stores.put(f"{any_base}/{name}", data)
    assert fs.glob(f"{any_base}/x*") == [f"{any_base}/x", f"{any_base}/x1"]
    assert [(m.url, m.is_dir) for m in fs.glob(f"{any_base}/x*", detail=True)] == [
        (f"{any_base}/x", False), (f"{any_base}/x1", False)]
    assert fs.glob(f"{any_base}/x*/") == [f"{any_base}/x"]
    assert fs.glob(f"{any_base}/*/y") == [f"{any_base}/x/y"]


# -- a directory's move that fails half-way ------------------------------------------------------


@contextlib.contextmanager
def _copies_failing_at(n: int) -> Iterator[None]:
    """Within the block, the *n*-th server-side copy fails, as one does when the connection is
    lost."""
    copy = objectstore.ObjectStoreFileSystem._copy_object
    calls = []

    def failing(self, src, dst):
        calls.append(src)
        if len(calls) == n:
            raise ObjectStoreError(f"cannot copy {src}: connection lost")
        copy(self, src, dst)

    with mock.patch.object(objectstore.ObjectStoreFileSystem, "_copy_object", failing):
        yield


def test_a_directory_move_that_fails_half_way_leaves_no_partial_copy_and_can_be_retried(
        any_base):
    for name in ("part-0", "part-1", "sub/part-2"):
        stores.put(f"{any_base}/src/{name}", name.encode())
    with _copies_failing_at(2), pytest.raises(ObjectStoreError, match="connection lost"):
        fs.rename(f"{any_base}/src", f"{any_base}/dst")
    assert not fs.exists(f"{any_base}/dst")  # not a part of the tree where it was going
    assert fs.expand(f"{any_base}/src") == [f"{any_base}/src/{name}"
                                            for name in ("part-0", "part-1", "sub/part-2")]
    fs.rename(f"{any_base}/src", f"{any_base}/dst")  # the retry is not refused
    assert stores.get(f"{any_base}/dst/sub/part-2") == b"sub/part-2"
    assert not fs.exists(f"{any_base}/src")


def test_publish_whose_directory_move_fails_half_way_leaves_the_earlier_output(any_base):
    out = f"{any_base}/out"
    stores.put(f"{out}/train/part-0", b"old")
    with pytest.raises(ObjectStoreError, match="connection lost"):
        with fs.staging_directory(out, "test") as staging:
            for name in ("part-0", "part-1"):
                stores.put(f"{staging}/train/{name}", b"new")
            # The earlier output's move aside copies one object; the move in fails at its
            # second.
            with _copies_failing_at(3):
                fs.publish(staging, ["train"])
    assert fs.ls(out) == [f"{out}/train"]
    assert fs.expand(f"{out}/train") == [f"{out}/train/part-0"]
    assert stores.get(f"{out}/train/part-0") == b"old"
