"""``az://`` and ``abfs[s]://`` (tfrecord_io/fs/azure.py) on a real Azure Blob server
(conftest.py's ``azurite``: Azurite's blob service, every request signed with the account's
key), configured the way Azure's tools are; the semantics it shares with the other stores are
tested in test_fs_objectstore.py."""

from __future__ import annotations

import base64
import errno
import gzip
import hashlib
import hmac
import os
import threading
import uuid
from urllib.parse import parse_qs, quote, urlencode

import pytest

from tfrecord_io import fs
from tfrecord_io.errors import ObjectStoreError, ObjectStorePermissionError
from tfrecord_io.fs.azure import AzureFileSystem
from tfrecord_io.fs.objectstore import ObjectStoreFileSystem
from tfrecord_io.testing.azurite import AzuriteServer


@pytest.fixture
def key(azure_env, azure_container, request) -> str:
    """A fresh key prefix of the session's container."""
    return f"fs/{request.node.name}-{uuid.uuid4().hex[:8]}"


def _put(url: str, data: bytes) -> None:
    with fs.open(url, "wb") as f:
        f.write(data)


def _get(url: str) -> bytes:
    with fs.open(url) as f:
        return f.read()


def test_abfs_urls_name_the_account_and_reach_the_objects_of_az_urls(azurite, azure_container,
                                                                    key):
    _put(f"az://{azure_container}/{key}/part-0", b"written as az://")
    abfs = f"abfs://{azure_container}@{azurite.account_name}.dfs.core.windows.net/{key}"
    assert _get(f"{abfs}/part-0") == b"written as az://"
    assert fs.ls(abfs) == [f"{abfs}/part-0"]
    _put(f"{abfs}/part-1", b"written as abfs://")
    assert _get(f"abfss://{azure_container}/{key}/part-1") == b"written as abfs://"


def test_directories_that_hadoop_marks_with_an_empty_blob_are_directories(azurite,
                                                                          azure_container, key):
    # Hadoop's ABFS (and WASB) make each directory of a flat-namespace account an empty blob
    # with hdi_isfolder=true beside the blobs under it, as Spark's writes through ABFS leave.
    marker = {"hdi_isfolder": "true"}
    azurite.put_blob(azure_container, f"{key}/out", b"", marker)
    azurite.put_blob(azure_container, f"{key}/out/part-0", b"data")
    azurite.put_blob(azure_container, f"{key}/out/empty", b"", marker)
    azurite.put_blob(azure_container, f"{key}/out/zero-length-file", b"")
    base = f"az://{azure_container}/{key}"
    assert fs.stat(f"{base}/out").is_dir
    assert fs.ls(base) == [f"{base}/out"]  # once, though listed as a blob and as a prefix
    assert sorted(fs.ls(f"{base}/out")) == [f"{base}/out/{n}"
                                            for n in ("empty", "part-0", "zero-length-file")]
    assert fs.stat(f"{base}/out/empty").is_dir and fs.ls(f"{base}/out/empty") == []
    assert not fs.stat(f"{base}/out/zero-length-file").is_dir
    assert fs.expand(f"{base}/out") == [f"{base}/out/part-0", f"{base}/out/zero-length-file"]
    fs.makedirs(f"{base}/out/more/deeper")  # under Hadoop's marker: marked as Hadoop marks
    assert fs.stat(f"{base}/out/more").is_dir and fs.stat(f"{base}/out/more/deeper").is_dir
    _put(f"{base}/out/more/deeper/part-1", b"more")
    assert fs.ls(f"{base}/out/more/deeper") == [f"{base}/out/more/deeper/part-1"]
    with pytest.raises(FileExistsError):
        fs.makedirs(f"{base}/out/part-0/below-a-file")
    fs.replace(f"{base}/out/more/deeper/part-1", f"{base}/out/part-2")  # a copy below a marker
    assert _get(f"{base}/out/part-2") == b"more" and not fs.exists(f"{base}/out/more/deeper/part-1")


