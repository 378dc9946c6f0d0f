"""HDFS is one backend of tfrecord_io.fs: the package tfrecord_io.fs.hdfs with its few documented
names, one concern per module; the old public tfrecord_io.hdfs is gone."""

from __future__ import annotations

import inspect
import pkgutil
from pathlib import Path

import pytest

import tfrecord_io
from tfrecord_io import fs
from tfrecord_io.fs import hdfs as fs_hdfs


def test_the_documented_names_are_there():
    for name in (
        "HdfsFileSystem", "HdfsReader", "HdfsWriter", "current_user", "default_fs",
        "clear_client_cache", "CLIENT_ENV", "DEFAULT_HDFS_CLIENT",
    ):
        assert name in fs_hdfs.__all__ and hasattr(fs_hdfs, name), name
    assert fs_hdfs.CLIENT_ENV == "TFRECORD_IO_HDFS_CLIENT"
    assert fs_hdfs.DEFAULT_HDFS_CLIENT == "native"
    for name in fs_hdfs.__all__:
        assert getattr(fs_hdfs, name).__doc__ or name.isupper(), name


def test_the_old_package_is_gone():
    # Asked of the package's own directory: an editable install of another checkout could
    # still resolve the name from there.
    assert "hdfs" not in {m.name for m in pkgutil.iter_modules(tfrecord_io.__path__)}
    assert "hdfs" in {m.name for m in pkgutil.iter_modules(fs.__path__)}


def test_fs_serves_both_schemes_with_the_backend():
    assert {"hdfs", "webhdfs"} <= set(fs.protocols())
    for url in ("hdfs://nn:8020/x", "webhdfs://nn:9870/x", "hdfs:///x"):
        backend, target = fs.filesystem(url)
        assert isinstance(backend, fs_hdfs.HdfsFileSystem) and target == url
    assert fs.filesystem("/x")[0].protocols == ("file",)  # a bare path is local


def test_open_still_accepts_offset_and_read_ahead():
    params = inspect.signature(fs_hdfs.HdfsFileSystem.open).parameters
    assert list(params)[:5] == ["self", "target", "mode", "offset", "read_ahead"]
    assert params["read_ahead"].kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError, match="no_such_option"):
        fs_hdfs.HdfsFileSystem().open("hdfs://127.0.0.1:1/x", "rb", no_such_option=1)


def test_each_module_of_the_package_is_one_concern_of_at_most_400_lines():
    for module in pkgutil.iter_modules(fs_hdfs.__path__):
        path = Path(fs_hdfs.__path__[0]) / f"{module.name}.py"
        assert len(path.read_text().splitlines()) <= 400, path
