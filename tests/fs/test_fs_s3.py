"""tfrecord_io.fs on a real S3-compatible server (conftest.py's ``s3``: moto's server, every
request signed), configured the standard AWS way (``s3_env``: AWS_ENDPOINT_URL_S3, the key,
the region); and what happens when the server is wrong, silent or gone. What every store does
alike (open, stat, list, glob, walk, expand, makedirs, rename, replace, delete) is in
test_fs_stores.py."""

from __future__ import annotations

import gc
import os
import re
import socket
import tempfile
import threading
import time
import uuid

import pytest
import stores

from tfrecord_io import fs
from tfrecord_io.errors import (
    BucketNotFoundError,
    ObjectStoreError,
    ObjectStoreFileNotFoundError,
    ObjectStorePermissionError,
    UnsupportedOperationError,
)
from tfrecord_io.fs.s3 import S3FileSystem
from tfrecord_io.testing.s3 import RecordedRequest, S3Server


@pytest.fixture
def base(s3_env, s3_bucket, request):
    """A fresh prefix of the session's bucket (nothing there yet)."""
    return f"s3://{s3_bucket}/fs/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def staging(tmp_path, monkeypatch):
    """The directory where writes are staged before their upload, empty at the start."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _keys(server, bucket: str, prefix: str) -> list[str]:
    """The keys under *prefix*, as the server lists them (boto3, not tfrecord-io)."""
    pages = server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                     Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _prefix(url: str) -> str:
    return url.split("/", 3)[3]


# -- the server -----------------------------------------------------------------------------


def test_the_server_takes_only_requests_signed_with_its_key(s3, s3_bucket):
    import boto3
    from botocore.exceptions import ClientError

    assert s3.client().head_bucket(Bucket=s3_bucket)
    for key, secret, code in ((s3.access_key, "wrong-secret", "SignatureDoesNotMatch"),
                              ("AKIAUNKNOWN000000000", s3.secret_key, "InvalidAccessKeyId")):
        other = boto3.client("s3", endpoint_url=s3.endpoint_url, region_name="us-east-1",
                             aws_access_key_id=key, aws_secret_access_key=secret)
        with pytest.raises(ClientError) as err:
            other.list_objects_v2(Bucket=s3_bucket)
        assert err.value.response["Error"]["Code"] == code


def test_the_servers_pid_is_its_process_whose_cpu_time_the_benchmarks_count(s3, s3_bucket):
    from tfrecord_io.testing.processes import cpu_seconds

    assert s3.running and s3.pid is not None
    with open(f"/proc/{s3.pid}/cmdline", "rb") as f:
        assert b"moto" in f.read()
    before = cpu_seconds(s3.pid)
    for _ in range(50):
        s3.client().head_bucket(Bucket=s3_bucket)
    assert cpu_seconds(s3.pid) > before > 0
    assert cpu_seconds(None) == 0.0


def test_recording_gives_each_request_with_its_byte_range(s3, s3_bucket):
    client = s3.client()
    client.put_object(Bucket=s3_bucket, Key="recorded", Body=b"0123456789")
    with s3.recording() as requests:
        client.get_object(Bucket=s3_bucket, Key="recorded", Range="bytes=2-5")
        client.head_object(Bucket=s3_bucket, Key="recorded")
    assert requests == [RecordedRequest("GET", f"s3://{s3_bucket}/recorded", (2, 5)),
                        RecordedRequest("HEAD", f"s3://{s3_bucket}/recorded", None)]
    client.head_object(Bucket=s3_bucket, Key="recorded")  # after the block: not recorded
    assert len(requests) == 2


def test_a_distant_server_answers_no_sooner_than_its_latency_nor_faster_than_its_rate():
    """The server the benchmarks use as a store across a network (testing/s3/distant.py)."""
    with S3Server(auth=False, first_byte_latency=0.3, connection_rate=4e6) as server:
        client = server.client()
        client.create_bucket(Bucket="distant")
        data = os.urandom(2 << 20)
        client.put_object(Bucket="distant", Key="k", Body=data)
        started = time.monotonic()
        got = client.get_object(Bucket="distant", Key="k", Range="bytes=0-1999999")["Body"].read()
        took = time.monotonic() - started
    assert got == data[:2_000_000]
    assert took >= 0.3 + 2_000_000 / 4e6


# -- files, directories, listing ------------------------------------------------------------


def test_deleting_a_whole_bucket_is_refused(base):
    stores.put(f"{base}/x", b"x")
    with pytest.raises(UnsupportedOperationError, match="bucket"):
        fs.delete("s3://" + base.split("/")[2], recursive=True)
    assert fs.exists(f"{base}/x")


def test_listing_goes_on_past_a_page_of_1000_keys(s3_env):
    bucket = "tfrecord-io-pages"  # a bucket of its own: the server lists a bucket key by key
    s3_env.create_bucket(bucket)
    names = [f"part-{i:05d}" for i in range(1010)]
    s3_env.fill(bucket, {f"data/{n}": b"r" for n in names})
    assert fs.expand(f"s3://{bucket}/data") == [f"s3://{bucket}/data/{n}" for n in names]


def test_seeks_read_ranges(base):
    data = os.urandom(3 << 20)
    stores.put(f"{base}/blob", data)
    with fs.open(f"{base}/blob", buffer_size=64 << 10) as f:
        for offset, n in ((2_000_000, 100), (5, 70_000), (len(data) - 10, 100), (1 << 20, 1 << 20)):
            f.seek(offset)
            assert f.read(n) == data[offset:offset + n]
        assert f.seek(-4, os.SEEK_END) == len(data) - 4 and f.read() == data[-4:]
        f.seek(len(data) + 5)
        assert f.read(10) == b""
    with fs.open(f"{base}/blob") as f:
        assert f.read() == data


@pytest.mark.parametrize("requests", [1, 4, 16])
def test_a_large_object_reads_whole_with_any_number_of_requests_in_flight(base, monkeypatch,
                                                                          requests):
    data = os.urandom(5 << 20)
    stores.put(f"{base}/blob", data)
    monkeypatch.setenv("TFRECORD_IO_READ_REQUESTS", str(requests))
    with fs.open(f"{base}/blob", buffer_size=256 << 10) as f:
        assert f.raw.fetchers == requests
        assert f.read(3) == data[:3]
        f.seek(3 << 20)  # a jump forward: the blocks fetched before it are dropped
        assert f.read(1 << 20) == data[3 << 20:4 << 20]
        f.seek(10)  # and back
        assert f.read() == data[10:]


def _ranges(requests, url: str, at_least: int) -> list[tuple[int, int]]:
    """The byte ranges of the GETs of *url* among *requests* from byte *at_least* on, sorted."""
    return sorted(r.range for r in requests
                  if r.method == "GET" and r.url == url and r.range and r.range[0] >= at_least)


def test_a_jump_costs_one_get_of_a_mebibyte_and_reading_on_fetches_blocks_ahead_again(
        base, s3, monkeypatch):
    mib = 1 << 20
    data = os.urandom(16 * mib)
    url = f"{base}/blob"
    stores.put(url, data)
    monkeypatch.setenv("TFRECORD_IO_READ_REQUESTS", "4")
    with fs.open(url, buffer_size=2 * mib) as f:
        assert f.read(10) == data[:10]  # the first read: 5 blocks ahead (10 MiB), as for a scan
        with s3.recording() as requests:
            f.seek(12 * mib)  # beyond them
            assert f.read(100) == data[12 * mib:12 * mib + 100]
            assert f.raw.wait_until_idle()  # every request it makes before reading on is made
        assert _ranges(requests, url, 10 * mib) == [(12 * mib, 13 * mib - 1)]
        with s3.recording() as requests:
            assert f.read(2 * mib) == data[12 * mib + 100:14 * mib + 100]
            assert f.raw.wait_until_idle()
        # Reading on past the probe: whole blocks from its end, here to the end of the object.
        assert _ranges(requests, url, 10 * mib) == [(13 * mib, 15 * mib - 1),
                                                    (15 * mib, 16 * mib - 1)]


# -- writes appear whole, or not at all -------------------------------------------------------


def test_a_large_write_appears_only_when_closed_as_a_multipart_upload(base, s3, s3_bucket,
                                                                      staging):
    data = os.urandom(11 << 20)  # more than pyarrow's 10 MiB of one part
    f = fs.open(f"{base}/big", "wb")
    for i in range(0, len(data), 1 << 20):
        f.write(data[i:i + (1 << 20)])
    f.flush()
    assert _keys(s3, s3_bucket, _prefix(base)) == [] and not fs.exists(f"{base}/big")
    f.close()
    head = s3.client().head_object(Bucket=s3_bucket, Key=f"{_prefix(base)}/big")
    assert head["ContentLength"] == len(data) and "-" in head["ETag"]  # a multipart ETag
    assert stores.get(f"{base}/big") == data
    assert list(staging.iterdir()) == []


def test_a_failed_write_leaves_nothing_and_keeps_the_old_object(base, s3, s3_bucket, staging):
    stores.put(f"{base}/kept", b"old")
    for url in (f"{base}/new", f"{base}/kept"):
        with pytest.raises(RuntimeError, match="writer failed"):
            with fs.open(url, "wb") as f:
                f.write(b"partial " * 1000)
                raise RuntimeError("writer failed")
    with pytest.raises(RuntimeError, match="writer failed"):
        with fs.open(f"{base}/text", "w") as f:  # text mode too
            f.write("partial\n")
            raise RuntimeError("writer failed")
    assert _keys(s3, s3_bucket, _prefix(base)) == [f"{_prefix(base)}/kept"]
    assert stores.get(f"{base}/kept") == b"old"
    assert s3.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
    assert list(staging.iterdir()) == []


def test_an_abandoned_writer_uploads_nothing(base, s3, s3_bucket, staging, caplog):
    f = fs.open(f"{base}/abandoned", "wb")
    f.write(b"never closed")
    del f
    gc.collect()
    assert _keys(s3, s3_bucket, _prefix(base)) == []
    assert "never closed" in caplog.text and list(staging.iterdir()) == []


def test_an_abandoned_text_writer_uploads_nothing(base, s3, s3_bucket, staging, caplog):
    f = fs.open(f"{base}/abandoned.txt", "w")
    f.write("never closed\n")
    del f
    gc.collect()
    assert _keys(s3, s3_bucket, _prefix(base)) == []
    assert list(staging.iterdir()) == []


def test_a_forked_childs_copy_of_a_writer_leaves_the_parents_upload_alone(base, staging):
    f = fs.open(f"{base}/forked", "wb")
    f.write(b"written before the fork, ")
    pid = os.fork()
    if pid == 0:  # the child drops its copy (its finalizer runs), then leaves
        try:
            del f
            gc.collect()
        finally:
            os._exit(0)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    f.write(b"and after")
    f.close()
    assert stores.get(f"{base}/forked") == b"written before the fork, and after"
    assert list(staging.iterdir()) == []


def test_atomic_write_writes_in_place(base, s3, s3_bucket):
    target = f"{base}/_part-0.tfindex"
    with fs.atomic_write(target) as f:
        f.write(b"0 17\n")
    with pytest.raises(RuntimeError):
        with fs.atomic_write(target) as f:
            f.write(b"partial")
            raise RuntimeError("writer failed")
    assert stores.get(target) == b"0 17\n"
    assert _keys(s3, s3_bucket, _prefix(base)) == [_prefix(target)]  # no temporary object ever


# -- errors name the URL ----------------------------------------------------------------------


def test_a_missing_object_is_file_not_found_naming_the_url(base):
    url = f"{base}/absent.tfrecord"
    for op in (lambda: fs.open(url), lambda: fs.stat(url), lambda: fs.delete(url)):
        with pytest.raises(ObjectStoreFileNotFoundError, match=url) as err:
            op()
        assert isinstance(err.value, FileNotFoundError)
    assert not fs.exists(url) and fs.glob(f"{base}/absent*") == []


def test_a_missing_bucket_is_its_own_error(s3_env):
    url = "s3://no-such-bucket-here/data/part-0"
    for op in (lambda: fs.stat(url), lambda: fs.exists(url), lambda: fs.open(url),
               lambda: fs.open(url, "wb"), lambda: fs.ls("s3://no-such-bucket-here/data"),
               lambda: fs.glob("s3://no-such-bucket-here/*"), lambda: fs.makedirs(url),
               lambda: fs.expand(url)):
        with pytest.raises(BucketNotFoundError, match="no-such-bucket-here.* does not exist"):
            op()


@pytest.mark.parametrize("wrong", ["secret", "key"])
def test_wrong_credentials_are_a_permission_error_naming_the_url(base, monkeypatch, wrong):
    stores.put(f"{base}/data", b"x")
    if wrong == "secret":
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    else:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWN000000000")
    for op in (lambda: fs.open(f"{base}/data"), lambda: fs.stat(f"{base}/data"),
               lambda: fs.ls(base), lambda: stores.put(f"{base}/other", b"y")):
        with pytest.raises(ObjectStorePermissionError, match=f"access denied to {base}") as err:
            op()
        assert isinstance(err.value, PermissionError) and "AWS_ACCESS_KEY_ID" in str(err.value)


def test_the_generic_endpoint_variable_and_explicit_settings(base, s3, monkeypatch):
    stores.put(f"{base}/data", b"x")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint_url)
    assert fs.stat(f"{base}/data").size == 1
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.delenv(name)
    explicit = S3FileSystem(endpoint_url=s3.endpoint_url, access_key=s3.access_key,
                            secret_key=s3.secret_key, addressing="path")
    assert explicit.stat(f"{base}/data").size == 1
    monkeypatch.setenv("TFRECORD_IO_S3_ADDRESSING", "sideways")
    with pytest.raises(ValueError, match="TFRECORD_IO_S3_ADDRESSING"):
        fs.stat(f"{base}/data")


@pytest.fixture
def no_aws_settings(monkeypatch):
    """No AWS_* or TFRECORD_IO_S3_* setting in the environment (the test sets its own)."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "TFRECORD_IO_S3_")):
            monkeypatch.delenv(name)