def test_directories_marked_as_hadoop_marks_them_are_deleted_with_their_markers(
        azurite, azure_container, key):
    azurite.put_blob(azure_container, f"{key}/out", b"", {"hdi_isfolder": "true"})
    azurite.put_blob(azure_container, f"{key}/out/part-0", b"data")
    base = f"az://{azure_container}/{key}"
    fs.makedirs(f"{base}/out/staging/sub")  # below Hadoop's marker: marked as Hadoop marks
    _put(f"{base}/out/staging/sub/x", b"x")
    fs.rename(f"{base}/out/staging/sub", f"{base}/out/sub")  # a copy, then the source deleted
    assert fs.ls(f"{base}/out/staging") == []
    fs.delete(f"{base}/out/staging", recursive=False)
    assert fs.ls(f"{base}/out") == [f"{base}/out/part-0", f"{base}/out/sub"]
    fs.delete(f"{base}/out", recursive=True)
    assert not fs.exists(f"{base}/out") and fs.ls(base) == []
    with pytest.raises(FileNotFoundError, match=f"{base}/out"):
        fs.delete(f"{base}/out", recursive=True)


def test_a_reader_sees_the_old_blob_or_the_new_one_never_an_empty_one(azure_container, key):
    url = f"az://{azure_container}/{key}/model.bin"
    old, new = b"old" * 1000, os.urandom(48 << 20)
    _put(url, old)
    seen, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            seen.add(fs.stat(url).size)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        _put(url, new)
    finally:
        done.set()
        watcher.join()
    assert seen <= {len(old), len(new)} and len(old) in seen
    assert _get(url) == new
    assert fs.ls(f"az://{azure_container}/{key}") == [url]  # the hidden upload is gone


def test_a_failed_replacement_leaves_the_blob_as_it_was_and_no_upload_behind(azure_container,
                                                                             key, monkeypatch):
    url = f"az://{azure_container}/{key}/model.bin"
    _put(url, b"old")

    def copy_fails(self, src, dst):
        raise OSError(5, "the copy failed")

    with monkeypatch.context() as patched:
        patched.setattr(ObjectStoreFileSystem, "_copy_object", copy_fails)
        with pytest.raises(OSError, match="the copy failed"):
            _put(url, b"new")
    assert _get(url) == b"old"
    assert fs.ls(f"az://{azure_container}/{key}") == [url]


def test_a_copy_below_a_hadoop_marker_keeps_its_bytes_and_leaves_no_part_when_it_fails(
        azurite, azure_container, key, monkeypatch):
    azurite.put_blob(azure_container, f"{key}/out", b"", {"hdi_isfolder": "true"})
    base = f"az://{azure_container}/{key}/out"
    fs.makedirs(f"{base}/staging")  # below Hadoop's marker: pyarrow refuses copies there
    compressed = gzip.compress(b"record bytes " * 100)
    _put(f"{base}/staging/part-0.gz", compressed)
    fs.replace(f"{base}/staging/part-0.gz", f"{base}/part-0.gz")
    assert _get(f"{base}/part-0.gz") == compressed  # not decompressed on the way
    _put(f"{base}/staging/part-1", os.urandom(20 << 20))
    call = AzureFileSystem._call

    class BreakingSource:  # the source stream breaks at its second block
        def __init__(self, stream):
            self._stream, self._reads = stream, 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._stream.close()

        def read(self, n):
            self._reads += 1
            if self._reads == 2:
                raise OSError(5, "the source broke")
            return self._stream.read(n)

    class Client:
        def __init__(self, client):
            self._client = client

        def open_input_stream(self, *args, **kwargs):
            return BreakingSource(self._client.open_input_stream(*args, **kwargs))

        def __getattr__(self, name):
            return getattr(self._client, name)

    def breaking_copies(self, url, what, fn):
        return call(self, url, what, lambda c: fn(Client(c) if what == "copy" else c))

    with monkeypatch.context() as patched:
        patched.setattr(AzureFileSystem, "_call", breaking_copies)
        with pytest.raises(OSError, match="the source broke"):
            fs.rename(f"{base}/staging/part-1", f"{base}/part-1")
    assert not fs.exists(f"{base}/part-1")


def test_a_connection_string_configures_the_account_alone(azurite, azure_container, key,
                                                          monkeypatch):
    _put(f"az://{azure_container}/{key}/data", b"x")
    for name in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY",
                 "AZURE_STORAGE_BLOB_ENDPOINT"):
        monkeypatch.delenv(name)
    monkeypatch.setenv(
        "AZURE_STORAGE_CONNECTION_STRING",
        f"DefaultEndpointsProtocol=http;AccountName={azurite.account_name};"
        f"AccountKey={azurite.account_key};BlobEndpoint={azurite.endpoint_url};")
    assert _get(f"az://{azure_container}/{key}/data") == b"x"
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING",
                       f"UseDevelopmentStorage=true;BlobEndpoint={azurite.endpoint_url}")
    assert _get(f"az://{azure_container}/{key}/data") == b"x"


