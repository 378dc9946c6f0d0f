"""One file system layer: tfrecord_io.fs behaves the same on every remote store it serves, on
the real servers the test session starts: ``hdfs://`` and ``webhdfs://`` (conftest.py's
``hdfs``), ``s3://`` (``s3``: moto's, every request signed), ``az://`` (``azurite``) and
``gs://`` (``gcs``), each configured the way its own clients are. What only one store does (its
settings, its errors, its costs) is tested beside it: test_fs_hdfs.py, test_fs_s3.py,
test_fs_objectstore.py; local paths in test_fs_local.py."""

from __future__ import annotations

import time
import uuid

import pytest
import stores

from tfrecord_io import fs
from tfrecord_io.errors import InputNotFoundError
from tfrecord_io.fs import operations

pytestmark = pytest.mark.usefixtures("no_hadoop_settings")


@pytest.fixture(params=stores.params())
def base(request) -> str:
    """A fresh directory URL of one store, nothing in it (only that store's server is
    started)."""
    url = f"{stores.root(request, request.param)}/fs-stores/{request.node.name.split('[')[0]}-"
    url += uuid.uuid4().hex[:8]
    fs.makedirs(url)
    return url


def test_open_stat_and_exists(base):
    stores.put(f"{base}/d/f.bin", b"hello store")  # the parents are made as needed
    assert stores.get(f"{base}/d/f.bin") == b"hello store"
    with fs.open(f"{base}/d/t.txt", "w") as f:
        f.write("text \u00fc\n")
    with fs.open(f"{base}/d/t.txt") as f:
        assert f.read() == "text \u00fc\n".encode()
    info = fs.stat(f"{base}/d/f.bin")
    assert (info.url, info.size, info.is_dir) == (f"{base}/d/f.bin", 11, False)
    assert abs(info.mtime - time.time()) < 120
    assert fs.isdir(f"{base}/d") and fs.isdir(f"{base}/d/") and fs.exists(f"{base}/d/f.bin")
    assert not fs.exists(f"{base}/d/nope") and not fs.isdir(f"{base}/d/f.bin")
    stores.put(f"{base}/empty")
    assert stores.get(f"{base}/empty") == b"" and fs.stat(f"{base}/empty").size == 0


def test_ls_glob_and_walk(base):
    for name in ("b/part-1", "b/part-0", "a/part-0", "_SUCCESS", "top"):
        stores.put(f"{base}/{name}", b"xy")
    assert fs.ls(base) == [f"{base}/{n}" for n in ("_SUCCESS", "a", "b", "top")]
    assert fs.ls(base + "/") == fs.ls(base)
    root = base.split("/fs-stores/")[0]
    assert f"{root}/fs-stores" in fs.ls(root) and base in fs.ls(f"{root}/fs-stores")
    assert [(e.url, e.size, e.is_dir) for e in fs.ls(f"{base}/b", detail=True)] == [
        (f"{base}/b/part-0", 2, False), (f"{base}/b/part-1", 2, False)]
    assert fs.glob(f"{base}/*/part-?") == [f"{base}/a/part-0", f"{base}/b/part-0",
                                           f"{base}/b/part-1"]
    assert fs.glob(f"{base}/*", skip_hidden=True) == [f"{base}/a", f"{base}/b", f"{base}/top"]
    assert fs.glob(f"{base}/missing/*") == []
    assert list(fs.walk(base)) == [
        (base, ["a", "b"], ["_SUCCESS", "top"]),
        (f"{base}/a", [], ["part-0"]),
        (f"{base}/b", [], ["part-0", "part-1"]),
    ]
    with pytest.raises(FileNotFoundError, match=f"{base}/nothing"):
        fs.ls(f"{base}/nothing")


def test_expand_lists_data_files_as_hadoop_does(base):
    for name, size in (("part-1", 3), ("part-0", 1), ("_SUCCESS", 0), ("_temporary/0/part-9", 2),
                       ("day=1/part-0", 4), (".part-0.crc", 2)):
        stores.put(f"{base}/{name}", b"x" * size)
    found = fs.expand(base, detail=True)
    assert [(i.url, i.size) for i in found] == [
        (f"{base}/day=1/part-0", 4), (f"{base}/part-0", 1), (f"{base}/part-1", 3)
    ]
    assert fs.expand([f"{base}/part-*", f"{base}/part-0"]) == [f"{base}/part-0", f"{base}/part-1"]
    with pytest.raises(FileNotFoundError, match=f"{base}/absent"):
        fs.expand(f"{base}/absent")
    with pytest.raises(InputNotFoundError, match="no file matches"):
        fs.expand(f"{base}/*.parquet")


