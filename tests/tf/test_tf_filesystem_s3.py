"""TensorFlow itself reads and writes ``s3://`` through tfrecord-io's file system plugin, served
by tfrecord_io.fs: ``tf.data.TFRecordDataset``, ``tf.io.gfile``'s errors and
``tf.io.TFRecordWriter``, against the session's real S3 server (conftest.py's ``s3``: moto's,
every request signed), configured the standard AWS way (``s3_env``). TensorFlow's own ``gs://``
stays. What every store the plugin serves does alike (gfile's operations, checkpoints, Keras
models, SavedModels) is in ``test_tf_filesystem_stores.py``."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf

from tfrecord_io import fs, records
from tfrecord_io import tf as tfr
from tfrecord_io.fs.readahead import ReadAhead
from tfrecord_io.tf import datasets as tf_datasets
from tfrecord_io.tf import filesystem as tf_filesystem
from tfrecord_io.tf import plugin as tf_plugin
from tfrecord_io.tf.datasets import REMOTE_BUFFER_BYTES

from tf_records import assert_next_files_opened_ahead, some_records, spy_opens, tf_read
from waiting import wait_until
from webserver import BROKEN_AT, serving


@pytest.fixture(scope="module", autouse=True)
def _registered():
    tfr.register_filesystems()


@pytest.fixture
def base(s3_env, s3_bucket, request):
    """A fresh prefix of the session's bucket."""
    return f"s3://{s3_bucket}/tf-fs/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"


def test_the_plugin_serves_s3_and_leaves_gs_to_tensorflow():
    schemes = set(tf.io.gfile.get_registered_schemes())
    assert {"hdfs", "webhdfs", "s3", "gs"} <= schemes
    assert "s3" in tf_plugin.SCHEMES
    assert tf_plugin.serves("s3://b/k") and not tf_plugin.serves("gs://b/k")


# -- reading ---------------------------------------------------------------------------------


def test_tfrecord_dataset_reads_s3_urls(base):
    recs = some_records(2000, 1)  # ~3 MB
    url = f"{base}/data.tfrecord"
    records.write(url, recs)
    assert tf_read(url) == recs
    assert tf_read(url, buffer_size=1000) == recs  # many small reads, each at its offset
    records.write(f"{base}/data.tfrecord.gz", recs[:300])
    assert tf_read(f"{base}/data.tfrecord.gz", compression_type="GZIP") == recs[:300]


def test_dataset_reads_s3_files_with_tensorflows_reader(base, monkeypatch):
    recs = some_records(600, 4)
    records.write(f"{base}/part-0.tfrecord", recs[:300])
    records.write(f"{base}/part-1.tfrecord", recs[300:])
    monkeypatch.setattr(tf_datasets, "_python_dataset", None)  # the Python reader must not be used
    assert [bytes(r) for r in tfr.dataset(base).as_numpy_iterator()] == recs
    shards = [
        [bytes(r) for r in tfr.dataset(base, num_shards=2, shard_index=k).as_numpy_iterator()]
        for k in range(2)
    ]
    assert shards == [recs[:300], recs[300:]]


def test_dataset_opens_each_next_s3_file_while_tensorflow_reads_the_one_before(base, monkeypatch):
    assert_next_files_opened_ahead(base, monkeypatch)


def test_the_next_s3_file_is_fetched_once_the_one_before_is_fetched_to_its_end(base,
                                                                              monkeypatch):
    """Not only when TensorFlow reaches the end: a store's reader has all of a file's blocks on
    their way well before, and the next file's first blocks can travel meanwhile."""
    recs = some_records(14_000, 8)  # about 21 MB: several TensorFlow reads of 8 MiB
    records.write(f"{base}/part-0.tfrecord", recs)
    records.write(f"{base}/part-1.tfrecord", recs[:10])
    next_started = threading.Event()
    real_start, real_readinto = ReadAhead.start, ReadAhead.readinto
    waits = []

    def start(self, size=0):
        if self.name.endswith("part-1.tfrecord"):
            next_started.set()
        real_start(self, size)

    def readinto(self, buffer):
        # TensorFlow's reads of part-0 past its first 8 MiB wait until part-1's fetches began.
        if self.name.endswith("part-0.tfrecord") and self.tell() >= REMOTE_BUFFER_BYTES:
            waits.append(next_started.wait(10))
        return real_readinto(self, buffer)

    monkeypatch.setattr(ReadAhead, "start", start)
    monkeypatch.setattr(ReadAhead, "readinto", readinto)
    assert [bytes(r) for r in tfr.dataset(base).as_numpy_iterator()] == recs + recs[:10]
    assert waits and all(waits)


