"""tfrecord_io.fs's HDFS backend (tfrecord_io.fs.hdfs) against a real HDFS (MiniDFSCluster in a
child JVM, on 127.0.0.1), through hdfs:// (hdfs-native) and webhdfs:// alike: file objects,
metadata, addressing (hdfs:/// and fs.defaultFS, the bare-path rule), the client choice and
cache, errors, DataNode failover.

The cluster has 2 DataNodes, replication 2 and 1 MiB blocks, so test files span several blocks.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import uuid

import pytest

from tfrecord_io import fs
from tfrecord_io.errors import (
    HdfsError,
    HdfsFileExistsError,
    HdfsFileNotFoundError,
    HdfsPermissionError,
    TFRecordError,
)
from tfrecord_io.fs import hdfs as fs_hdfs
from tfrecord_io.fs.hdfs import clients as hdfs_clients
from tfrecord_io.fs.hdfs import urls as hdfs_urls
from tfrecord_io.fs.urls import split_root
from tfrecord_io.testing.minihdfs import MiniHdfs, start_for_tests

MiB = 1 << 20


@pytest.fixture(scope="session")
def minihdfs(hdfs):
    """The session's shared mini HDFS (conftest.py's ``hdfs``)."""
    return hdfs


pytestmark = pytest.mark.usefixtures("no_hadoop_settings")


@pytest.fixture(params=["hdfs", "webhdfs"])
def base(request, minihdfs):
    """A fresh directory URL, once through the RPC URL (hdfs-native), once through WebHDFS."""
    root = minihdfs.url if request.param == "hdfs" else minihdfs.webhdfs_url
    url = f"{root}/t/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"
    fs.makedirs(url)
    return url


def _data(n: int, seed: int = 0) -> bytes:
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:n])


def _write(url: str, data: bytes) -> None:
    with fs.open(url, "wb") as f:
        f.write(data)


def _superuser_client(cluster: MiniHdfs):
    import hdfs_native

    return hdfs_native.Client(cluster.url)


def _raw_status(cluster: MiniHdfs, url: str):
    """What HDFS itself says of *url* (owner, permission, replication, block size: more than
    fs.FileInfo holds), asked as the superuser."""
    return _superuser_client(cluster).get_file_info(split_root(url)[1])


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# -- open / read / write -----------------------------------------------------------------------


def test_write_then_read_back_multi_block(base):
    data = _data(3 * MiB + 12345)
    url = f"{base}/sub/dir/file.bin"  # parents are created
    with fs.open(url, "wb") as f:
        assert f.writable() and not f.readable()
        f.write(data[:7])  # small writes are gathered
        f.write(memoryview(data)[7 : 2 * MiB])
        f.write(data[2 * MiB :])
        assert f.tell() == len(data)
    with fs.open(url) as f:
        assert f.readable() and f.seekable()
        assert len(f) == len(data)
        assert f.read() == data
        assert f.read(10) == b""


def test_write_overwrites(base):
    url = f"{base}/f"
    _write(url, b"first version, long")
    _write(url, b"second")
    with fs.open(url) as f:
        assert f.read() == b"second"
    assert fs.stat(url).size == 6


def test_empty_file(base):
    url = f"{base}/empty"
    _write(url, b"")
    assert fs.stat(url).size == 0
    with fs.open(url) as f:
        assert f.read() == b""
        assert f.read(5) == b""


def test_read_sizes_seek_tell_readinto(base):
    data = _data(2 * MiB + 999, seed=1)
    url = f"{base}/f.bin"
    _write(url, data)
    with fs.open(url) as f:
        assert f.read(12) == data[:12]
        assert f.tell() == 12
        assert f.read(100_000) == data[12:100_012]
        f.seek(MiB - 5)  # across a block boundary
        assert f.read(10) == data[MiB - 5 : MiB + 5]
        f.seek(3, os.SEEK_CUR)
        assert f.tell() == MiB + 8
        assert f.read(4) == data[MiB + 8 : MiB + 12]
        f.seek(-100, os.SEEK_END)
        assert f.read(1000) == data[-100:]
        assert f.read(1) == b""
        f.seek(50)  # backwards
        buf = bytearray(300_000)
        assert f.readinto(buf) == len(buf)
        assert bytes(buf) == data[50:300_050]
        f.seek(len(data) - 10)
        buf = bytearray(100)
        assert f.readinto(buf) == 10
        assert bytes(buf[:10]) == data[-10:]
        f.seek(len(data) + 100)  # past the end: reads nothing
        assert f.read() == b""
    with pytest.raises(ValueError):
        f.read(1)  # closed


def test_random_small_reads(base):
    import random

    data = _data(3 * MiB, seed=2)
    url = f"{base}/f.bin"
    _write(url, data)
    rng = random.Random(7)
    with fs.open(url) as f:
        for _ in range(60):
            off = rng.randrange(0, len(data))
            n = rng.choice([1, 12, 4096, 70_000, 300_000])
            f.seek(off)
            assert f.read(n) == data[off : off + n], (off, n)


def test_reading_on_after_a_jump_gives_the_files_bytes_to_the_end(base):
    """A jump streams about a mebibyte; reading on past it streams the rest of the file."""
    data = _data(3 * MiB + 99, seed=6)
    url = f"{base}/f.bin"
    _write(url, data)
    with fs.open(url) as f:
        f.seek(MiB // 2 + 5)
        out = bytearray()
        while piece := f.read(100_000):
            out += piece
    assert bytes(out) == data[MiB // 2 + 5 :]


def test_read_ahead_gives_the_same_bytes_and_follows_seeks(base):
    import random

    data = _data(3 * MiB + 123, seed=5)
    url = f"{base}/f.bin"
    _write(url, data)
    with fs.open(url, read_ahead=256 * 1024) as f:
        buf = bytearray(100_000)
        out = bytearray()
        while n := f.readinto(buf):
            out += buf[:n]
        assert bytes(out) == data
        rng = random.Random(3)
        for _ in range(30):  # forward and backward jumps drop what was read ahead
            off = rng.randrange(0, len(data))
            f.seek(off)
            assert f.read(50_000) == data[off : off + 50_000], off


def test_open_at_offset(base):
    data = _data(MiB + 500, seed=3)
    url = f"{base}/f.bin"
    _write(url, data)
    with fs.open(url, offset=MiB - 3) as f:
        assert f.tell() == MiB - 3
        assert f.read() == data[MiB - 3 :]


def test_sequential_record_style_reads(base):
    """Many small reads (TFRecord headers) in a row stay correct across chunk boundaries."""
    data = _data(MiB + 77, seed=4)
    url = f"{base}/f.bin"
    _write(url, data)
    out = bytearray()
    with fs.open(url) as f:
        while True:
            piece = f.read(12)
            if not piece:
                break
            out += piece
            out += f.read(1000)
    assert bytes(out) == data


def test_open_rejects_bad_mode_and_directory(base):
    with pytest.raises(ValueError):
        fs.open(f"{base}/x", "r+")
    with pytest.raises(HdfsError, match="directory"):
        fs.open(base)


def test_native_and_webhdfs_see_the_same_files(minihdfs):
    name = f"/t/cross-{uuid.uuid4().hex[:8]}"
    data = _data(MiB + 3, seed=5)
    _write(minihdfs.url + name + "/a", data)
    with fs.open(minihdfs.webhdfs_url + name + "/a") as f:
        assert f.read() == data
    _write(minihdfs.webhdfs_url + name + "/b", data[::-1])
    with fs.open(minihdfs.url + name + "/b") as f:
        assert f.read() == data[::-1]


# -- metadata ----------------------------------------------------------------------------------


def test_stat_file_and_dir(base, minihdfs):
    url = f"{base}/f"
    before = time.time()
    _write(url, b"x" * 1000)
    st = fs.stat(url)
    assert st == fs.FileInfo(url=url, size=1000, is_dir=False, mtime=st.mtime)
    assert before - 60 < st.mtime < time.time() + 60
    raw = _raw_status(minihdfs, url)  # what HDFS keeps besides: the file was written as asked
    assert (raw.owner, raw.permission, raw.replication, raw.blocksize) == (
        minihdfs.superuser, 0o644, 2, MiB
    )
    assert abs(raw.modification_time / 1000.0 - st.mtime) < 1e-3
    d = fs.stat(base)
    assert d.is_dir and d.size == 0 and d.url == base


def test_exists(base):
    assert fs.exists(base)
    assert not fs.exists(f"{base}/nope")
    _write(f"{base}/f", b"1")
    assert fs.exists(f"{base}/f")
    assert not fs.exists(f"{base}/f/under-a-file")


def test_ls(base):
    for name in ("b", "a", "c"):
        _write(f"{base}/{name}", name.encode() * 3)
    fs.makedirs(f"{base}/d")
    entries = fs.ls(base, detail=True)
    assert [e.url for e in entries] == [f"{base}/{n}" for n in ("a", "b", "c", "d")]
    assert [e.is_dir for e in entries] == [False, False, False, True]
    assert entries[0].size == 3
    assert fs.ls(base) == [e.url for e in entries]
    assert fs.ls(f"{base}/a", detail=True) == [fs.stat(f"{base}/a")]
    assert fs.ls(f"{base}/d") == []


def test_glob(base):
    for name in ("part-0.tfrecord", "part-1.tfrecord", "part-2.gz", "_part-0.tfrecord.tfindex"):
        _write(f"{base}/out/{name}", b"x")
    _write(f"{base}/other/part-9.tfrecord", b"x")
    _write(f"{base}/out/sub/part-5.tfrecord", b"x")
    assert fs.glob(f"{base}/out/part-*.tfrecord") == [
        f"{base}/out/part-0.tfrecord",
        f"{base}/out/part-1.tfrecord",
    ]
    assert fs.glob(f"{base}/out/part-?.gz") == [f"{base}/out/part-2.gz"]
    assert fs.glob(f"{base}/out/part-[12].*") == [
        f"{base}/out/part-1.tfrecord",
        f"{base}/out/part-2.gz",
    ]
    assert fs.glob(f"{base}/*/part-*.tfrecord") == [
        f"{base}/other/part-9.tfrecord",
        f"{base}/out/part-0.tfrecord",
        f"{base}/out/part-1.tfrecord",
    ]
    assert fs.glob(f"{base}/o*/sub/*") == [f"{base}/out/sub/part-5.tfrecord"]
    assert fs.glob(f"{base}/out/part-0.tfrecord") == [f"{base}/out/part-0.tfrecord"]
    assert fs.glob(f"{base}/out/nope") == []
    assert fs.glob(f"{base}/missing/*") == []
    assert fs.glob(f"{base}/out/part-0.tfrecord/*") == []


def test_makedirs(base):
    url = f"{base}/x/y/z"
    fs.makedirs(url)
    assert fs.stat(url).is_dir
    fs.makedirs(url)  # exists already: fine
    _write(f"{base}/file", b"1")
    with pytest.raises(HdfsFileExistsError, match="file exists"):
        fs.makedirs(f"{base}/file")


def test_delete(base):
    _write(f"{base}/f", b"1")
    fs.delete(f"{base}/f")
    assert not fs.exists(f"{base}/f")
    fs.makedirs(f"{base}/empty")
    fs.delete(f"{base}/empty")
    _write(f"{base}/full/f", b"1")
    with pytest.raises(HdfsError, match="not empty"):
        fs.delete(f"{base}/full")
    assert fs.exists(f"{base}/full/f")
    fs.delete(f"{base}/full", recursive=True)
    assert not fs.exists(f"{base}/full")
    with pytest.raises(HdfsFileNotFoundError):
        fs.delete(f"{base}/full")


def test_rename(base):
    _write(f"{base}/a", b"abc")
    fs.rename(f"{base}/a", f"{base}/b")
    assert not fs.exists(f"{base}/a")
    with fs.open(f"{base}/b") as f:
        assert f.read() == b"abc"
    fs.makedirs(f"{base}/dir")
    fs.rename(f"{base}/dir", f"{base}/dir2")
    assert fs.stat(f"{base}/dir2").is_dir
    _write(f"{base}/c", b"c")
    with pytest.raises(HdfsFileExistsError, match="exists"):
        fs.rename(f"{base}/b", f"{base}/c")
    with pytest.raises(HdfsFileNotFoundError):
        fs.rename(f"{base}/nope", f"{base}/d")
    with pytest.raises(HdfsFileNotFoundError, match="parent"):
        fs.rename(f"{base}/b", f"{base}/no/such/dir/b")


def test_rename_across_file_systems_is_refused(minihdfs):
    with pytest.raises(HdfsError, match="across"):
        fs.rename(f"{minihdfs.url}/a", f"{minihdfs.webhdfs_url}/b")


# -- addressing --------------------------------------------------------------------------------


def test_default_fs_from_hadoop_conf_dir(minihdfs, monkeypatch):
    name = f"/t/conf-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HADOOP_CONF_DIR", minihdfs.conf_dir)
    assert fs_hdfs.default_fs() == minihdfs.url
    _write(f"hdfs://{name}/f", b"via hdfs:///")  # hdfs:///path, no authority
    assert fs.stat(f"{minihdfs.url}{name}/f").size == len(b"via hdfs:///")
    with fs.open(f"hdfs://{name}/f") as f:
        assert f.read() == b"via hdfs:///"
    # URLs come back in the form asked
    assert fs.stat(f"hdfs://{name}/f").url == f"hdfs://{name}/f"
    assert fs.glob(f"hdfs://{name}/*") == [f"hdfs://{name}/f"]
    assert fs.ls(f"hdfs://{name}") == [f"hdfs://{name}/f"]
    assert list(fs.walk(f"hdfs://{name}")) == [(f"hdfs://{name}", [], ["f"])]


def test_expand_lists_a_file_named_with_and_without_its_namenode_once(minihdfs, monkeypatch):
    name = f"/t/twice-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HADOOP_CONF_DIR", minihdfs.conf_dir)
    _write(f"{minihdfs.url}{name}/a", b"a")
    _write(f"{minihdfs.url}{name}/b", b"b")
    spellings = [f"{minihdfs.url}{name}", f"hdfs://{name}/", f"{minihdfs.url}{name}//a"]
    for inputs in (spellings, spellings[::-1]):
        assert fs.expand(inputs) == [f"hdfs://{name}/a", f"hdfs://{name}/b"]
    # another NameNode's files are other files
    assert len(fs.expand([f"{minihdfs.url}{name}", f"{minihdfs.webhdfs_url}{name}"])) == 4


def test_a_bare_path_is_local_even_with_a_default_fs(minihdfs, monkeypatch):
    """One rule: a bare /path is always local; hdfs:///path is HDFS's fs.defaultFS."""
    name = f"/t/bare-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HADOOP_CONF_DIR", minihdfs.conf_dir)
    _write(f"hdfs://{name}/f", b"on hdfs")
    assert fs.split_url(f"{name}/f") == ("file", f"{name}/f")
    assert fs.is_local(f"{name}/f") and not fs.is_local(f"hdfs://{name}/f")
    with pytest.raises(FileNotFoundError) as err:  # no such local file
        fs.open(f"{name}/f")
    assert not isinstance(err.value, HdfsError)
    assert not fs.exists(f"{name}/f") and fs.exists(f"hdfs://{name}/f")
    assert fs.glob(f"{name}/*") == []