def test_a_wrong_key_is_a_permission_error_naming_the_url_and_the_setting(azure_container, key,
                                                                          monkeypatch):
    url = f"az://{azure_container}/{key}/data"
    _put(url, b"x")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "AAAA" + "B" * 84)
    for op in (lambda: fs.open(url), lambda: fs.stat(url), lambda: _put(url, b"y")):
        with pytest.raises(ObjectStorePermissionError, match=f"access denied to {url}") as err:
            op()
        assert isinstance(err.value, PermissionError)
        assert "AZURE_STORAGE_ACCOUNT_KEY" in str(err.value)


def _account_sas(account: str, key: str, permissions: str) -> str:
    """An account SAS token (blob service; service, container and object resources), signed
    with the account's *key* as Azure's SDKs sign one (service version 2022-11-02)."""
    fields = {"sv": "2022-11-02", "ss": "b", "srt": "sco", "sp": permissions,
              "se": "2099-01-01T00:00:00Z", "spr": "https,http"}
    signed = "\n".join([account, fields["sp"], fields["ss"], fields["srt"], "", fields["se"], "",
                        fields["spr"], fields["sv"], "", ""])
    digest = hmac.new(base64.b64decode(key), signed.encode(), hashlib.sha256).digest()
    fields["sig"] = base64.b64encode(digest).decode()
    return urlencode(fields)


@pytest.mark.parametrize("question_mark", ["", "?"], ids=["bare", "with-question-mark"])
def test_a_sas_token_reads_and_writes_as_the_account_key_does(azurite, azure_container, key,
                                                              monkeypatch, question_mark):
    url = f"az://{azure_container}/{key}/data"
    token = _account_sas(azurite.account_name, azurite.account_key, "rwdlac")
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY")
    monkeypatch.setenv("AZURE_STORAGE_SAS_TOKEN", question_mark + token)
    _put(url, b"signed by a SAS")
    assert _get(url) == b"signed by a SAS"
    assert fs.ls(f"az://{azure_container}/{key}") == [url]


def test_an_error_does_not_show_the_sas_token(azurite, azure_container, key, monkeypatch):
    token = _account_sas(azurite.account_name, azurite.account_key, "r")  # no write
    signature = parse_qs(token)["sig"][0]
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY")
    monkeypatch.setenv("AZURE_STORAGE_SAS_TOKEN", token)
    url = f"az://{azure_container}/{key}/refused"
    with pytest.raises(OSError, match=url) as err:
        _put(url, b"x")
    assert signature not in str(err.value) and quote(signature, safe="") not in str(err.value)


def test_a_move_to_another_account_is_refused_before_anything_moves(azure_container, key):
    url = f"az://{azure_container}/{key}/data"
    _put(url, b"stays")
    elsewhere = f"abfs://{azure_container}@otheraccount.dfs.core.windows.net/{key}/data"
    for move in (fs.rename, fs.replace):
        with pytest.raises(ObjectStoreError, match="different accounts") as err:
            move(url, elsewhere)
        assert err.value.errno == errno.EXDEV
    assert _get(url) == b"stays"


def test_an_az_url_without_a_configured_account_says_what_to_set(monkeypatch):
    for name in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_CONNECTION_STRING"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ObjectStoreError, match="AZURE_STORAGE_ACCOUNT_NAME"):
        fs.stat("az://data/part-0")


def test_what_a_registered_file_system_was_given_replaces_the_environment(monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "fromenv")
    monkeypatch.setenv("AZURE_STORAGE_SAS_TOKEN", "sv=token")
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY", raising=False)
    given = AzureFileSystem(account_name="given", account_key="c2VjcmV0",
                            blob_endpoint="http://127.0.0.1:10000/given")
    settings = given.settings()
    assert (settings.account_name, settings.blob_endpoint) == ("given", "http://127.0.0.1:10000")
    assert "c2VjcmV0" not in repr(settings)
    env = given.environment()
    assert env["AZURE_STORAGE_ACCOUNT_NAME"] == "given"
    assert env["AZURE_STORAGE_ACCOUNT_KEY"] == "c2VjcmV0"
    assert env["AZURE_STORAGE_SAS_TOKEN"] == "sv=token"


def test_a_stopped_server_is_an_error_naming_the_url(monkeypatch):
    with AzuriteServer() as server:
        server.create_container("short-lived")
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        url = "az://short-lived/data"
        _put(url, b"x" * 1000)
        server.kill()
        with pytest.raises(ObjectStoreError, match=url) as err:
            fs.stat(url)
        assert "did not answer" in str(err.value)