def test_makedirs_rename_replace_and_delete(base):
    fs.makedirs(f"{base}/empty/sub")
    assert fs.isdir(f"{base}/empty/sub") and fs.ls(f"{base}/empty/sub") == []
    stores.put(f"{base}/a", b"A")
    stores.put(f"{base}/b", b"B")
    with pytest.raises(FileExistsError):
        fs.makedirs(f"{base}/a")
    with pytest.raises(FileExistsError):
        fs.rename(f"{base}/a", f"{base}/b")
    fs.replace(f"{base}/a", f"{base}/b")
    assert stores.get(f"{base}/b") == b"A" and not fs.exists(f"{base}/a")
    fs.rename(f"{base}/b", f"{base}/c")
    assert stores.get(f"{base}/c") == b"A" and not fs.exists(f"{base}/b")
    with pytest.raises(FileNotFoundError, match=f"{base}/b"):
        fs.rename(f"{base}/b", f"{base}/d")
    for name in ("tree/x", "tree/sub/y", "tree/sub/deeper/z"):
        stores.put(f"{base}/{name}", name.encode())
    fs.rename(f"{base}/tree", f"{base}/moved")
    assert not fs.exists(f"{base}/tree")
    assert [(d, f) for _, d, f in fs.walk(f"{base}/moved")] == [
        (["sub"], ["x"]), (["deeper"], ["y"]), ([], ["z"])]
    assert stores.get(f"{base}/moved/sub/deeper/z") == b"tree/sub/deeper/z"
    with pytest.raises(OSError, match="not empty"):
        fs.delete(f"{base}/moved")
    fs.delete(f"{base}/moved", recursive=True)
    fs.delete(f"{base}/c")
    with pytest.raises(FileNotFoundError):
        fs.delete(f"{base}/c")
    fs.delete(f"{base}/empty/sub")
    assert not fs.exists(f"{base}/moved") and not fs.exists(f"{base}/empty/sub")
    assert fs.ls(base) == [f"{base}/empty"]


def test_a_directory_cannot_move_into_itself_and_stays_whole(base):
    for name in ("tree/x", "tree/sub/y"):
        stores.put(f"{base}/{name}", name.encode())
    with pytest.raises(OSError, match=f"{base}/tree"):
        fs.rename(f"{base}/tree", f"{base}/tree/sub/moved")
    assert [(d, f) for _, d, f in fs.walk(f"{base}/tree")] == [(["sub"], ["x"]), ([], ["y"])]
    assert stores.get(f"{base}/tree/sub/y") == b"tree/sub/y"


def test_replacing_a_file_by_itself_keeps_it(base):
    stores.put(f"{base}/same", b"kept")
    fs.replace(f"{base}/same", f"{base}/same")
    assert stores.get(f"{base}/same") == b"kept"


def test_replace_of_a_missing_file_fails_naming_it_and_keeps_the_target(base):
    stores.put(f"{base}/target", b"old")
    with pytest.raises(FileNotFoundError, match=f"{base}/absent"):
        fs.replace(f"{base}/absent", f"{base}/target")
    assert stores.get(f"{base}/target") == b"old"


def test_atomic_write_and_staging_directory_leave_nothing_when_they_fail(base):
    stores.put(f"{base}/kept", b"old")
    with pytest.raises(RuntimeError, match="writer failed"):
        with fs.atomic_write(f"{base}/kept") as f:
            f.write(b"new")
            raise RuntimeError("writer failed")
    with pytest.raises(RuntimeError, match="conversion failed"):
        with fs.staging_directory(f"{base}/out", "test") as staging:
            stores.put(f"{staging}/part-0", b"data")
            raise RuntimeError("conversion failed")
    assert fs.ls(base) == [f"{base}/kept"] and stores.get(f"{base}/kept") == b"old"
    with fs.staging_directory(f"{base}/out", "test") as staging:
        stores.put(f"{staging}/set/part-0", b"data")
        fs.rename(f"{staging}/set", f"{base}/out/set")
    assert fs.ls(f"{base}/out") == [f"{base}/out/set"]


def test_publish_replaces_the_outputs_of_an_earlier_run_all_of_them(base):
    stores.put(f"{base}/out/train/part-0", b"old")
    stores.put(f"{base}/out/test/part-0", b"old test")
    stores.put(f"{base}/out/labels.txt", b"old labels")
    with fs.staging_directory(f"{base}/out", "test") as staging:
        stores.put(f"{staging}/train/part-0", b"new")
        stores.put(f"{staging}/labels.txt", b"new labels")
        fs.publish(staging, ["train", "labels.txt"], replacing=["test"])
    assert fs.ls(f"{base}/out") == [f"{base}/out/{name}" for name in ("labels.txt", "train")]
    assert stores.get(f"{base}/out/train/part-0") == b"new"
    assert stores.get(f"{base}/out/labels.txt") == b"new labels"


def test_publish_that_fails_leaves_the_outputs_of_the_earlier_run(base, monkeypatch):
    stores.put(f"{base}/out/train/part-0", b"old")
    stores.put(f"{base}/out/labels.txt", b"old labels")
    rename = operations.rename

    def failing(source, target):  # the last move in fails: a full disk, a lost connection
        if target == f"{base}/out/labels.txt" and "/.tfrecord-io-test-" in source:
            raise OSError("no space left")
        rename(source, target)

    monkeypatch.setattr(operations, "rename", failing)
    with pytest.raises(OSError, match="no space left"):
        with fs.staging_directory(f"{base}/out", "test") as staging:
            stores.put(f"{staging}/train/part-0", b"new")
            stores.put(f"{staging}/labels.txt", b"new labels")
            fs.publish(staging, ["train", "labels.txt"])
    assert fs.ls(f"{base}/out") == [f"{base}/out/{name}" for name in ("labels.txt", "train")]
    assert stores.get(f"{base}/out/train/part-0") == b"old"
    assert stores.get(f"{base}/out/labels.txt") == b"old labels"


def test_a_directory_is_neither_read_nor_overwritten_as_a_file_and_stays_whole(base):
    stores.put(f"{base}/d/part-0", b"kept")
    for mode in ("rb", "wb"):
        with pytest.raises(OSError, match=f"{base}/d.*directory|directory.*{base}/d"):
            fs.open(f"{base}/d", mode)
    assert fs.isdir(f"{base}/d")
    assert fs.ls(f"{base}/d") == [f"{base}/d/part-0"]
    assert stores.get(f"{base}/d/part-0") == b"kept"
