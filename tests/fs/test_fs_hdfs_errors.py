"""HDFS errors are OSErrors: callers catch FileNotFoundError, PermissionError, FileExistsError
or OSError whatever the scheme, through tfrecord_io.fs and its HDFS backend alike."""

from __future__ import annotations

import socket
import uuid

import pytest

from tfrecord_io import errors, fs

pytestmark = pytest.mark.usefixtures("no_hadoop_settings")


@pytest.fixture(params=["hdfs", "webhdfs"])
def root(request, hdfs):
    return hdfs.url if request.param == "hdfs" else hdfs.webhdfs_url


def test_the_classes_live_in_errors_and_are_os_errors():
    assert issubclass(errors.HdfsError, errors.TFRecordError)
    assert issubclass(errors.HdfsError, OSError)
    assert issubclass(errors.HdfsFileNotFoundError, FileNotFoundError)
    assert issubclass(errors.HdfsPermissionError, PermissionError)
    assert issubclass(errors.HdfsFileExistsError, FileExistsError)
    assert issubclass(errors.HdfsIsADirectoryError, IsADirectoryError)
    assert issubclass(errors.HdfsNotADirectoryError, NotADirectoryError)


def test_a_missing_path_is_a_file_not_found_error(root):
    url = f"{root}/family/absent-{uuid.uuid4().hex[:8]}"
    backend, _ = fs.filesystem(url)
    for call in (fs.open, fs.stat, fs.ls, fs.delete, backend.stat, backend.ls):
        with pytest.raises(FileNotFoundError) as err:
            call(url)
        assert isinstance(err.value, errors.HdfsFileNotFoundError) and url in str(err.value)


def test_a_denied_path_is_a_permission_error_naming_the_user(root, hdfs, monkeypatch):
    private = f"/family/private-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HADOOP_USER_NAME", hdfs.superuser)
    with fs.open(f"{root}{private}/secret", "wb") as f:
        f.write(b"secret")
    import hdfs_native

    hdfs_native.Client(hdfs.url).set_permission(private, 0o700)
    monkeypatch.setenv("HADOOP_USER_NAME", "mallory")
    for call in (
        lambda: fs.open(f"{root}{private}/secret"),
        lambda: fs.ls(f"{root}{private}"),
        lambda: fs.expand(f"{root}{private}"),
    ):
        with pytest.raises(PermissionError) as err:
            call()
        assert isinstance(err.value, errors.HdfsPermissionError)
        assert "'mallory'" in str(err.value) and private in str(err.value)


def test_opening_a_directory_to_read_is_an_is_a_directory_error(root):
    base = f"{root}/family/dir-{uuid.uuid4().hex[:8]}"
    fs.makedirs(f"{base}/d")
    with pytest.raises(IsADirectoryError, match=f"{base}/d") as err:
        fs.open(f"{base}/d", "rb")
    assert isinstance(err.value, errors.HdfsIsADirectoryError)


def test_writing_over_a_directory_is_an_is_a_directory_error(root):
    base = f"{root}/family/dir-{uuid.uuid4().hex[:8]}"
    fs.makedirs(f"{base}/d")
    with pytest.raises(IsADirectoryError, match=f"{base}/d"):
        with fs.open(f"{base}/d", "wb") as f:
            f.write(b"x")
    assert fs.stat(f"{base}/d").is_dir


@pytest.mark.parametrize("below", ["g", "g/h"])
def test_a_directory_under_a_file_is_a_not_a_directory_error_naming_the_file(root, below):
    base = f"{root}/family/file-{uuid.uuid4().hex[:8]}"
    with fs.open(f"{base}/f", "wb") as f:
        f.write(b"a file")
    with pytest.raises(NotADirectoryError, match=f"{base}/f is a file") as err:
        fs.makedirs(f"{base}/f/{below}")
    assert isinstance(err.value, errors.HdfsNotADirectoryError)


@pytest.mark.parametrize("below", ["x", "x/y"])
def test_a_file_under_a_file_is_a_not_a_directory_error_naming_the_file(root, below):
    base = f"{root}/family/file-{uuid.uuid4().hex[:8]}"
    with fs.open(f"{base}/f", "wb") as f:
        f.write(b"a file")
    with pytest.raises(NotADirectoryError, match=f"{base}/f is a file") as err:
        with fs.open(f"{base}/f/{below}", "wb") as f:  # WebHDFS: at close
            f.write(b"record")
    assert isinstance(err.value, errors.HdfsNotADirectoryError)
    assert fs.open(f"{base}/f").read() == b"a file"


def test_renaming_under_a_file_is_a_not_a_directory_error_naming_the_file(root):
    base = f"{root}/family/file-{uuid.uuid4().hex[:8]}"
    for name in ("f", "src"):
        with fs.open(f"{base}/{name}", "wb") as f:
            f.write(name.encode())
    with pytest.raises(NotADirectoryError, match=f"{base}/f"):
        fs.rename(f"{base}/src", f"{base}/f/src")
    assert fs.open(f"{base}/src").read() == b"src"


def test_an_existing_path_is_a_file_exists_error(root):
    base = f"{root}/family/exists-{uuid.uuid4().hex[:8]}"
    with fs.open(f"{base}/f", "wb"):
        pass
    with pytest.raises(FileExistsError) as err:
        fs.makedirs(f"{base}/f")
    assert isinstance(err.value, errors.HdfsFileExistsError)
    fs.makedirs(f"{base}/d")
    with pytest.raises(FileExistsError):
        fs.rename(f"{base}/f", f"{base}/d")


@pytest.mark.parametrize("scheme", ["hdfs", "webhdfs"])
def test_an_unreachable_namenode_is_an_os_error(scheme):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(OSError) as err:
        fs.stat(f"{scheme}://127.0.0.1:{port}/x")
    assert isinstance(err.value, errors.HdfsError) and f"127.0.0.1:{port}" in str(err.value)
