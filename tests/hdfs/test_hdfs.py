"""tfrecord_io.hdfs against a real HDFS (MiniDFSCluster in a child JVM, on 127.0.0.1).

The cluster has 2 DataNodes, replication 2 and 1 MiB blocks, so test files span several blocks.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tfrecord_io import hdfs
from tfrecord_io.errors import HdfsError, TFRecordError
from tfrecord_io.testing.minihdfs import MiniHdfs, MiniHdfsError, start_for_tests

MiB = 1 << 20


@pytest.fixture(scope="session")
def minihdfs(hdfs):
    """The session's shared mini HDFS (conftest.py's ``hdfs``)."""
    return hdfs


@pytest.fixture(autouse=True)
def _clean_hdfs_env(monkeypatch):
    """Each test starts as the OS user with no HADOOP_CONF_DIR, and fresh clients."""
    for var in ("HADOOP_USER_NAME", "HADOOP_CONF_DIR", "HADOOP_HOME", hdfs.CLIENT_ENV):
        monkeypatch.delenv(var, raising=False)
    hdfs.clear_client_cache()
    yield
    hdfs.clear_client_cache()


@pytest.fixture(params=["hdfs", "webhdfs"])
def base(request, minihdfs):
    """A fresh directory URL, once through the RPC URL (hdfs-native), once through WebHDFS."""
    root = minihdfs.url if request.param == "hdfs" else minihdfs.webhdfs_url
    url = f"{root}/t/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"
    hdfs.makedirs(url)
    return url


def _data(n: int, seed: int = 0) -> bytes:
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:n])


def _write(url: str, data: bytes) -> None:
    with hdfs.open(url, "wb") as f:
        f.write(data)


def _superuser_client(cluster: MiniHdfs):
    import hdfs_native

    return hdfs_native.Client(cluster.url)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# -- the cluster itself ------------------------------------------------------------------------


def test_cluster_is_on_loopback_with_conf_dir(minihdfs):
    assert minihdfs.url.startswith("hdfs://127.0.0.1:")
    assert minihdfs.webhdfs_url.startswith("webhdfs://127.0.0.1:")
    assert minihdfs.http_url.startswith("http://127.0.0.1:")
    assert len(minihdfs.datanodes) == 2
    for dn in minihdfs.datanodes:
        for key in ("xfer", "http", "ipc"):
            assert dn[key].startswith("127.0.0.1:")
    core = Path(minihdfs.conf_dir, "core-site.xml").read_text()
    assert f"<value>{minihdfs.url}</value>" in core
    assert Path(minihdfs.conf_dir, "hdfs-site.xml").is_file()
    minihdfs.ping()


def test_minihdfs_bad_classpath_fails_fast_with_log_tail(tmp_path):
    cluster = MiniHdfs(
        tmp_path / "bad", classpath=str(tmp_path / "nothing.jar"), startup_timeout=60
    )
    t0 = time.monotonic()
    with pytest.raises(MiniHdfsError) as err:
        cluster.start()
    assert time.monotonic() - t0 < 30
    # Either javac cannot compile MiniHdfs.java against it, or the JVM cannot find the class:
    # both name MiniHdfs in the error.
    assert "MiniHdfs" in str(err.value)
    assert not cluster.running


def test_minihdfs_command_errors_are_reported(minihdfs):
    with pytest.raises(MiniHdfsError, match="not stopped"):
        minihdfs.restart_datanode(1)
    with pytest.raises(MiniHdfsError, match="no DataNode 7"):
        minihdfs.stop_datanode(7)


# -- open / read / write -----------------------------------------------------------------------


def test_write_then_read_back_multi_block(base):
    data = _data(3 * MiB + 12345)
    url = f"{base}/sub/dir/file.bin"  # parents are created
    with hdfs.open(url, "wb") as f:
        assert f.writable() and not f.readable()
        f.write(data[:7])  # small writes are gathered
        f.write(memoryview(data)[7 : 2 * MiB])
        f.write(data[2 * MiB :])
        assert f.tell() == len(data)
    with hdfs.open(url) as f:
        assert f.readable() and f.seekable()
        assert len(f) == len(data)
        assert f.read() == data
        assert f.read(10) == b""


def test_write_overwrites(base):
    url = f"{base}/f"
    _write(url, b"first version, long")
    _write(url, b"second")
    with hdfs.open(url) as f:
        assert f.read() == b"second"
    assert hdfs.stat(url).length == 6


def test_empty_file(base):
    url = f"{base}/empty"
    _write(url, b"")
    assert hdfs.stat(url).length == 0
    with hdfs.open(url) as f:
        assert f.read() == b""
        assert f.read(5) == b""


def test_read_sizes_seek_tell_readinto(base):
    data = _data(2 * MiB + 999, seed=1)
    url = f"{base}/f.bin"
    _write(url, data)
    with hdfs.open(url) as f:
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
    with hdfs.open(url) as f:
        for _ in range(60):
            off = rng.randrange(0, len(data))
            n = rng.choice([1, 12, 4096, 70_000, 300_000])
            f.seek(off)
            assert f.read(n) == data[off : off + n], (off, n)


def test_read_ahead_gives_the_same_bytes_and_follows_seeks(base):
    import random

    data = _data(3 * MiB + 123, seed=5)
    url = f"{base}/f.bin"
    _write(url, data)
    with hdfs.open(url, read_ahead=256 * 1024) as f:
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
    with hdfs.open(url, offset=MiB - 3) as f:
        assert f.tell() == MiB - 3
        assert f.read() == data[MiB - 3 :]


def test_sequential_record_style_reads(base):
    """Many small reads (TFRecord headers) in a row stay correct across chunk boundaries."""
    data = _data(MiB + 77, seed=4)
    url = f"{base}/f.bin"
    _write(url, data)
    out = bytearray()
    with hdfs.open(url) as f:
        while True:
            piece = f.read(12)
            if not piece:
                break
            out += piece
            out += f.read(1000)
    assert bytes(out) == data


def test_open_rejects_bad_mode_and_directory(base):
    with pytest.raises(ValueError):
        hdfs.open(f"{base}/x", "r+")
    with pytest.raises(HdfsError, match="directory"):
        hdfs.open(base)


def test_native_and_webhdfs_see_the_same_files(minihdfs):
    name = f"/t/cross-{uuid.uuid4().hex[:8]}"
    data = _data(MiB + 3, seed=5)
    _write(minihdfs.url + name + "/a", data)
    with hdfs.open(minihdfs.webhdfs_url + name + "/a") as f:
        assert f.read() == data
    _write(minihdfs.webhdfs_url + name + "/b", data[::-1])
    with hdfs.open(minihdfs.url + name + "/b") as f:
        assert f.read() == data[::-1]


# -- metadata ----------------------------------------------------------------------------------


def test_stat_file_and_dir(base, minihdfs):
    url = f"{base}/f"
    before = time.time()
    _write(url, b"x" * 1000)
    st = hdfs.stat(url)
    assert st == hdfs.FileStatus(
        url=url,
        length=1000,
        is_dir=False,
        modification_time=st.modification_time,
        owner=minihdfs.superuser,
        group=st.group,
        permission=0o644,
        replication=2,
        block_size=MiB,
    )
    assert before - 60 < st.modification_time < time.time() + 60
    d = hdfs.stat(base)
    assert d.is_dir and d.length == 0 and d.url == base


def test_exists(base):
    assert hdfs.exists(base)
    assert not hdfs.exists(f"{base}/nope")
    _write(f"{base}/f", b"1")
    assert hdfs.exists(f"{base}/f")
    assert not hdfs.exists(f"{base}/f/under-a-file")


def test_ls(base):
    for name in ("b", "a", "c"):
        _write(f"{base}/{name}", name.encode() * 3)
    hdfs.makedirs(f"{base}/d")
    entries = hdfs.ls(base)
    assert [e.url for e in entries] == [f"{base}/{n}" for n in ("a", "b", "c", "d")]
    assert [e.is_dir for e in entries] == [False, False, False, True]
    assert entries[0].length == 3
    assert hdfs.ls(f"{base}/a") == [hdfs.stat(f"{base}/a")]
    assert hdfs.ls(f"{base}/d") == []


def test_glob(base):
    for name in ("part-0.tfrecord", "part-1.tfrecord", "part-2.gz", "_part-0.tfrecord.tfindex"):
        _write(f"{base}/out/{name}", b"x")
    _write(f"{base}/other/part-9.tfrecord", b"x")
    _write(f"{base}/out/sub/part-5.tfrecord", b"x")
    assert hdfs.glob(f"{base}/out/part-*.tfrecord") == [
        f"{base}/out/part-0.tfrecord",
        f"{base}/out/part-1.tfrecord",
    ]
    assert hdfs.glob(f"{base}/out/part-?.gz") == [f"{base}/out/part-2.gz"]
    assert hdfs.glob(f"{base}/out/part-[12].*") == [
        f"{base}/out/part-1.tfrecord",
        f"{base}/out/part-2.gz",
    ]
    assert hdfs.glob(f"{base}/*/part-*.tfrecord") == [
        f"{base}/other/part-9.tfrecord",
        f"{base}/out/part-0.tfrecord",
        f"{base}/out/part-1.tfrecord",
    ]
    assert hdfs.glob(f"{base}/o*/sub/*") == [f"{base}/out/sub/part-5.tfrecord"]
    assert hdfs.glob(f"{base}/out/part-0.tfrecord") == [f"{base}/out/part-0.tfrecord"]
    assert hdfs.glob(f"{base}/out/nope") == []
    assert hdfs.glob(f"{base}/missing/*") == []
    assert hdfs.glob(f"{base}/out/part-0.tfrecord/*") == []


def test_makedirs(base):
    url = f"{base}/x/y/z"
    hdfs.makedirs(url)
    assert hdfs.stat(url).is_dir
    hdfs.makedirs(url)  # exists already: fine
    _write(f"{base}/file", b"1")
    with pytest.raises(hdfs.HdfsFileExistsError, match="file exists"):
        hdfs.makedirs(f"{base}/file")


def test_delete(base):
    _write(f"{base}/f", b"1")
    hdfs.delete(f"{base}/f")
    assert not hdfs.exists(f"{base}/f")
    hdfs.makedirs(f"{base}/empty")
    hdfs.delete(f"{base}/empty")
    _write(f"{base}/full/f", b"1")
    with pytest.raises(HdfsError, match="not empty"):
        hdfs.delete(f"{base}/full")
    assert hdfs.exists(f"{base}/full/f")
    hdfs.delete(f"{base}/full", recursive=True)
    assert not hdfs.exists(f"{base}/full")
    with pytest.raises(hdfs.HdfsFileNotFoundError):
        hdfs.delete(f"{base}/full")


def test_rename(base):
    _write(f"{base}/a", b"abc")
    hdfs.rename(f"{base}/a", f"{base}/b")
    assert not hdfs.exists(f"{base}/a")
    with hdfs.open(f"{base}/b") as f:
        assert f.read() == b"abc"
    hdfs.makedirs(f"{base}/dir")
    hdfs.rename(f"{base}/dir", f"{base}/dir2")
    assert hdfs.stat(f"{base}/dir2").is_dir
    _write(f"{base}/c", b"c")
    with pytest.raises(hdfs.HdfsFileExistsError, match="exists"):
        hdfs.rename(f"{base}/b", f"{base}/c")
    with pytest.raises(hdfs.HdfsFileNotFoundError):
        hdfs.rename(f"{base}/nope", f"{base}/d")
    with pytest.raises(hdfs.HdfsFileNotFoundError, match="parent"):
        hdfs.rename(f"{base}/b", f"{base}/no/such/dir/b")


def test_rename_across_file_systems_is_refused(minihdfs):
    with pytest.raises(HdfsError, match="across"):
        hdfs.rename(f"{minihdfs.url}/a", f"{minihdfs.webhdfs_url}/b")


# -- addressing --------------------------------------------------------------------------------


def test_default_fs_from_hadoop_conf_dir(minihdfs, monkeypatch):
    name = f"/t/conf-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HADOOP_CONF_DIR", minihdfs.conf_dir)
    assert hdfs.default_fs() == minihdfs.url
    _write(f"hdfs://{name}/f", b"via hdfs:///")  # hdfs:///path, no authority
    assert hdfs.stat(f"{minihdfs.url}{name}/f").length == len(b"via hdfs:///")
    with hdfs.open(f"{name}/f") as f:  # bare /path
        assert f.read() == b"via hdfs:///"
    assert hdfs.glob(f"{name}/*") == [f"{name}/f"]  # URLs come back in the form asked
    assert hdfs.glob(f"hdfs://{name}/*") == [f"hdfs://{name}/f"]
    assert [s.url for s in hdfs.ls(f"hdfs://{name}")] == [f"hdfs://{name}/f"]


def test_hdfs_urls_over_webhdfs_when_asked(minihdfs, monkeypatch):
    name = f"/t/choice-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HADOOP_CONF_DIR", minihdfs.conf_dir)
    monkeypatch.setenv(hdfs.CLIENT_ENV, "webhdfs")
    _write(f"{minihdfs.url}{name}/f", b"over http")
    assert [k[0] for k in hdfs._clients] == ["webhdfs"]
    monkeypatch.setenv(hdfs.CLIENT_ENV, "native")
    with hdfs.open(f"{minihdfs.url}{name}/f") as f:
        assert f.read() == b"over http"
    monkeypatch.setenv(hdfs.CLIENT_ENV, "carrier-pigeon")
    with pytest.raises(HdfsError, match="carrier-pigeon"):
        hdfs.exists(f"{minihdfs.url}/")


def test_no_authority_without_conf_is_a_clear_error(monkeypatch, tmp_path):
    with pytest.raises(HdfsError, match="HADOOP_CONF_DIR"):
        hdfs.stat("/some/path")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    with pytest.raises(HdfsError, match="fs.defaultFS"):
        hdfs.stat("hdfs:///some/path")


def test_unsupported_urls():
    for url in ("s3://bucket/x", "file:///tmp/x", "relative/path", "hdfs:/x"):
        with pytest.raises(HdfsError):
            hdfs.stat(url)


def test_clients_are_cached_per_namenode_and_user(minihdfs, monkeypatch):
    hdfs.exists(minihdfs.url + "/")
    hdfs.stat(minihdfs.url + "/t")
    hdfs.exists(minihdfs.webhdfs_url + "/")
    assert len(hdfs._clients) == 2
    monkeypatch.setenv("HADOOP_USER_NAME", "someone-else")
    assert hdfs.current_user() == "someone-else"
    hdfs.exists(minihdfs.url + "/")
    assert len(hdfs._clients) == 3
    assert {k[2] for k in hdfs._clients} == {"someone-else", minihdfs.superuser}


# -- errors ------------------------------------------------------------------------------------


def test_missing_path_errors_name_the_url(base):
    url = f"{base}/does/not/exist"
    for call in (hdfs.stat, hdfs.open, hdfs.ls, hdfs.delete):
        with pytest.raises(hdfs.HdfsFileNotFoundError) as err:
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
        lambda: hdfs.ls(url),
        lambda: hdfs.stat(url + "/secret"),
        lambda: hdfs.open(url + "/secret"),
        lambda: hdfs.exists(url + "/secret"),
        lambda: _write(url + "/new", b"x"),  # WebHDFS reports it on close
        lambda: hdfs.makedirs(url + "/sub"),
        lambda: hdfs.delete(url, recursive=True),
    ]
    for check in checks:
        with pytest.raises(hdfs.HdfsPermissionError) as err:
            check()
        msg = str(err.value)
        assert "'bob'" in msg and url in msg, msg
        assert isinstance(err.value, PermissionError)
    # alice owns it and may read it
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    with hdfs.open(url + "/secret") as f:
        assert f.read() == b"secret"


@pytest.mark.parametrize("scheme", ["hdfs", "webhdfs"])
def test_unreachable_namenode_fails_fast(scheme):
    port = _closed_port()
    url = f"{scheme}://127.0.0.1:{port}/data/x"
    t0 = time.monotonic()
    with pytest.raises(HdfsError) as err:
        hdfs.stat(url)
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
            hdfs.stat(f"{scheme}://127.0.0.1:{port}/x")
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
    assert hdfs.stat(url).replication == 2
    out = bytearray()
    try:
        with hdfs.open(url) as f:
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


# -- the developer command ---------------------------------------------------------------------


def test_dev_command_prints_urls_and_stops_on_sigterm(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get(
        "PYTHONPATH", ""
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfrecord_io.testing.minihdfs",
            "--build",  # resolve a classpath with Maven if the setup wrote none
            "--base-dir",
            str(tmp_path / "dev"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("export HADOOP_CONF_DIR="):
                ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert ready.wait(120), "".join(lines)
        text = "".join(lines)
        assert "hdfs://127.0.0.1:" in text and "webhdfs://127.0.0.1:" in text
        conf_dir = text.split("export HADOOP_CONF_DIR=")[1].split()[0]
        assert Path(conf_dir, "core-site.xml").is_file()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