def test_hdfs_urls_over_webhdfs_when_asked(minihdfs, monkeypatch):
    name = f"/t/choice-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HADOOP_CONF_DIR", minihdfs.conf_dir)
    monkeypatch.setenv(fs_hdfs.CLIENT_ENV, "webhdfs")
    _write(f"{minihdfs.url}{name}/f", b"over http")
    assert [k[0] for k in hdfs_clients.cache] == ["webhdfs"]
    monkeypatch.setenv(fs_hdfs.CLIENT_ENV, "native")
    with fs.open(f"{minihdfs.url}{name}/f") as f:
        assert f.read() == b"over http"
    monkeypatch.setenv(fs_hdfs.CLIENT_ENV, "carrier-pigeon")
    with pytest.raises(HdfsError, match="carrier-pigeon"):
        fs.exists(f"{minihdfs.url}/")


def _hdfs_site(conf_dir, **properties: str) -> None:
    rows = "".join(f"<property><name>{k.replace('_', '.')}</name><value>{v}</value></property>"
                   for k, v in properties.items())
    (conf_dir / "hdfs-site.xml").write_text(f"<configuration>{rows}</configuration>")


def test_webhdfs_goes_to_the_configured_http_address_of_the_configured_namenode_only(
        monkeypatch, tmp_path):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    _hdfs_site(tmp_path, **{"dfs_namenode_rpc-address": "nn-prod:8020",
                            "dfs_namenode_http-address": "nn-prod-web:50070"})
    assert hdfs_urls.webhdfs_address_for_rpc("nn-prod:8020") == "nn-prod-web:50070"
    assert hdfs_urls.webhdfs_address_for_rpc("nn-test:8020") == "nn-test:9870"
    _hdfs_site(tmp_path, **{"dfs_namenode_http-address": "nn-prod-web:50070"})  # no rpc-address
    assert hdfs_urls.webhdfs_address_for_rpc("nn-test:8020") == "nn-test:9870"
    _hdfs_site(tmp_path, **{"dfs_namenode_http-address": "0.0.0.0:50070"})  # every host's port
    assert hdfs_urls.webhdfs_address_for_rpc("nn-test:8020") == "nn-test:50070"


