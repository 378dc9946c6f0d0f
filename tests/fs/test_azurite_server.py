"""The test Azure Blob server itself (tfrecord_io.testing.azurite: Azurite's blob service, the
session's ``azurite`` fixture): pyarrow's Azure client works against it, it checks the account
key, the environment it gives is enough to reach it, and a missing program is named. Its life (a
taken port, kill, stop) is that of every emulator: tests/testing/test_emulator.py."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
import uuid

import pytest

from tfrecord_io.testing.azurite import AZURITE_ENV, AzuriteError, AzuriteServer


@pytest.fixture
def prefix(azure_container, request):
    """A fresh prefix of the session's container, as pyarrow names it (``container/...``)."""
    return f"{azure_container}/server/{request.node.name}-{uuid.uuid4().hex[:8]}"


def _filesystem_from(environment: dict[str, str], key: str | None = None):
    """pyarrow's Azure file system from the three settings alone, as a client reads them."""
    import pyarrow.fs

    scheme, authority = environment["AZURE_STORAGE_BLOB_ENDPOINT"].split("://", 1)
    return pyarrow.fs.AzureFileSystem(
        account_name=environment["AZURE_STORAGE_ACCOUNT_NAME"],
        account_key=key or environment["AZURE_STORAGE_ACCOUNT_KEY"],
        blob_storage_authority=authority, blob_storage_scheme=scheme,
        dfs_storage_authority=authority, dfs_storage_scheme=scheme)


def test_pyarrow_writes_reads_ranges_and_lists(azurite, azure_container, prefix):
    import pyarrow.fs

    fs = azurite.filesystem()
    data = os.urandom(9 * 1024 * 1024 + 17)  # more than one staged block
    with fs.open_output_stream(f"{prefix}/big.bin") as f:
        f.write(data)
    with fs.open_output_stream(f"{prefix}/sub/empty"):
        pass
    with fs.open_input_file(f"{prefix}/big.bin") as f:
        assert f.size() == len(data)
        assert f.read_at(100, 5_000_000) == data[5_000_000:5_000_100]
        assert f.read_at(1000, len(data) - 10) == data[-10:]
    listed = {i.path: i.size for i in fs.get_file_info(pyarrow.fs.FileSelector(prefix,
                                                                               recursive=True))}
    assert listed == {f"{prefix}/big.bin": len(data), f"{prefix}/sub": None,
                      f"{prefix}/sub/empty": 0}
    # The same blobs, as the server lists them (its REST API, not pyarrow).
    name = prefix.split("/", 1)[1]
    assert azurite.list_blobs(azure_container, name) == {f"{name}/big.bin": len(data),
                                                          f"{name}/sub/empty": 0}
    assert azurite.get_blob(azure_container, f"{name}/big.bin") == data


def test_its_environment_is_enough_and_only_its_key_is_taken(azurite, azure_container, prefix):
    environment = azurite.environment()
    assert environment == {
        "AZURE_STORAGE_ACCOUNT_NAME": "devstoreaccount1",
        "AZURE_STORAGE_ACCOUNT_KEY": azurite.account_key,
        "AZURE_STORAGE_BLOB_ENDPOINT": f"http://127.0.0.1:{azurite.port}",
    }
    assert azurite.endpoint_url == f"http://127.0.0.1:{azurite.port}/devstoreaccount1"
    name = prefix.split("/", 1)[1]
    azurite.put_blob(azure_container, f"{name}/a.txt", b"written by the REST API")
    with _filesystem_from(environment).open_input_stream(f"{prefix}/a.txt") as f:
        assert f.read() == b"written by the REST API"

    wrong_key = "A" * 86 + "=="
    with pytest.raises(OSError, match="AuthorizationFailure|403"):
        _filesystem_from(environment, wrong_key).get_file_info(f"{prefix}/a.txt")
    unsigned = urllib.request.Request(f"{azurite.endpoint_url}/{azure_container}/{name}/a.txt")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(unsigned, timeout=10)
    assert refused.value.code == 403


def test_a_missing_program_says_to_run_make_setup(monkeypatch, tmp_path):
    monkeypatch.setenv(AZURITE_ENV, str(tmp_path / "azurite-blob"))
    with pytest.raises(AzuriteError, match=r"missing or not executable: run `make setup`"):
        AzuriteServer().start()

    monkeypatch.delenv(AZURITE_ENV)
    monkeypatch.setattr("tfrecord_io.testing.classpaths.TOOLS", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    server = AzuriteServer()
    with pytest.raises(AzuriteError, match=r"Azurite is not installed: run `make setup`"):
        server.start()
    assert server.base_dir is None and not server.running
