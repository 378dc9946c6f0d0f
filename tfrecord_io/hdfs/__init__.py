"""HDFS from Python without a JVM: open, stat, list, glob, mkdir, delete, rename.

URLs:

* ``hdfs://namenode:port/path``: the NameNode RPC address, as Spark and Hadoop use. Served by
  ``hdfs-native`` (the NameNode and DataNode protocols, natively) unless
  ``TFRECORD_IO_HDFS_CLIENT=webhdfs``, which sends them over WebHDFS instead (the HTTP address
  then comes from ``dfs.namenode.http-address`` in ``$HADOOP_CONF_DIR/hdfs-site.xml``, else port
  9870).
* ``webhdfs://namenode:httpport/path``: WebHDFS (REST over HTTP), served by the ``hdfs`` package.
* ``hdfs:///path`` and bare ``/path``: no authority; the NameNode is ``fs.defaultFS`` from
  ``$HADOOP_CONF_DIR/core-site.xml`` (or ``$HADOOP_HOME/etc/hadoop``). ``hdfs://nameservice/path``
  (HA, no port) is resolved by hdfs-native from the same configuration.

The HDFS user is ``$HADOOP_USER_NAME`` if set, else the OS user (simple authentication, as
Hadoop's own clients do). One client is kept per (NameNode, user) and reused.

Every failure raises :class:`~tfrecord_io.errors.HdfsError` (a ``TFRecordError`` and an
``OSError``) with the URL in the message: a missing path raises :class:`HdfsFileNotFoundError`
(also a ``FileNotFoundError``), a denied one :class:`HdfsPermissionError` (also a
``PermissionError``, naming the user), an existing one :class:`HdfsFileExistsError` (also a
``FileExistsError``). An unreachable NameNode fails within seconds, naming its address.

To open any URL (local, HDFS, HTTP) the same way, use :mod:`tfrecord_io.fs`, which serves
``hdfs://`` and ``webhdfs://`` with this package.

Example::

    from tfrecord_io import hdfs

    with hdfs.open("hdfs://127.0.0.1:8020/data/part-0.tfrecord") as f:
        header = f.read(12)
    for url in hdfs.glob("hdfs://127.0.0.1:8020/data/part-*.tfrecord"):
        print(hdfs.stat(url).length)

Layout: :mod:`~tfrecord_io.hdfs.config` (``HADOOP_CONF_DIR``, user, client choice),
:mod:`~tfrecord_io.hdfs.urls`, :mod:`~tfrecord_io.hdfs.backend` (the client interface),
:mod:`~tfrecord_io.hdfs.native` and :mod:`~tfrecord_io.hdfs.webhdfs` (the two clients),
:mod:`~tfrecord_io.hdfs.translation` (client errors to ours), :mod:`~tfrecord_io.hdfs.clients`
(the cache), :mod:`~tfrecord_io.hdfs.files` (reader and writer),
:mod:`~tfrecord_io.hdfs.operations` (the functions below).
"""

from __future__ import annotations

from tfrecord_io.errors import (
    HdfsError,
    HdfsFileExistsError,
    HdfsFileNotFoundError,
    HdfsPermissionError,
)
from tfrecord_io.hdfs import clients as _clients_module
from tfrecord_io.hdfs.clients import clear_client_cache
from tfrecord_io.hdfs.config import CLIENT_ENV, DEFAULT_HDFS_CLIENT, current_user, default_fs
from tfrecord_io.hdfs.files import HdfsReader, HdfsWriter
from tfrecord_io.hdfs.operations import (
    FileStatus,
    delete,
    exists,
    glob,
    ls,
    makedirs,
    open,  # noqa: A004 - mirrors builtins.open
    rename,
    stat,
)

__all__ = [
    "FileStatus",
    "HdfsError",
    "HdfsFileNotFoundError",
    "HdfsPermissionError",
    "HdfsFileExistsError",
    "HdfsReader",
    "HdfsWriter",
    "CLIENT_ENV",
    "DEFAULT_HDFS_CLIENT",
    "open",
    "stat",
    "exists",
    "ls",
    "glob",
    "makedirs",
    "delete",
    "rename",
    "current_user",
    "default_fs",
    "clear_client_cache",
]

# The client cache under its old name (tests/test_hdfs.py looks into it).
_clients = _clients_module.cache
