"""A real HDFS on loopback for tests: NameNode (RPC + WebHDFS) and DataNodes in one JVM.

:class:`MiniHdfs` runs ``org.tfrecordio.minihdfs.MiniHdfs`` (a Hadoop ``MiniDFSCluster``) as a
child process, waits until it prints its ``MINIHDFS READY {json}`` line, and drives it through its
stdin (stop and restart DataNodes for failure tests). The JVM shuts its cluster down when its
stdin closes, so it never outlives the Python process that started it.

The JVM classpath comes from, in order: the ``classpath`` argument, the environment variable
``TFRECORD_IO_MINIHDFS_CLASSPATH`` (a classpath string, or the path of a file holding one), or
``.tools/minihdfs.classpath`` at the repository root (written by the project's setup). When none
exists, :func:`ensure_classpath` can build one with Maven (``build=True``), through the
test-only helper ``build_support/minihdfs_maven.py`` of a source checkout (not installed).

Modules: :mod:`~tfrecord_io.testing.minihdfs.classpath` (finding or building the JVM classpath,
compiling the main class), :mod:`~tfrecord_io.testing.minihdfs.cluster` (the child JVM:
:class:`MiniHdfs`, :func:`start_for_tests`), and ``__main__`` (the command below).

By hand, for developers::

    python -m tfrecord_io.testing.minihdfs            # prints URLs and an export line

Example::

    with MiniHdfs() as cluster:
        print(cluster.url)             # hdfs://127.0.0.1:PORT
        print(cluster.webhdfs_url)     # webhdfs://127.0.0.1:HTTPPORT
        cluster.stop_datanode(0)
        cluster.restart_datanode(0)
"""

from tfrecord_io.errors import MiniHdfsError
from tfrecord_io.testing.minihdfs.classpath import (
    CLASSPATH_ENV,
    MAIN_CLASS,
    ensure_classpath,
    find_classpath,
)
from tfrecord_io.testing.minihdfs.cluster import MiniHdfs, start_for_tests

__all__ = [
    "MiniHdfs",
    "MiniHdfsError",
    "CLASSPATH_ENV",
    "MAIN_CLASS",
    "find_classpath",
    "ensure_classpath",
    "start_for_tests",
]
