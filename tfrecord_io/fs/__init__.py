"""Open any URL: one file system layer for local paths, HDFS, HTTP and S3, in the manner of
fsspec but small.

::

    from tfrecord_io import fs

    with fs.open("hdfs://namenode:8020/data/part-0.tfrecord") as f:   # or webhdfs://, file://,
        header = f.read(12)                                             # https://, a local path
    fs.stat("https://example.org/mnist/t10k-labels-idx1-ubyte.gz").size
    fs.glob("hdfs://namenode:8020/data/part-*")                         # sorted URLs
    fs.ls("s3://bucket/data/")                                          # AWS or S3-compatible
    fs.expand(["data/", "hdfs://namenode:8020/more/*.tfrecord"])        # Hadoop-style inputs

Protocols (:func:`protocols`; :func:`register` and :func:`unregister` for more), one backend
module (or package) each:

* local paths, ``file:///path`` and Hadoop's ``file:/path`` (:mod:`~tfrecord_io.fs.local`);
* ``hdfs://namenode:port/path`` and ``webhdfs://namenode:httpport/path`` through hdfs-native or
  WebHDFS, no JVM (:mod:`~tfrecord_io.fs.hdfs`, a package: its configuration, clients and file
  objects; it also gives :func:`~tfrecord_io.fs.hdfs.default_fs`,
  :func:`~tfrecord_io.fs.hdfs.current_user` and :func:`~tfrecord_io.fs.hdfs.clear_client_cache`);
* ``http://`` and ``https://``, read-only, with timeouts (:mod:`~tfrecord_io.fs.http`);
* ``s3://`` (Amazon S3 and S3-compatible stores, configured the standard AWS way) through
  pyarrow's S3 client (:mod:`~tfrecord_io.fs.s3`); its writes appear only when closed.

The operations are written once (:mod:`~tfrecord_io.fs.operations`): :func:`open`,
:func:`stat`, :func:`exists`, :func:`isdir`, :func:`ls`, :func:`glob`, :func:`walk`,
:func:`makedirs`, :func:`delete`, :func:`rename`, :func:`replace`, :func:`atomic_write`,
:func:`staging_directory` with :func:`publish`; and
:func:`expand` (:mod:`~tfrecord_io.fs.expand`), the Hadoop-style expansion of input paths into
data files that every reader uses. Path and URL helpers: :func:`split_url`, :func:`split`,
:func:`join`, :func:`name`, :func:`is_local`, :func:`is_location`, :func:`as_url`, and
:func:`redact` (a URL's credentials hidden, for messages), :func:`split_list` (a
comma-separated list of paths cut as Hadoop cuts one).
:func:`environment` gives the settings another process needs to reach the same stores (the cluster's
nodes get them).

Bare paths: a path without ``scheme://`` is always local, ``/path`` included, whatever
``fs.defaultFS`` says (Hadoop would take ``/path`` on its default file system; here it is never
HDFS). ``hdfs:///path`` (no authority) is HDFS's default file system: the NameNode of
``fs.defaultFS`` in ``$HADOOP_CONF_DIR/core-site.xml``.

Errors are one family, whatever the protocol: a missing path raises ``FileNotFoundError``, a
denied one ``PermissionError``, an existing one ``FileExistsError`` (for HDFS, HTTP and S3 the
``HdfsError``/``HttpError``/``ObjectStoreError`` subclasses of :mod:`tfrecord_io.errors`, which
name the URL); all are ``OSError``. An unknown scheme raises
:class:`~tfrecord_io.errors.UnsupportedURLError` (a ``ValueError``), an operation the protocol lacks
:class:`~tfrecord_io.errors.UnsupportedOperationError`.
"""

from __future__ import annotations

from tfrecord_io.fs.backend import FileInfo, FileSystem
from tfrecord_io.fs.expand import expand
from tfrecord_io.fs.operations import (
    atomic_write,
    delete,
    exists,
    glob,
    isdir,
    ls,
    makedirs,
    open,  # noqa: A004 - mirrors builtins.open
    publish,
    rename,
    replace,
    staging_directory,
    stat,
    walk,
)
from tfrecord_io.fs.registry import environment, filesystem, protocols, register, unregister
from tfrecord_io.fs.urls import (
    as_url,
    is_local,
    is_location,
    join,
    name,
    redact,
    split,
    split_list,
    split_url,
)

__all__ = [
    "FileInfo",
    "FileSystem",
    "as_url",
    "atomic_write",
    "delete",
    "environment",
    "exists",
    "expand",
    "filesystem",
    "glob",
    "is_local",
    "is_location",
    "isdir",
    "join",
    "ls",
    "makedirs",
    "name",
    "open",
    "protocols",
    "redact",
    "register",
    "unregister",
    "rename",
    "replace",
    "split",
    "split_list",
    "split_url",
    "publish",
    "staging_directory",
    "stat",
    "walk",
]