@pytest.mark.usefixtures("no_aws_settings")
def test_the_environment_passed_on_is_what_is_set_here_without_the_profile(monkeypatch):
    assert fs.environment() == {}
    settings = {"AWS_ENDPOINT_URL": "http://store:9000", "AWS_ACCESS_KEY_ID": "AKID",
                "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
                "TFRECORD_IO_S3_REQUEST_TIMEOUT": "12"}
    for name, value in {**settings, "AWS_PROFILE": "mine", "AWS_OTHER": "x"}.items():
        monkeypatch.setenv(name, value)
    assert fs.environment() == settings


@pytest.mark.usefixtures("no_aws_settings")
@pytest.mark.parametrize("name, value, says", [
    ("AWS_MAX_ATTEMPTS", "2.5", "must be a whole number"),
    ("AWS_MAX_ATTEMPTS", "0", "must be positive"),
    ("TFRECORD_IO_S3_REQUEST_TIMEOUT", "soon", "is not a number"),
    ("TFRECORD_IO_S3_CONNECT_TIMEOUT", "-1", "must be positive"),
])
def test_a_setting_that_is_not_a_positive_number_is_refused_by_name(monkeypatch, name, value, says):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=f"{name}='{value}' {says}"):
        S3FileSystem().settings()


@pytest.mark.usefixtures("no_aws_settings")
def test_whole_attempts_and_fractional_timeouts_are_taken(monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "5.0")
    monkeypatch.setenv("TFRECORD_IO_S3_REQUEST_TIMEOUT", "2.5")
    settings = S3FileSystem().settings()
    assert (settings.max_attempts, settings.request_timeout) == (5, 2.5)


