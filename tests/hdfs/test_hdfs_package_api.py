"""tfrecord_io.hdfs as a package keeps the public names of the module it was."""

from __future__ import annotations

import inspect

from tfrecord_io import hdfs


def test_every_public_name_is_still_there():
    for name in (
        "open", "ls", "glob", "stat", "exists", "makedirs", "delete", "rename",
        "FileStatus", "HdfsReader", "HdfsWriter", "current_user", "default_fs",
        "clear_client_cache", "CLIENT_ENV", "DEFAULT_HDFS_CLIENT", "HdfsError",
        "HdfsFileNotFoundError", "HdfsPermissionError", "HdfsFileExistsError",
    ):
        assert name in hdfs.__all__ and hasattr(hdfs, name), name
    assert hdfs.CLIENT_ENV == "TFRECORD_IO_HDFS_CLIENT"


def test_open_still_accepts_read_ahead():
    params = inspect.signature(hdfs.open).parameters
    assert list(params) == ["url", "mode", "offset", "read_ahead"]
    assert params["read_ahead"].kind is inspect.Parameter.KEYWORD_ONLY


def test_each_module_of_the_package_is_one_concern_of_at_most_400_lines():
    import pkgutil
    from pathlib import Path

    for module in pkgutil.iter_modules(hdfs.__path__):
        path = Path(hdfs.__path__[0]) / f"{module.name}.py"
        assert len(path.read_text().splitlines()) <= 400, path
