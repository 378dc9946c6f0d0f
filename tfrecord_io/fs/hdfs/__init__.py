"""The ``hdfs://`` and ``webhdfs://`` backend of :mod:`tfrecord_io.fs`: HDFS from Python without
a JVM. Use it through :mod:`tfrecord_io.fs` (``fs.open``, ``fs.stat``, ``fs.ls``, ``fs.glob``,
...); this package adds only the few HDFS settings a program may want to read or reset.

URLs:

* ``hdfs://namenode:port/path``: the NameNode RPC address, as Spark and Hadoop use. Served by
  ``hdfs-native`` (the NameNode and DataNode protocols, natively) unless
  ``TFRECORD_IO_HDFS_CLIENT=webhdfs`` (:data:`CLIENT_ENV`), which sends them over WebHDFS
  instead (the HTTP address then comes from ``dfs.namenode.http-address`` in
  ``$HADOOP_CONF_DIR/hdfs-site.xml``, else port 9870).
* ``webhdfs://namenode:httpport/path``: WebHDFS (REST over HTTP), served by the ``hdfs`` package.
* ``hdfs:///path``: no authority; the NameNode is ``fs.defaultFS`` from
  ``$HADOOP_CONF_DIR/core-site.xml`` (or ``$HADOOP_HOME/etc/hadoop``), see :func:`default_fs`.
  ``hdfs://nameservice/path`` (HA, no port) is resolved by hdfs-native from the same
  configuration.
* A bare ``/path`` is never HDFS: :mod:`tfrecord_io.fs` takes every bare path as local.

The HDFS user is :func:`current_user`: ``$HADOOP_USER_NAME`` if set, else the OS user (simple
authentication, as Hadoop's own clients do). One client is kept per (NameNode, user) and reused;
:func:`clear_client_cache` forgets them (e.g. after changing the configuration).

Every failure raises :class:`~tfrecord_io.errors.HdfsError` (a ``TFRecordError`` and an
``OSError``) with the URL in the message: a missing path raises
:class:`~tfrecord_io.errors.HdfsFileNotFoundError` (also a ``FileNotFoundError``), a denied one
:class:`~tfrecord_io.errors.HdfsPermissionError` (also a ``PermissionError``, naming the user),
an existing one :class:`~tfrecord_io.errors.HdfsFileExistsError` (also a ``FileExistsError``).
An unreachable NameNode fails within seconds, naming its address.

Example::

    from tfrecord_io import fs
    from tfrecord_io.fs import hdfs

    with fs.open("hdfs://127.0.0.1:8020/data/part-0.tfrecord") as f:   # an HdfsReader
        header = f.read(12)
    print(hdfs.default_fs(), hdfs.current_user())

Layout, one module each: :mod:`~tfrecord_io.fs.hdfs.config` (``HADOOP_CONF_DIR``, user, client
choice), :mod:`~tfrecord_io.fs.hdfs.urls`, :mod:`~tfrecord_io.fs.hdfs.client` (the client
interface), :mod:`~tfrecord_io.fs.hdfs.native` and :mod:`~tfrecord_io.fs.hdfs.webhdfs` (the two
clients), :mod:`~tfrecord_io.fs.hdfs.translation` (client errors to ours),
:mod:`~tfrecord_io.fs.hdfs.clients` (the client cache), :mod:`~tfrecord_io.fs.hdfs.files`
(reader and writer) and :mod:`~tfrecord_io.fs.hdfs.filesystem` (:class:`HdfsFileSystem`, what
:mod:`tfrecord_io.fs` registers for ``hdfs`` and ``webhdfs``). Only the names below are this
package's API; its modules are its own business. Importing it loads neither client library.
"""

from __future__ import annotations

from tfrecord_io.fs.hdfs.clients import clear_client_cache
from tfrecord_io.fs.hdfs.config import CLIENT_ENV, DEFAULT_HDFS_CLIENT, current_user, default_fs
from tfrecord_io.fs.hdfs.files import HdfsReader, HdfsWriter
from tfrecord_io.fs.hdfs.filesystem import HdfsFileSystem

__all__ = [
    "CLIENT_ENV",
    "DEFAULT_HDFS_CLIENT",
    "HdfsFileSystem",
    "HdfsReader",
    "HdfsWriter",
    "clear_client_cache",
    "current_user",
    "default_fs",
]
