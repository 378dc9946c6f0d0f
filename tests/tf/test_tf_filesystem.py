"""TensorFlow itself reads and writes ``hdfs://`` and ``webhdfs://`` through tfrecord-io's file
system plugin: ``tf.data.TFRecordDataset``, ``tf.io.gfile``'s errors and ``tf.io.TFRecordWriter``,
against the session's real HDFS (conftest.py's ``hdfs``). What every store the plugin serves
does alike (gfile's operations, checkpoints, Keras models, SavedModels) is in
``test_tf_filesystem_stores.py``.
"""

from __future__ import annotations

import collections
import os
import socket
import time
import uuid

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf

from tfrecord_io import fs, records
from tfrecord_io import spark as tfs
from tfrecord_io import tf as tfr
from tfrecord_io.errors import PluginNotBuiltError
from tfrecord_io.fs import hdfs as fs_hdfs
from tfrecord_io.tf import datasets as tf_datasets
from tfrecord_io.tf import filesystem as _tf_filesystem
from tfrecord_io.tf import plugin as tf_plugin

from tf_records import assert_next_files_opened_ahead, some_records, spy_opens, tf_read


@pytest.fixture(scope="module", autouse=True)
def _registered():
    tfr.register_filesystems()


@pytest.fixture
def base(hdfs_dir):
    """A fresh directory URL, once through hdfs:// and once through webhdfs://."""
    return hdfs_dir


# -- registration ----------------------------------------------------------------------------


def test_register_filesystems_is_idempotent():
    tfr.register_filesystems()
    tfr.register_filesystems()
    assert _tf_filesystem.installed()


def test_a_missing_plugin_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(_tf_filesystem, "PLUGIN_NAME", "libnot-there.so")
    with pytest.raises(PluginNotBuiltError, match="reinstall tfrecord-io"):
        _tf_filesystem.plugin_path()


# -- reading ---------------------------------------------------------------------------------


def test_tfrecord_dataset_reads_hdfs_urls(base):
    recs = some_records(3000, 1)  # ~4.5 MB: several 1 MiB blocks
    url = f"{base}/data.tfrecord"
    records.write(url, recs)
    assert tf_read(url) == recs
    assert tf_read(url, buffer_size=1000) == recs  # many small reads, each at its offset


def test_tensorflow_reads_what_spark_wrote_to_hdfs(spark, hdfs):
    sc = spark.sparkContext
    sc._jsc.hadoopConfiguration().set("dfs.replication", "2")
    recs = some_records(2000, 2)
    url = f"{hdfs.url}/tf-fs/spark-{uuid.uuid4().hex[:8]}"
    tfs.save_records(sc.parallelize(recs, 3), url, compression="gzip")
    parts = tf.io.gfile.glob(url + "/part-*")
    assert len(parts) == 3 and all(p.endswith(".tfrecord.gz") for p in parts)
    got = tf_read(*parts, compression_type="GZIP")
    assert collections.Counter(got) == collections.Counter(recs)


def test_tfrecord_writer_output_is_read_by_spark(spark, hdfs):
    recs = some_records(1500, 3)
    url = f"{hdfs.url}/tf-fs/tf-wrote-{uuid.uuid4().hex[:8]}"
    tf.io.gfile.makedirs(url)
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    with tf.io.TFRecordWriter(f"{url}/part-0.tfrecord.gz", options) as w:
        for r in recs[:700]:
            w.write(r)
    with tf.io.TFRecordWriter(f"{url}/part-1.tfrecord") as w:
        for r in recs[700:]:
            w.write(r)
    got = tfs.load_records(spark.sparkContext, url).collect()
    assert collections.Counter(got) == collections.Counter(recs)


def test_dataset_reads_hdfs_files_with_tensorflows_reader(base, monkeypatch):
    recs = some_records(1000, 4)
    records.write(f"{base}/part-0.tfrecord", recs[:500])
    records.write(f"{base}/part-1.tfrecord", recs[500:])
    monkeypatch.setattr(tf_datasets, "_python_dataset", None)  # the Python reader must not be used
    got = [bytes(r) for r in tfr.dataset(base).as_numpy_iterator()]
    assert got == recs
    shards = [
        [bytes(r) for r in tfr.dataset(base, num_shards=2, shard_index=k).as_numpy_iterator()]
        for k in range(2)
    ]
    assert shards == [recs[:500], recs[500:]]


def test_dataset_opens_each_next_hdfs_file_while_tensorflow_reads_the_one_before(
    base, monkeypatch
):
    assert_next_files_opened_ahead(base, monkeypatch)


