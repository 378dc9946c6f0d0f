"""A real YARN for tests: a ResourceManager, NodeManagers and an HDFS in one child JVM.

:class:`MiniYarn` runs ``org.tfrecordio.miniyarn.MiniYarn`` (Hadoop's ``MiniYARNCluster`` and
``MiniDFSCluster``, every server on 127.0.0.1) and writes a ``HADOOP_CONF_DIR`` for it. The
NodeManagers check every container's physical memory, as clusters without cgroups do. Stopping it
(also at interpreter exit, or when the Python process dies and the JVM's stdin closes) kills
every container.

The JVM classpath comes from ``$TFRECORD_IO_MINIYARN_CLASSPATH`` or ``.tools/miniyarn.classpath``
(``make setup``, ``bin/sbt miniyarn/exportClasspath``).

By hand (``make yarn``)::

    python -m tfrecord_io.testing.miniyarn       # prints the HADOOP_CONF_DIR to export

Example::

    with MiniYarn() as cluster:
        spark = tfrecord_io.spark.session("yarn", **cluster.spark_conf())
"""

from tfrecord_io.errors import MiniYarnError
from tfrecord_io.testing.miniyarn.classpath import (
    CLASSPATH_ENV,
    MAIN_CLASS,
    find_classpath,
)
from tfrecord_io.testing.miniyarn.cluster import SHIPPED_DIR, SHIPPED_PYTHON, MiniYarn

__all__ = [
    "MiniYarn",
    "MiniYarnError",
    "SHIPPED_DIR",
    "SHIPPED_PYTHON",
    "CLASSPATH_ENV",
    "MAIN_CLASS",
    "find_classpath",
]
