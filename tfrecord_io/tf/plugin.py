"""The bridge to tfrecord-io's TensorFlow file system plugin for ``hdfs://`` and ``webhdfs://``.

HDFS inside TensorFlow (:func:`register_filesystems`)
----------------------------------------------------
tfrecord-io ships a TensorFlow file system plugin (built at install time against the installed
TensorFlow) that teaches TensorFlow the ``hdfs://`` and ``webhdfs://`` URLs of
:mod:`tfrecord_io.hdfs`: same NameNode addresses, ``HADOOP_CONF_DIR``, user and DataNode failover,
served by the hdfs-native client with no JVM and no libhdfs. After
:func:`register_filesystems` (which :func:`dataset` calls for HDFS inputs) everything in
TensorFlow takes these URLs: ``tf.data.TFRecordDataset``, ``tf.io.gfile``, ``tf.io.TFRecordWriter``,
checkpoints, ``model.save``. Appending to an existing HDFS file is not supported.

The plugin's C++ half is ``tfrecord_io/_native/tf_filesystem.cc``; its Python half, the
callbacks it calls, is :mod:`tfrecord_io.tf.filesystem`.
"""

from __future__ import annotations

import logging
import threading

from tfrecord_io.errors import PluginNotBuiltError, TFRecordError
from tfrecord_io.tf import filesystem as _filesystem
from tfrecord_io.tf.runtime import import_tensorflow

__all__ = ["register_filesystems", "hdfs_in_tensorflow"]

log = logging.getLogger(__name__)

_filesystems_lock = threading.Lock()
_filesystems_error: BaseException | None = None  # why the plugin could not be registered


def register_filesystems() -> None:
    """Makes ``hdfs://`` and ``webhdfs://`` URLs work everywhere in TensorFlow, in this process.

    Loads tfrecord-io's TensorFlow file system plugin (``tf.experimental.register_filesystem_plugin``)
    and connects it to :mod:`tfrecord_io.hdfs`. Afterwards ``tf.data.TFRecordDataset``,
    ``tf.io.gfile``, ``tf.io.TFRecordWriter``, checkpoints and ``model.save`` take the URLs that
    Spark uses. Safe to call more than once, from any thread.

    Raises:
        PluginNotBuiltError: the package was installed without TensorFlow present, so the plugin
            was not compiled (reinstall with TensorFlow installed).
        TFRecordError: TensorFlow refused the plugin (e.g. another plugin, such as
            tensorflow-io's, already serves ``hdfs://`` in this process).
    """
    with _filesystems_lock:
        if _filesystem.installed():
            return
        path = _filesystem.plugin_path()
        tf = import_tensorflow()
        try:
            tf.experimental.register_filesystem_plugin(str(path))
        except tf.errors.OpError as e:
            raise TFRecordError(
                f"TensorFlow did not accept tfrecord-io's hdfs:// file system plugin {path}: "
                f"{e.message}"
            ) from e
        _filesystem.install(path)


def hdfs_in_tensorflow() -> bool:
    """Whether TensorFlow can read hdfs:// itself (registering the plugin on first use)."""
    global _filesystems_error
    if _filesystems_error is None:
        try:
            register_filesystems()
        except (PluginNotBuiltError, TFRecordError) as e:
            _filesystems_error = e
            log.warning("reading HDFS with tfrecord-io's Python reader (slower): %s", e)
    return _filesystems_error is None
