"""TensorFlow reading ``http://`` URLs through tfrecord-io's plugin, which serves inside
TensorFlow every scheme ``tfrecord_io.fs`` serves and TensorFlow lacks: records and files from a
real server (http.server on 127.0.0.1, in a thread), read-only as in ``fs``."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import random
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pytest
import tensorflow as tf

from tfrecord_io import fs, records
from tfrecord_io import tf as tfr
from tfrecord_io.fs.backend import FileInfo
from tfrecord_io.fs.local import LocalFileSystem
from tfrecord_io.tf import plugin as tf_plugin

from webserver import BROKEN_AT, serving

RECORDS = [b"r%d" % i * (1 + i % 7) for i in range(5000)]


@pytest.fixture(scope="module", autouse=True)
def _plugin():
    tfr.register_filesystems()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    """``http://127.0.0.1:PORT/ranged/`` serving two record files (and honouring ``Range``)."""
    root = tmp_path_factory.mktemp("www")
    (root / "ranged").mkdir()
    records.write(root / "ranged" / "part-0.tfrecord", RECORDS[:3000])
    records.write(root / "ranged" / "part-1.tfrecord.gz", RECORDS[3000:], compression="gzip")
    with serving(root) as url:
        yield f"{url}/ranged"


def test_every_scheme_fs_serves_is_served_inside_tensorflow():
    served = set(tf.io.gfile.get_registered_schemes())
    assert set(fs.protocols()) - {"file"} <= served
    assert set(tf_plugin.SCHEMES) == set(fs.protocols()) - {"file", *tf_plugin.TENSORFLOW_OWN}


def test_tfrecord_dataset_reads_plain_and_gzip_files_over_http(server):
    plain = tf.data.TFRecordDataset(f"{server}/part-0.tfrecord")
    gzip = tf.data.TFRecordDataset(f"{server}/part-1.tfrecord.gz", compression_type="GZIP")
    got = [bytes(r) for r in plain.as_numpy_iterator()] + [
        bytes(r) for r in gzip.as_numpy_iterator()]
    assert got == RECORDS


def test_tfr_dataset_of_http_urls_reads_every_record_once(server):
    urls = [f"{server}/part-0.tfrecord", f"{server}/part-1.tfrecord.gz"]
    got = sorted(bytes(r) for r in tfr.dataset(urls).as_numpy_iterator())
    assert got == sorted(RECORDS)


def test_gfile_stats_and_reads_from_an_offset(server):
    url = f"{server}/part-0.tfrecord"
    size = fs.stat(url).size
    assert tf.io.gfile.exists(url) and not tf.io.gfile.exists(f"{server}/missing")
    assert tf.io.gfile.stat(url).length == size
    with tf.io.gfile.GFile(url, "rb") as f:
        f.seek(size - 100)
        assert f.read() == fs.open(url).read()[-100:]


def test_http_stays_read_only_inside_tensorflow(server):
    with pytest.raises(tf.errors.OpError):
        with tf.io.gfile.GFile(f"{server}/new.tfrecord", "wb") as f:
            f.write(b"x")


def test_what_http_cannot_do_is_an_unimplemented_error_naming_the_url(server):
    url = f"{server}/part-0.tfrecord"
    with pytest.raises(tf.errors.UnimplementedError, match=re.escape(f"{server}/new.tfrecord")):
        with tf.io.gfile.GFile(f"{server}/new.tfrecord", "wb") as f:
            f.write(b"x")
    with pytest.raises(tf.errors.UnimplementedError, match=re.escape(f"{server}/*")):
        tf.io.gfile.glob(f"{server}/*")
    with pytest.raises(tf.errors.UnimplementedError, match=re.escape(f"{server}/sub")):
        tf.io.gfile.makedirs(f"{server}/sub")
    with pytest.raises(tf.errors.UnimplementedError, match=re.escape(url)):
        tf.io.gfile.remove(url)
    with pytest.raises(tf.errors.UnimplementedError, match=re.escape(url)):
        tf.io.gfile.rename(url, f"{server}/moved.tfrecord")
    assert tf.io.gfile.exists(url)


def test_small_reads_anywhere_across_the_plugins_chunks_return_the_files_bytes(tmp_path):
    # The plugin asks Python for 4 MiB at a time and serves smaller reads from that chunk.
    data = bytes(random.Random(7).randbytes(9 << 20))
    (tmp_path / "blob").write_bytes(data)
    chunk = 4 << 20
    with serving(tmp_path) as url, tf.io.gfile.GFile(f"{url}/blob", "rb") as f:
        for offset, n in [(0, 10), (chunk - 5, 10), (chunk, 1), (100, 3), (2 * chunk - 1, 2),
                          (len(data) - 7, 100), (1, chunk + 3), (chunk + 17, 256 << 10)]:
            f.seek(offset)
            assert f.read(n) == data[offset:offset + n], (offset, n)