def test_an_empty_hdfs_file_opened_ahead_is_not_opened_again(base, monkeypatch):
    recs = some_records(400, 6)
    records.write(f"{base}/part-0.tfrecord", recs[:200])
    records.write(f"{base}/part-1.tfrecord", [])
    records.write(f"{base}/part-2.tfrecord", recs[200:])
    opened = spy_opens(monkeypatch)
    assert [bytes(r) for r in tfr.dataset(base).as_numpy_iterator()] == recs
    data_opens = [u.rsplit("/", 1)[1] for u, _, _ in opened if u.endswith(".tfrecord")]
    assert data_opens == ["part-0.tfrecord", "part-1.tfrecord", "part-2.tfrecord"]


@pytest.mark.parametrize(
    ("buffer_size", "started"),
    [(None, tf_datasets.REMOTE_BUFFER_BYTES), (64 << 20, 32 << 20)],
    ids=["dataset's read size", "at most the plugin's largest read-ahead"],
)
def test_the_next_hdfs_file_is_started_for_the_size_of_tensorflows_reads(
    base, monkeypatch, buffer_size, started
):
    """The file opened ahead buffers what TensorFlow's first read of it will ask for: as much as
    it asked for at a time in the file before, up to 32 MiB."""
    recs = some_records(600, 5)
    for k in range(3):
        records.write(f"{base}/part-{k}.tfrecord", recs[200 * k : 200 * (k + 1)])
    sizes = {}
    real_start = fs_hdfs.HdfsReader.start

    def start(self, size=0):
        sizes[self.name.rsplit("/", 1)[1]] = size
        real_start(self, size)

    monkeypatch.setattr(fs_hdfs.HdfsReader, "start", start)
    got = tfr.dataset(base, buffer_size=buffer_size).as_numpy_iterator()
    assert [bytes(r) for r in got] == recs
    assert sizes == {"part-1.tfrecord": started, "part-2.tfrecord": started}


def test_without_the_plugin_dataset_falls_back_to_the_python_reader(base, monkeypatch):
    recs = some_records(300, 5)
    records.write(f"{base}/part-0.tfrecord", recs)
    monkeypatch.setattr(tf_plugin, "_filesystems_error", PluginNotBuiltError("not built"))
    # TensorFlow's reader must not be used
    monkeypatch.setattr(tf_datasets, "_native_dataset", None)
    assert [bytes(r) for r in tfr.dataset(base).as_numpy_iterator()] == recs


def test_damaged_hdfs_file_is_a_data_loss_error(base):
    recs = some_records(50, 6)
    url = f"{base}/bad.tfrecord"
    records.write(url, recs)
    with fs.open(url) as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    with fs.open(url, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        tf_read(url)


# -- tf.io.gfile -----------------------------------------------------------------------------


def test_missing_paths_are_not_found_errors_naming_the_url(base):
    url = f"{base}/missing.tfrecord"
    with pytest.raises(tf.errors.NotFoundError, match=url.split("://")[1]):
        tf_read(url)
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.stat(url)


def test_a_directory_under_a_file_is_a_failed_precondition_naming_the_file(base):
    with tf.io.gfile.GFile(f"{base}/f", "w") as f:
        f.write("a file")
    with pytest.raises(tf.errors.FailedPreconditionError, match=f"{base}/f is a file"):
        tf.io.gfile.makedirs(f"{base}/f/g/h")
    assert not tf.io.gfile.isdir(f"{base}/f")


def test_a_file_under_a_file_is_a_failed_precondition_naming_the_file(base):
    with tf.io.gfile.GFile(f"{base}/f", "w") as f:
        f.write("a file")
    with pytest.raises(tf.errors.FailedPreconditionError, match=f"{base}/f is a file"):
        with tf.io.TFRecordWriter(f"{base}/f/part-0.tfrecord") as w:
            w.write(b"record")
    with tf.io.gfile.GFile(f"{base}/f") as f:
        assert f.read() == "a file"


def test_permission_denied_is_a_permission_error(hdfs, monkeypatch):
    import hdfs_native

    path = "/tf-fs/private-" + uuid.uuid4().hex[:8]
    monkeypatch.setenv("HADOOP_USER_NAME", hdfs.superuser)
    fs_hdfs.clear_client_cache()
    root = hdfs_native.Client(hdfs.url)
    root.mkdirs(path, 0o700, True)
    with root.create(path + "/secret") as w:
        w.write(b"secret")
    root.set_owner(path, "alice", "alice")
    monkeypatch.setenv("HADOOP_USER_NAME", "bob")
    fs_hdfs.clear_client_cache()
    try:
        with pytest.raises(tf.errors.PermissionDeniedError, match="'bob'"):
            tf_read(f"{hdfs.url}{path}/secret")
    finally:
        monkeypatch.delenv("HADOOP_USER_NAME")
        fs_hdfs.clear_client_cache()


def test_unreachable_namenode_fails_fast():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    t0 = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError, match=f"127.0.0.1:{port}"):
        tf_read(f"hdfs://127.0.0.1:{port}/data/x.tfrecord")
    assert time.monotonic() - t0 < 10
