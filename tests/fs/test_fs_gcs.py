"""``gs://`` (tfrecord_io/fs/gcs.py) on a real GCS server (conftest.py's ``gcs``:
fake-gcs-server), configured the way Google's client libraries are
(``STORAGE_EMULATOR_HOST``); the semantics it shares with the other stores are tested in
test_fs_objectstore.py."""

from __future__ import annotations

import socket
import uuid

import pytest

from tfrecord_io import fs
from tfrecord_io.errors import ObjectStoreError
from tfrecord_io.fs.gcs import GcsFileSystem


@pytest.fixture
def base(gcs_env, gcs_bucket, request) -> str:
    """A fresh prefix of the session's bucket."""
    return f"gs://{gcs_bucket}/fs/{request.node.name}-{uuid.uuid4().hex[:8]}"


def _put(url: str, data: bytes = b"x") -> None:
    with fs.open(url, "wb") as f:
        f.write(data)


def test_subdirectories_are_listed_beside_a_directory_marker(base):
    fs.makedirs(base)  # the marker object "base/", as Hadoop's connector and gcsfuse write
    for name in ("part-0", "day=1/part-0", "day=2/hour=0/part-0"):
        _put(f"{base}/{name}")
    assert fs.ls(base) == [f"{base}/day=1", f"{base}/day=2", f"{base}/part-0"]
    assert fs.expand(base) == [f"{base}/day=1/part-0", f"{base}/day=2/hour=0/part-0",
                               f"{base}/part-0"]


def test_a_directory_renamed_keeps_its_tree(base):
    for name in ("a/x", "a/sub/y"):
        _put(f"{base}/{name}", name.encode())
    fs.rename(f"{base}/a", f"{base}/b")
    assert list(fs.walk(base)) == [(base, ["b"], []), (f"{base}/b", ["sub"], ["x"]),
                                   (f"{base}/b/sub", [], ["y"])]


def test_the_emulator_address_and_the_retry_time_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:4443")
    monkeypatch.setenv("TFRECORD_IO_GCS_RETRY_SECONDS", "5")
    settings = GcsFileSystem().settings()
    assert (settings.emulator, settings.retry_seconds) == ("http://127.0.0.1:4443", 5.0)
    monkeypatch.setenv("TFRECORD_IO_GCS_RETRY_SECONDS", "soon")
    with pytest.raises(ValueError, match="TFRECORD_IO_GCS_RETRY_SECONDS"):
        GcsFileSystem().settings()
    given = GcsFileSystem(emulator="http://127.0.0.1:9", retry_seconds=2)
    assert given.environment() == {"STORAGE_EMULATOR_HOST": "http://127.0.0.1:9",
                                   "TFRECORD_IO_GCS_RETRY_SECONDS": "2"}


def test_an_unreachable_store_fails_after_the_retry_time_naming_the_url(monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("TFRECORD_IO_GCS_RETRY_SECONDS", "1")
    with pytest.raises(ObjectStoreError, match="gs://data/part-0") as err:
        fs.stat("gs://data/part-0")
    assert "did not answer (after 1 s of retries)" in str(err.value)
