"""A Spark standalone cluster across Linux network namespaces, for tests (needs root and ``ip``).

:mod:`~tfrecord_io.testing.standalone.netns` makes the hosts (:class:`VirtualNetwork`: a bridge
on ``198.18.N.1/24``, one namespace per host on ``198.18.N.11``, ``.12``...);
:mod:`~tfrecord_io.testing.standalone.cluster` runs a Spark Master on the bridge address and a
Worker in each namespace (:class:`StandaloneCluster`). Both remove everything they made when
stopped, at interpreter exit, and (namespaces and links named ``tfrio<PID>``) at the next start
after a crash.

Example::

    with VirtualNetwork(2) as network, StandaloneCluster(network) as cluster:
        spark = tfrecord_io.spark.session(cluster.master_url, **cluster.spark_conf())
"""

from tfrecord_io.errors import StandaloneClusterError
from tfrecord_io.testing.standalone.cluster import StandaloneCluster
from tfrecord_io.testing.standalone.netns import Host, VirtualNetwork, remove_stale

__all__ = ["StandaloneCluster", "StandaloneClusterError", "Host", "VirtualNetwork",
           "remove_stale"]
