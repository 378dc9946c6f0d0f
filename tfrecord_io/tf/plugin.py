"""The bridge to tfrecord-io's TensorFlow file system plugin for ``hdfs://``, ``webhdfs://``,
``s3://``, ``az://``, ``abfs(s)://`` and ``http(s)://``: every scheme :mod:`tfrecord_io.fs`
serves that TensorFlow lacks.

HDFS and S3 inside TensorFlow (:func:`register_filesystems`)
------------------------------------------------------------
tfrecord-io ships a TensorFlow file system plugin (in the Linux x86_64 wheel, compiled against
TensorFlow 2.21; from source, compiled against the TensorFlow present at build time; if the
installed TensorFlow refuses it, :func:`filesystems_in_tensorflow` warns once and tfrecord-io
reads with its Python reader) that teaches TensorFlow the URLs of :data:`SCHEMES`, served by
:mod:`tfrecord_io.fs` exactly as in the rest of tfrecord-io: for ``hdfs://`` and ``webhdfs://``
the same NameNode addresses, ``HADOOP_CONF_DIR``, user and DataNode failover (the hdfs-native
client, no JVM, no libhdfs); for ``s3://`` the same AWS configuration (endpoint, credentials
chain, region, path-style addressing: :mod:`tfrecord_io.fs.s3`), for ``az://`` and
``abfs(s)://`` the same Azure account, key and endpoint (:mod:`tfrecord_io.fs.azure`), and on
both, writes that appear only when closed; ``http://`` and ``https://`` read-only, with ranged
requests. After :func:`register_filesystems` (which :func:`dataset` calls for such inputs)
everything in TensorFlow takes these URLs: ``tf.data.TFRecordDataset``, ``tf.io.gfile``,
``tf.io.TFRecordWriter``, checkpoints, ``model.save``. Appending to an existing file is not
supported. TensorFlow's own ``gs://`` is left as it is.

The plugin's C++ half is ``tfrecord_io/_native/tf_filesystem.cc``; its Python half, the
callbacks it calls, is :mod:`tfrecord_io.tf.filesystem`.
"""

from __future__ import annotations

import logging
import threading

from tfrecord_io.errors import PluginNotBuiltError, TFRecordError
from tfrecord_io.tf import filesystem as _filesystem
from tfrecord_io.tf.runtime import import_tensorflow

__all__ = ["SCHEMES", "TENSORFLOW_OWN", "filesystems_in_tensorflow", "hdfs_in_tensorflow",
           "register_filesystems", "serves"]

#: The URL schemes the plugin serves inside TensorFlow (those of ``TF_InitPlugin`` in
#: ``_native/tf_filesystem.cc``): every scheme :mod:`tfrecord_io.fs` serves, but ``file`` and
#: :data:`TENSORFLOW_OWN`. They
#: are fixed when TensorFlow loads the plugin: a scheme added later with ``fs.register`` is
#: served by ``fs`` alone.
SCHEMES = ("hdfs", "webhdfs", "s3", "http", "https", "az", "abfs", "abfss")
#: The schemes of :mod:`tfrecord_io.fs` that TensorFlow serves itself, left to it: ``gs://``.
TENSORFLOW_OWN = ("gs",)

log = logging.getLogger(__name__)

_filesystems_lock = threading.Lock()
_fallback_lock = threading.Lock()  # one warning, even when several threads ask at once
_filesystems_error: BaseException | None = None  # why the plugin could not be registered


def register_filesystems() -> None:
    """Makes the URLs of :data:`SCHEMES` (``hdfs://``, ``s3://``, ``az://``, ...) work
    everywhere in TensorFlow, in this process.

    Loads tfrecord-io's TensorFlow file system plugin
    (``tf.experimental.register_filesystem_plugin``) and connects it to :mod:`tfrecord_io.fs`.
    Afterwards ``tf.data.TFRecordDataset``, ``tf.io.gfile``, ``tf.io.TFRecordWriter``, checkpoints
    and ``model.save`` take the URLs that Spark and the rest of tfrecord-io use. Safe to call more
    than once, from any thread.

    Raises:
        PluginNotBuiltError: the package was installed without TensorFlow present, so the plugin
            was not compiled (reinstall with TensorFlow installed).
        TFRecordError: TensorFlow refused the plugin (e.g. another plugin, such as
            tensorflow-io's, already serves ``hdfs://`` or ``s3://`` in this process).
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
                f"TensorFlow {tf.__version__} cannot load tfrecord-io's file system "
                f"plugin {path}: {e.message}. The plugin is compiled against one TensorFlow "
                "for one platform (a wheel's: Linux x86_64, TensorFlow 2.21); to build it for "
                "this one, reinstall tfrecord-io from its source distribution with TensorFlow "
                "installed (`pip install --no-binary tfrecord-io --no-build-isolation "
                "tfrecord-io`)."
            ) from e
        try:
            _filesystem.install(path)
        except (OSError, AttributeError) as e:  # not the plugin this Python code belongs to
            raise TFRecordError(
                f"tfrecord-io's file system plugin {path} loaded but does not match this "
                f"tfrecord-io ({e}): reinstall tfrecord-io."
            ) from e


def serves(url: str) -> bool:
    """Whether *url* has one of the plugin's :data:`SCHEMES` (whether or not it is loaded)."""
    return "://" in url and url.split("://", 1)[0].lower() in SCHEMES


def filesystems_in_tensorflow() -> bool:
    """Whether TensorFlow can read the plugin's :data:`SCHEMES` itself (registering the plugin
    on first use).

    When it cannot (no plugin in this installation, or the installed TensorFlow refuses the
    bundled one: another ABI, another platform), logs one warning naming the reason, once per
    process, and returns False: :func:`~tfrecord_io.tf.dataset` then reads those URLs with
    tfrecord-io's Python reader.
    """
    global _filesystems_error
    with _fallback_lock:
        if _filesystems_error is None and not _filesystem.installed():
            try:
                register_filesystems()
            except (PluginNotBuiltError, TFRecordError) as e:
                _filesystems_error = e
                log.warning("reading %s URLs with tfrecord-io's Python reader (slower): %s",
                            "/".join(SCHEMES), e)
    return _filesystems_error is None


#: The name :func:`filesystems_in_tensorflow` had when the plugin served HDFS alone.
hdfs_in_tensorflow = filesystems_in_tensorflow
