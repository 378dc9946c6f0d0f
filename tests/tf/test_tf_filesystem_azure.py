"""TensorFlow itself reads and writes ``az://`` and ``abfs://`` through tfrecord-io's file system
plugin, served by tfrecord_io.fs, against the session's real Azure Blob server (conftest.py's
``azurite``), configured the way Azure's tools are (``azure_env``). What every store the plugin
serves does alike (gfile's operations, checkpoints, Keras models, SavedModels) is in
``test_tf_filesystem_stores.py``."""

from __future__ import annotations

import os
import uuid

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf

from tfrecord_io import fs, records
from tfrecord_io import tf as tfr
from tfrecord_io.tf import datasets as tf_datasets
from tfrecord_io.tf import plugin as tf_plugin

from tf_records import some_records, tf_read


@pytest.fixture(scope="module", autouse=True)
def _registered():
    tfr.register_filesystems()


@pytest.fixture
def base(azure_env, azure_container, request):
    """A fresh prefix of the session's container."""
    return f"az://{azure_container}/tf-fs/{request.node.name}-{uuid.uuid4().hex[:8]}"


def test_the_plugin_serves_the_azure_schemes():
    assert {"az", "abfs", "abfss"} <= set(tf.io.gfile.get_registered_schemes())
    assert all(tf_plugin.serves(f"{s}://c/k") for s in ("az", "abfs", "abfss"))


def test_tfrecord_dataset_reads_az_and_abfs_urls(base, azurite, azure_container):
    recs = some_records(2000, 1)  # ~3 MB
    url = f"{base}/data.tfrecord"
    records.write(url, recs)
    assert tf_read(url) == recs
    assert tf_read(url, buffer_size=1000) == recs  # many small reads, each at its offset
    abfs = url.replace(f"az://{azure_container}/",
                       f"abfs://{azure_container}@{azurite.account_name}.dfs.core.windows.net/")
    assert tf_read(abfs) == recs


def test_dataset_reads_az_shards_with_tensorflows_reader(base, monkeypatch):
    recs = some_records(600, 4)
    records.write(f"{base}/part-0.tfrecord", recs[:300])
    records.write(f"{base}/part-1.tfrecord", recs[300:])
    monkeypatch.setattr(tf_datasets, "_python_dataset", None)  # the Python reader must not be used
    assert [bytes(r) for r in tfr.dataset(base).as_numpy_iterator()] == recs


def test_tfrecord_writer_output_appears_when_closed(base):
    recs = some_records(500, 3)
    url = f"{base}/written.tfrecord"
    with tf.io.TFRecordWriter(url) as w:
        for r in recs:
            w.write(r)
        w.flush()
        assert not fs.exists(url)  # staged until closed
    assert list(records.read(url)) == recs


def test_errors_name_the_url(base, monkeypatch):
    url = f"{base}/missing.tfrecord"
    with pytest.raises(tf.errors.NotFoundError, match=url):
        tf_read(url)
    records.write(f"{base}/data.tfrecord", [b"x"])
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "AAAA" + "B" * 84)
    with pytest.raises(tf.errors.PermissionDeniedError, match=f"access denied to {base}"):
        tf_read(f"{base}/data.tfrecord")