def test_url_schemes_are_case_insensitive():
    location = hdfs_urls.resolve("HDFS://nn:8020/data/x")
    assert (location.scheme, location.authority, location.url()) == (
        "hdfs", "nn:8020", "hdfs://nn:8020/data/x")


def test_no_authority_without_conf_is_a_clear_error(monkeypatch, tmp_path):
    with pytest.raises(HdfsError, match="HADOOP_CONF_DIR"):
        fs.stat("hdfs:///some/path")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    with pytest.raises(HdfsError, match="fs.defaultFS"):
        fs.stat("hdfs:///some/path")


def test_the_backend_refuses_what_is_not_an_hdfs_url():
    backend, _ = fs.filesystem("hdfs://127.0.0.1:1/")
    assert isinstance(backend, fs_hdfs.HdfsFileSystem)
    assert fs.filesystem("webhdfs://127.0.0.1:1/")[0] is backend
    for url in ("s3://bucket/x", "file:///tmp/x", "relative/path", "/bare/path", "hdfs:/x"):
        with pytest.raises(HdfsError, match="unsupported URL"):
            backend.stat(url)


def test_clients_are_cached_per_namenode_and_user(minihdfs, monkeypatch):
    fs.exists(minihdfs.url + "/")
    fs.stat(minihdfs.url + "/t")
    fs.exists(minihdfs.webhdfs_url + "/")
    assert len(hdfs_clients.cache) == 2
    monkeypatch.setenv("HADOOP_USER_NAME", "someone-else")
    assert fs_hdfs.current_user() == "someone-else"
    fs.exists(minihdfs.url + "/")
    assert len(hdfs_clients.cache) == 3
    assert {k[2] for k in hdfs_clients.cache} == {"someone-else", minihdfs.superuser}