# -- the plugin's read-ahead (a reader that does not fetch ahead itself, as http's) ----------


def test_reads_served_by_the_read_ahead_return_every_byte_in_order(tmp_path):
    recs = [random.Random(i).randbytes(1000 + i % 5000) for i in range(6000)]  # ~18 MB
    records.write(tmp_path / "big.tfrecord", recs)
    with serving(tmp_path) as url:
        big = f"{url}/big.tfrecord"
        # 8 MiB reads straight into TensorFlow's buffer, and 256 KiB ones from 4 MiB chunks.
        for buffer_size in (8 << 20, 256 << 10):
            got = tf.data.TFRecordDataset(big, buffer_size=buffer_size)
            assert [bytes(r) for r in got.as_numpy_iterator()] == recs
        with tf.io.gfile.GFile(big, "rb") as f:
            assert f.read() == (tmp_path / "big.tfrecord").read_bytes()


def test_a_failed_read_ahead_fails_the_read_that_needs_its_bytes_naming_the_url(tmp_path):
    data = random.Random(3).randbytes(3 * BROKEN_AT)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "blob").write_bytes(data)
    with serving(tmp_path) as url, tf.io.gfile.GFile(f"{url}/broken/blob", "rb") as f:
        # The first chunk is read whole; the read-ahead of the next one breaks off.
        assert f.read(1 << 20) == data[: 1 << 20]
        with pytest.raises(tf.errors.OpError, match=re.escape(f"{url}/broken/blob")):
            f.read(BROKEN_AT)


