"""What TensorFlow does with files behaves the same on every remote scheme the plugin serves:
``tf.io.gfile`` and the training state (checkpoints, Keras models, SavedModels), on ``hdfs://`` and
``webhdfs://`` (conftest.py's ``hdfs``), ``s3://`` (``s3``: moto's server, every request signed)
and ``az://`` (``azurite``), each configured the way its own tools are. What only one store
does is tested beside its scheme (``test_tf_filesystem.py``, ``_s3.py``, ``_azure.py``)."""

from __future__ import annotations

import os
import re
import uuid

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest
import stores
import tensorflow as tf

from tfrecord_io import fs
from tfrecord_io import tf as tfr


@pytest.fixture(scope="module", autouse=True)
def _registered():
    tfr.register_filesystems()


@pytest.fixture(params=stores.params("hdfs", "webhdfs", "s3", "az"))
def base(request):
    """A fresh, existing directory URL of one store (only that store's server is started).
    Not ``gs://``, which is TensorFlow's own."""
    url = f"{stores.root(request, request.param)}/tf-fs/{request.node.name.split('[')[0]}-"
    url += uuid.uuid4().hex[:8]
    fs.makedirs(url)
    return url


# -- tf.io.gfile -----------------------------------------------------------------------------


def test_gfile_write_read_stat_list_glob_walk(base):
    with tf.io.gfile.GFile(f"{base}/a/b/hello.txt", "w") as f:
        f.write("hello ")
        f.write("store")
    assert tf.io.gfile.exists(f"{base}/a/b/hello.txt")
    assert not tf.io.gfile.exists(f"{base}/a/b/nope.txt")
    with tf.io.gfile.GFile(f"{base}/a/b/hello.txt") as f:
        assert f.read() == "hello store"
    assert tf.io.gfile.stat(f"{base}/a/b/hello.txt").length == 11
    assert tf.io.gfile.isdir(f"{base}/a") and not tf.io.gfile.isdir(f"{base}/a/b/hello.txt")
    assert tf.io.gfile.listdir(f"{base}/a") == ["b"]
    assert tf.io.gfile.glob(f"{base}/a/*/*.txt") == [f"{base}/a/b/hello.txt"]
    assert [(d, sorted(f)) for d, _, f in tf.io.gfile.walk(f"{base}/a")] == [
        (f"{base}/a", []), (f"{base}/a/b", ["hello.txt"])]


def test_a_file_being_written_tells_how_many_bytes_it_holds(base):
    with tf.io.gfile.GFile(f"{base}/told.txt", "w") as f:
        assert f.tell() == 0
        f.write("hello")
        assert f.tell() == 5
        f.write(" store")
        assert f.tell() == 11
    assert tf.io.gfile.stat(f"{base}/told.txt").length == 11


def test_a_file_renamed_onto_itself_stays(base):
    with tf.io.gfile.GFile(f"{base}/same.txt", "w") as f:
        f.write("kept")
    tf.io.gfile.rename(f"{base}/same.txt", f"{base}/same.txt", overwrite=True)
    with tf.io.gfile.GFile(f"{base}/same.txt") as f:
        assert f.read() == "kept"


def test_gfile_namespace_changes(base):
    tf.io.gfile.mkdir(f"{base}/d")
    tf.io.gfile.mkdir(f"{base}/d")  # as on local disk: already there is fine
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.mkdir(f"{base}/no/parent")
    tf.io.gfile.makedirs(f"{base}/d/e/f")
    assert tf.io.gfile.isdir(f"{base}/d/e/f")
    for name, text in (("x", "1"), ("y", "2")):
        with tf.io.gfile.GFile(f"{base}/d/{name}", "w") as f:
            f.write(text)
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.io.gfile.rename(f"{base}/d/x", f"{base}/d/y")
    tf.io.gfile.rename(f"{base}/d/x", f"{base}/d/y", overwrite=True)  # replaces, as TF expects
    assert sorted(tf.io.gfile.listdir(f"{base}/d")) == ["e", "y"]
    with tf.io.gfile.GFile(f"{base}/d/y") as f:
        assert f.read() == "1"
    tf.io.gfile.copy(f"{base}/d/y", f"{base}/d/z")
    tf.io.gfile.remove(f"{base}/d/y")
    assert sorted(tf.io.gfile.listdir(f"{base}/d")) == ["e", "z"]
    tf.io.gfile.rename(f"{base}/d", f"{base}/moved")  # a whole directory
    assert sorted(tf.io.gfile.listdir(f"{base}/moved")) == ["e", "z"]
    tf.io.gfile.rmtree(f"{base}/moved")
    assert not tf.io.gfile.exists(f"{base}/moved") and not tf.io.gfile.exists(f"{base}/d")


def test_reading_a_directory_is_a_failed_precondition_naming_it(base):
    tf.io.gfile.makedirs(f"{base}/d/e")
    with pytest.raises(tf.errors.FailedPreconditionError, match=f"{base}/d.*is a directory"):
        with tf.io.gfile.GFile(f"{base}/d", "rb") as f:
            f.read()
    with pytest.raises(tf.errors.FailedPreconditionError, match=f"{base}/d.*is a directory"):
        tf.io.gfile.copy(f"{base}/d", f"{base}/copy")
    assert not tf.io.gfile.exists(f"{base}/copy")


# -- training state --------------------------------------------------------------------------


def test_appending_to_a_new_file_creates_it_and_to_an_existing_one_is_unimplemented(base):
    url = base + "log.csv"
    with tf.io.gfile.GFile(url, "a") as f:  # Keras' CSVLogger(append=True) on a first run
        f.write("epoch,loss\n")
    assert tf.io.gfile.GFile(url, "r").read() == "epoch,loss\n"
    with pytest.raises(tf.errors.UnimplementedError, match="cannot append to an existing "
                                                          "file: " + re.escape(url)):
        with tf.io.gfile.GFile(url, "a") as f:
            f.write("0,1.5\n")
    assert tf.io.gfile.GFile(url, "r").read() == "epoch,loss\n"


def test_checkpoints_save_and_restore(base):
    url = f"{base}/ckpt"
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), url, max_to_keep=2)
    for step in range(3):
        v.assign_add(tf.ones_like(v))
        manager.save(checkpoint_number=step)
    assert tf.train.latest_checkpoint(url) == f"{url}/ckpt-2"
    assert len(tf.io.gfile.glob(f"{url}/ckpt-*.index")) == 2  # the oldest was deleted

    restored = tf.Variable(tf.zeros((2, 3)))
    tf.train.Checkpoint(v=restored).restore(tf.train.latest_checkpoint(url)).assert_consumed()
    np.testing.assert_array_equal(restored.numpy(), v.numpy())


def test_keras_model_saves_and_loads(base):
    url = f"{base}/model/model.keras"
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    model.save(url)
    assert tf.io.gfile.exists(url)
    loaded = tf.keras.models.load_model(url)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_a_saved_model_exported_there_loads_and_serves(base):
    url = f"{base}/exported"
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    x = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    model.export(url, verbose=False)
    assert tf.io.gfile.exists(f"{url}/saved_model.pb")
    served = tf.saved_model.load(url).signatures["serving_default"]
    (out,) = served(tf.constant(x)).values()
    np.testing.assert_allclose(out.numpy(), model.predict(x, verbose=0), rtol=1e-5)
