"""The test GCS server itself (tfrecord_io.testing.gcs: fake-gcs-server, the session's ``gcs``
fixture): pyarrow's GCS client works against it, the environment it gives is enough to reach
it, a missing program is named, and where its program is found. Its life (a taken port, kill,
stop) is that of every emulator: tests/testing/test_emulator.py."""

from __future__ import annotations

import datetime
import os
import uuid

import pytest

from tfrecord_io.testing.gcs import (
    FAKE_GCS_SERVER_ENV,
    GcsServer,
    GcsServerError,
    find_fake_gcs_server,
)


@pytest.fixture
def prefix(gcs_bucket, request):
    """A fresh prefix of the session's bucket, as pyarrow names it (``bucket/...``)."""
    return f"{gcs_bucket}/server/{request.node.name}-{uuid.uuid4().hex[:8]}"


def test_pyarrow_writes_reads_ranges_lists_and_copies(gcs, gcs_bucket, prefix):
    import pyarrow.fs

    fs = gcs.filesystem()
    data = os.urandom(9 * 1024 * 1024 + 17)  # more than one chunk of a resumable upload
    with fs.open_output_stream(f"{prefix}/big.bin") as f:
        f.write(data)
    with fs.open_output_stream(f"{prefix}/sub/empty"):
        pass
    with fs.open_input_file(f"{prefix}/big.bin") as f:
        assert f.size() == len(data)
        assert f.read_at(100, 5_000_000) == data[5_000_000:5_000_100]
        assert f.read_at(1000, len(data) - 10) == data[-10:]
    fs.copy_file(f"{prefix}/big.bin", f"{prefix}/copy.bin")
    fs.delete_file(f"{prefix}/big.bin")
    listed = {i.path: i.size for i in fs.get_file_info(pyarrow.fs.FileSelector(prefix,
                                                                               recursive=True))}
    assert listed == {f"{prefix}/copy.bin": len(data), f"{prefix}/sub/empty": 0}
    # The same objects, as the server lists them (its JSON API, not pyarrow).
    name = prefix.split("/", 1)[1]
    assert gcs.list_objects(gcs_bucket, name) == {f"{name}/copy.bin": len(data),
                                                  f"{name}/sub/empty": 0}
    assert gcs.get_object(gcs_bucket, f"{name}/copy.bin") == data


def test_its_environment_is_enough(gcs, gcs_bucket, prefix):
    import pyarrow.fs

    assert gcs.environment() == {"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{gcs.port}"}
    scheme, authority = gcs.environment()["STORAGE_EMULATOR_HOST"].split("://", 1)
    fs = pyarrow.fs.GcsFileSystem(anonymous=True, scheme=scheme, endpoint_override=authority,
                                  project_id="test",
                                  retry_time_limit=datetime.timedelta(seconds=5))
    name = prefix.split("/", 1)[1]
    gcs.put_object(gcs_bucket, f"{name}/a.txt", b"written by the JSON API")
    with fs.open_input_stream(f"{prefix}/a.txt") as f:
        assert f.read() == b"written by the JSON API"
    assert gcs.create_bucket("another-bucket") == "gs://another-bucket"
    assert fs.get_file_info("another-bucket").type == pyarrow.fs.FileType.Directory


def test_a_missing_program_says_to_run_make_setup(monkeypatch, tmp_path):
    monkeypatch.setenv(FAKE_GCS_SERVER_ENV, str(tmp_path / "fake-gcs-server"))
    with pytest.raises(GcsServerError, match=r"missing or not executable: run `make setup`"):
        GcsServer().start()

    monkeypatch.delenv(FAKE_GCS_SERVER_ENV)
    monkeypatch.setattr("tfrecord_io.testing.classpaths.TOOLS", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    server = GcsServer()
    with pytest.raises(GcsServerError, match=r"is not installed: run `make setup`"):
        server.start()
    assert server.base_dir is None and not server.running


def test_the_program_is_found_from_the_environment_then_tools_then_path(monkeypatch, tmp_path):
    tools, on_path = tmp_path / "tools", tmp_path / "path"
    for directory in (tools / "bin", on_path):
        directory.mkdir(parents=True)
        (directory / "fake-gcs-server").write_text("#!/bin/sh\n")
        (directory / "fake-gcs-server").chmod(0o755)
    monkeypatch.setattr("tfrecord_io.testing.classpaths.TOOLS", tools)
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.setenv(FAKE_GCS_SERVER_ENV, "/somewhere/fake-gcs-server")
    assert str(find_fake_gcs_server()) == "/somewhere/fake-gcs-server"
    monkeypatch.delenv(FAKE_GCS_SERVER_ENV)
    assert find_fake_gcs_server() == tools / "bin" / "fake-gcs-server"
    (tools / "bin" / "fake-gcs-server").unlink()
    assert find_fake_gcs_server() == on_path / "fake-gcs-server"