@pytest.mark.usefixtures("no_aws_settings")
def test_what_a_registered_file_system_was_given_replaces_the_environment(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://old:9000")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "of-another-key")
    given = S3FileSystem(endpoint_url="http://new:9000", region="us-east-2", access_key="AKID",
                         secret_key="secret", connect_timeout=3.5)
    assert given.environment() == {
        "AWS_ENDPOINT_URL_S3": "http://new:9000", "AWS_REGION": "us-east-2",
        "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret",
        "TFRECORD_IO_S3_CONNECT_TIMEOUT": "3.5",
    }


# -- nothing hangs ----------------------------------------------------------------------------


def test_an_unreachable_endpoint_fails_fast_naming_the_url(s3_env, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    started = time.monotonic()
    with pytest.raises(ObjectStoreError, match="s3://some-bucket/x.*did not answer"):
        fs.stat("s3://some-bucket/x")
    assert time.monotonic() - started < 20


def test_a_silent_endpoint_times_out(s3_env, monkeypatch):
    """A server that accepts connections and never answers: each request gives up after the
    request timeout, then the retries."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{listener.getsockname()[1]}")
        monkeypatch.setenv("TFRECORD_IO_S3_REQUEST_TIMEOUT", "1")
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
        started = time.monotonic()
        with pytest.raises(ObjectStoreError, match="s3://silent-bucket/x"):
            fs.stat("s3://silent-bucket/x")
        assert time.monotonic() - started < 20
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        for conn in held:
            conn.close()


def test_a_server_that_stops_mid_read_is_an_error_naming_the_url(monkeypatch):
    """A server of its own (the session's must live on): killed while a file is being read."""
    with S3Server(auth=False) as server:
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
        monkeypatch.setenv("TFRECORD_IO_S3_CONNECT_TIMEOUT", "2")
        url = server.create_bucket("doomed") + "/part-0"
        data = os.urandom(2 << 20)
        stores.put(url, data)
        with fs.open(url, buffer_size=256 << 10) as f:
            assert f.read(1000) == data[:1000]
            server.kill()
            started = time.monotonic()
            with pytest.raises(ObjectStoreError, match=f"{url}.*did not answer") as err:
                f.read()
            assert time.monotonic() - started < 20
            # The first block not fetched before the kill (which depends on the fetchers' timing).
            at = re.search(r"read byte (\d+) of", str(err.value))
            assert at and int(at[1]) % (256 << 10) == 0 and 0 < int(at[1]) < len(data)
        pid, directory = server._process.pid, server.base_dir
    assert not os.path.exists(directory)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
