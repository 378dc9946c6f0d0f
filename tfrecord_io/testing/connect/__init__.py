"""A Spark Connect server on loopback for tests, with tfrecord-io's jar on its classpath.

:class:`ConnectServer` runs Spark's own ``SparkConnectServer`` (the class that pyspark's
``sbin/start-connect-server.sh`` starts) through the installed pyspark's ``spark-submit``, as a
:class:`~tfrecord_io.testing.childjvm.ChildJvm`: on a ``local-cluster[...]`` master, so
executors are JVMs of their own, bound to 127.0.0.1 on a free port, with the bundled jar
(``--jars``) and this interpreter as the Python of Spark's workers. A client reaches it with
``SparkSession.builder.remote(server.url)`` (or :meth:`ConnectServer.session`). Stopping it
ends the server's whole process tree.

pyspark 4.x bundles the server; pyspark 3.5 does not, and takes Spark's separate
``spark-connect_2.12`` jar of its very version (``server_jar``, else ``$TFRECORD_IO_CONNECT_JAR``,
else ``.tools/`` of the checkout, where ``make setup-spark35`` puts it: :func:`find_server_jar`).

Modules: :mod:`~tfrecord_io.testing.connect.server` (:class:`ConnectServer`) and ``__main__``.

By hand, for developers (``make connect``)::

    python -m tfrecord_io.testing.connect       # prints the sc:// URL; Ctrl-C stops it

Example::

    with ConnectServer() as server:
        spark = server.session()
        spark.read.format("tfrecord").load("/data/train").show()
"""

from tfrecord_io.errors import ConnectServerError
from tfrecord_io.testing.connect.server import (
    ConnectServer,
    bundles_server,
    find_server_jar,
    server_jar_name,
    spark_home,
)

__all__ = ["ConnectServer", "ConnectServerError", "bundles_server", "find_server_jar",
           "server_jar_name", "spark_home"]