# -- errors ------------------------------------------------------------------------------------


def test_missing_path_errors_name_the_url(base):
    url = f"{base}/does/not/exist"
    for call in (fs.stat, fs.open, fs.ls, fs.delete):
        with pytest.raises(HdfsFileNotFoundError) as err:
            call(url)
        assert url in str(err.value)
        assert isinstance(err.value, FileNotFoundError)
        assert isinstance(err.value, HdfsError) and isinstance(err.value, TFRecordError)


def test_permission_denied_names_url_and_user(minihdfs, base, monkeypatch):
    # As the superuser: a directory owned by alice, mode 700, with a file in it.
    root_client = _superuser_client(minihdfs)
    path = "/t/private-" + uuid.uuid4().hex[:8]
    root_client.mkdirs(path, 0o700, True)
    with root_client.create(path + "/secret") as w:
        w.write(b"secret")
    root_client.set_owner(path, "alice", "alice")
    root_client.set_owner(path + "/secret", "alice", "alice")
    root_client.set_permission(path, 0o700)
    prefix = base.split("/t/")[0]  # the scheme://authority of this parametrisation
    url = prefix + path
    monkeypatch.setenv("HADOOP_USER_NAME", "bob")
    checks = [
        lambda: fs.ls(url),
        lambda: fs.stat(url + "/secret"),
        lambda: fs.open(url + "/secret"),
        lambda: fs.exists(url + "/secret"),
        lambda: _write(url + "/new", b"x"),  # WebHDFS reports it on close
        lambda: fs.makedirs(url + "/sub"),
        lambda: fs.delete(url, recursive=True),
    ]
    for check in checks:
        with pytest.raises(HdfsPermissionError) as err:
            check()
        msg = str(err.value)
        assert "'bob'" in msg and url in msg, msg
        assert isinstance(err.value, PermissionError)
    # alice owns it and may read it
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    with fs.open(url + "/secret") as f:
        assert f.read() == b"secret"