def test_files_opened_ahead_for_another_reader_are_closed_unread(base, monkeypatch):
    recs = some_records(30, 6)
    firsts = [f"{base}/a{k}.tfrecord" for k in range(3)]
    nexts = [f"{base}/b{k}.tfrecord" for k in range(3)]
    for url in firsts + nexts:
        records.write(url, recs)
    opened = spy_opens(monkeypatch)
    # An open on the thread that read the file before to its end, within the grace, is that
    # reader moving on (TensorFlow's threads are reused): here every later open is another's.
    monkeypatch.setattr(tf_filesystem, "_AHEAD_GRACE", 0.0)
    for first, after in zip(firsts, nexts, strict=True):
        tf_filesystem.expect_reads([first, after])
        assert tf_read(first) == recs  # opens `after` ahead, which this reader never reads

    def opened_ahead():  # the open-ahead thread opens the last one after tf_read returned
        return {u: f for u, t, f in opened if t.startswith("tfrecord-io-open-ahead")}

    wait_until(lambda: set(opened_ahead()) == set(nexts) and opened_ahead()[nexts[0]].closed,
               timeout=10, every=0.01)
    ahead = opened_ahead()
    assert ahead[nexts[0]].closed  # the third opened ahead dropped the first: two at most
    assert not ahead[nexts[2]].closed
    for url in nexts[1:]:  # another reader's open: the file is opened afresh
        assert tf_read(url) == recs
        assert len([u for u, _, _ in opened if u == url]) == 2
        wait_until(lambda url=url: ahead[url].closed, timeout=10, every=0.01)


def test_a_file_rewritten_after_it_was_opened_ahead_is_read_as_it_is_now(base):
    a, b = f"{base}/a.tfrecord", f"{base}/b.tfrecord"
    records.write(a, some_records(100, 4))
    records.write(b, [b"old"] * 100)
    assert next(iter(tfr.dataset([a, b]))).numpy()  # b is opened ahead, then left
    records.write(b, [b"new"] * 300)
    assert tf_read(b) == [b"new"] * 300


def test_a_file_removed_after_it_was_opened_ahead_is_not_found(base):
    a, b = f"{base}/a.tfrecord", f"{base}/b.tfrecord"
    records.write(a, some_records(100, 4))
    records.write(b, [b"old"] * 100)
    assert next(iter(tfr.dataset([a, b]))).numpy()
    tf.io.gfile.remove(b)
    with pytest.raises(tf.errors.NotFoundError):
        tf_read(b)


def test_dataset_reads_byte_ranges_of_indexed_s3_files(base):
    recs = some_records(400, 7)
    records.write(f"{base}/part-0.tfrecord", recs, index=True)
    shards = [[bytes(r) for r in tfr.dataset(base, num_shards=3, shard_index=k)
               .as_numpy_iterator()] for k in range(3)]
    assert all(shards) and [r for s in shards for r in s] == recs


def test_tfrecord_writer_output_appears_when_closed(base):
    recs = some_records(500, 3)
    url = f"{base}/written.tfrecord"
    with tf.io.TFRecordWriter(url) as w:
        for r in recs:
            w.write(r)
        w.flush()
        assert not fs.exists(url)  # staged until closed
    assert list(records.read(url)) == recs


def test_a_copy_whose_source_breaks_off_publishes_nothing(base, tmp_path):
    # TensorFlow drops the target without closing it when the source fails: abandoned.
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "blob").write_bytes(os.urandom(3 * BROKEN_AT))
    with serving(tmp_path) as url, pytest.raises(tf.errors.OpError, match="broken/blob"):
        tf.io.gfile.copy(f"{url}/broken/blob", f"{base}/copy")
    assert not fs.exists(f"{base}/copy")


def test_damaged_s3_file_is_a_data_loss_error(base):
    url = f"{base}/bad.tfrecord"
    records.write(url, some_records(50, 6))
    with fs.open(url) as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    with fs.open(url, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        tf_read(url)


# -- tf.io.gfile -----------------------------------------------------------------------------


def test_errors_name_the_url(base, s3_env, monkeypatch):
    url = f"{base}/missing.tfrecord"
    with pytest.raises(tf.errors.NotFoundError, match=url):
        tf_read(url)
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.stat(url)
    with pytest.raises(tf.errors.FailedPreconditionError, match="no-such-bucket-here"):
        tf.io.gfile.exists("s3://no-such-bucket-here/x")
    records.write(f"{base}/data.tfrecord", [b"x"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(tf.errors.PermissionDeniedError, match=f"access denied to {base}"):
        tf_read(f"{base}/data.tfrecord")


def test_an_unreachable_endpoint_is_unavailable_within_seconds(s3_env, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    started = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError, match="s3://any-bucket/x.tfrecord"):
        tf_read("s3://any-bucket/x.tfrecord")
    assert time.monotonic() - started < 20