def test_a_process_that_exits_while_the_plugin_reads_ahead_exits_cleanly(tmp_path):
    records.write(tmp_path / "big.tfrecord", [bytes(1000)] * 20000)
    program = textwrap.dedent("""
        import sys
        import tensorflow as tf
        from tfrecord_io import tf as tfr
        tfr.register_filesystems()
        ds = tf.data.TFRecordDataset(sys.argv[1], buffer_size=4 << 20)
        it = iter(ds)
        next(it)  # the read-ahead of the next 4 MiB is under way
        print("read one", flush=True)
    """)
    with serving(tmp_path) as url:
        done = subprocess.run([sys.executable, "-c", program, f"{url}/big.tfrecord"],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "read one\n"
    assert "Fatal Python error" not in done.stderr


class _LocalReader(io.RawIOBase):
    """A local file read at most *step* bytes at a time (as raw readers may), each read's
    ``(offset, bytes asked)`` appended to *reads*."""

    def __init__(self, path: str, step: int, reads: list[tuple[int, int]]) -> None:
        super().__init__()
        self._f = open(path, "rb")  # noqa: SIM115 - closed by close
        self._step, self._reads = step, reads

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._f.seek(offset, whence)

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        self._reads.append((self._f.tell(), len(view)))
        return self._f.readinto(view[:self._step])

    def close(self) -> None:
        self._f.close()
        super().close()


class _LocalAsHttp(LocalFileSystem):
    """``http://HOST/PATH`` served from the local *root*/PATH by :class:`_LocalReader` (no
    read-ahead of its own: the plugin's reads ahead)."""

    protocols = ("http",)

    def __init__(self, root: str, step: int = 1 << 40) -> None:
        self.root, self.step = root, step
        self.reads: list[tuple[int, int]] = []

    def _local(self, url: str) -> str:
        return self.root + "/" + url.split("/", 3)[3]

    def open(self, target: str, mode: str, **options) -> BinaryIO:
        return _LocalReader(self._local(target), self.step, self.reads)  # type: ignore[return-value]

    def stat(self, target: str) -> FileInfo:
        return dataclasses.replace(super().stat(self._local(target)), url=target)


@contextlib.contextmanager
def _http_from(root: Path, **kw) -> Iterator[_LocalAsHttp]:
    """``http://`` served by a :class:`_LocalAsHttp` of *root* inside the block."""
    served = fs.filesystem("http://127.0.0.1/x")[0]
    local = _LocalAsHttp(str(root), **kw)
    fs.register("http", local, replace=True)
    try:
        yield local
    finally:
        fs.register("http", served, replace=True)


def test_tensorflow_reads_whole_files_from_a_file_system_whose_reads_come_short(tmp_path):
    records.write(tmp_path / "part-0.tfrecord", RECORDS)
    with _http_from(tmp_path, step=1000):
        got = tf.data.TFRecordDataset("http://127.0.0.1/part-0.tfrecord")
        assert [bytes(r) for r in got.as_numpy_iterator()] == RECORDS


@pytest.mark.parametrize("buffer_size", [1_000_000, 3 << 20, 256 << 10])
def test_a_scan_reads_each_byte_once_whatever_tensorflows_read_size(tmp_path, buffer_size):
    recs = [random.Random(i).randbytes(1000 + i % 3000) for i in range(6000)]  # ~15 MB
    records.write(tmp_path / "big.tfrecord", recs)
    size = (tmp_path / "big.tfrecord").stat().st_size
    with _http_from(tmp_path) as served:
        got = tf.data.TFRecordDataset("http://127.0.0.1/big.tfrecord", buffer_size=buffer_size)
        assert [bytes(r) for r in got.as_numpy_iterator()] == recs
    starts = sorted(offset for offset, _ in served.reads)
    assert starts == sorted(set(starts))  # no byte range asked for twice
    assert sum(n for _, n in served.reads) <= size + 2 * (4 << 20)  # the read-ahead past the end


def test_random_reads_start_no_read_ahead(tmp_path):
    data = random.Random(5).randbytes(40 << 20)
    (tmp_path / "blob").write_bytes(data)
    offsets = [31 << 20, 7 << 20, 19 << 20, 2 << 20]
    with _http_from(tmp_path) as served, tf.io.gfile.GFile("http://127.0.0.1/blob", "rb") as f:
        for offset in offsets:
            f.seek(offset)
            assert f.read(100) == data[offset:offset + 100]
    assert len(served.reads) == len(offsets)  # a chunk each, nothing ahead
    assert all(n == 4 << 20 for _, n in served.reads)


def test_a_child_forked_while_the_plugin_reads_ahead_exits(tmp_path):
    (tmp_path / "blob").write_bytes(bytes(12 << 20))
    program = textwrap.dedent("""
        import io, os, sys, time
        import tensorflow as tf
        from tfrecord_io import fs
        from tfrecord_io import tf as tfr
        from tfrecord_io.fs.backend import FileInfo
        from tfrecord_io.fs.local import LocalFileSystem

        class Slow(io.FileIO):  # reads after the first take a second: the read-ahead's
            def readinto(self, buffer):
                if self.tell():
                    time.sleep(1)
                return super().readinto(buffer)

        class SlowHttp(LocalFileSystem):
            def open(self, target, mode, **options):
                return Slow(sys.argv[1])

            def stat(self, target):
                info = super().stat(sys.argv[1])
                return FileInfo(target, info.size, False, info.mtime)

        fs.register("http", SlowHttp(), replace=True)
        tfr.register_filesystems()
        f = tf.io.gfile.GFile("http://127.0.0.1/blob", "rb")
        assert len(f.read(10)) == 10  # the read-ahead of the next 4 MiB is under way
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # the interpreter's exit, atexit handlers and all
        _, code = os.waitpid(pid, 0)
        print("child exited", os.waitstatus_to_exitcode(code), flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path / "blob")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "child exited 0\n"


def test_a_file_opened_before_a_fork_is_refused_in_the_child_naming_it(tmp_path):
    (tmp_path / "blob").write_bytes(bytes(12 << 20))
    program = textwrap.dedent("""
        import os, sys
        import tensorflow as tf
        from tfrecord_io import fs
        from tfrecord_io import tf as tfr
        from tfrecord_io.fs.backend import FileInfo
        from tfrecord_io.fs.local import LocalFileSystem

        class Http(LocalFileSystem):
            def open(self, target, mode, **options):
                return open(sys.argv[1], "rb")

            def stat(self, target):
                info = super().stat(sys.argv[1])
                return FileInfo(target, info.size, False, info.mtime)

        fs.register("http", Http(), replace=True)
        tfr.register_filesystems()
        f = tf.io.gfile.GFile("http://127.0.0.1/blob", "rb")
        assert len(f.read(10)) == 10
        pid = os.fork()
        if pid == 0:
            try:
                f.seek(8 << 20)  # beyond what the parent's buffer holds: a read of the plugin's
                f.read(10)
                print("read", flush=True)
            except tf.errors.FailedPreconditionError as e:
                print("refused", e.message, flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path / "blob")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused http://127.0.0.1/blob was opened before os.fork() "
                                  "by the parent process"), done.stdout + done.stderr[-2000:]
    assert "open it again here" in done.stdout