@pytest.mark.parametrize("scheme", ["hdfs", "webhdfs"])
def test_unreachable_namenode_fails_fast(scheme):
    port = _closed_port()
    url = f"{scheme}://127.0.0.1:{port}/data/x"
    t0 = time.monotonic()
    with pytest.raises(HdfsError) as err:
        fs.stat(url)
    elapsed = time.monotonic() - t0
    assert elapsed < 10, elapsed
    assert f"127.0.0.1:{port}" in str(err.value)
    assert "reach" in str(err.value)


@pytest.mark.parametrize("scheme", ["hdfs", "webhdfs"])
def test_silent_namenode_fails_fast(scheme):
    """A NameNode that never answers the TCP handshake (full accept queue: SYNs dropped)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(c)
        t0 = time.monotonic()
        with pytest.raises(HdfsError) as err:
            fs.stat(f"{scheme}://127.0.0.1:{port}/x")
        assert time.monotonic() - t0 < 10
        assert f"127.0.0.1:{port}" in str(err.value) and "timed out" in str(err.value)
    finally:
        for c in fillers:
            c.close()
        srv.close()


# -- DataNode failure --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fragile_hdfs(tmp_path_factory):
    """A cluster of its own for failure injection, so stopped DataNodes hurt no other test."""
    cluster = start_for_tests(tmp_path_factory.mktemp("fragile-hdfs"))
    yield cluster
    cluster.stop()


@pytest.mark.parametrize("scheme", ["hdfs", "webhdfs"])
@pytest.mark.parametrize("victim", [0, 1])
def test_datanode_stopped_mid_read(fragile_hdfs, scheme, victim):
    root = fragile_hdfs.url if scheme == "hdfs" else fragile_hdfs.webhdfs_url
    url = f"{root}/t/dn-{scheme}-{victim}-{uuid.uuid4().hex[:8]}"
    data = _data(24 * MiB + 1234, seed=victim)
    _write(url, data)
    assert _raw_status(fragile_hdfs, url).replication == 2
    out = bytearray()
    try:
        with fs.open(url) as f:
            out += f.read(5 * MiB + 17)  # mid-block
            fragile_hdfs.stop_datanode(victim)
            while True:
                piece = f.read(MiB // 3)
                if not piece:
                    break
                out += piece
    finally:
        fragile_hdfs.restart_datanode(victim)
    assert len(out) == len(data)
    assert hashlib.sha256(out).hexdigest() == hashlib.sha256(data).hexdigest()
