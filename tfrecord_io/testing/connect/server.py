"""The Spark Connect server of the tests: ``SparkConnectServer`` in a child JVM.

See :mod:`tfrecord_io.testing.connect` for what it runs and how a client reaches it.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfrecord_io.errors import ConnectServerError
from tfrecord_io.testing.childjvm import ChildJvm

__all__ = ["ConnectServer", "spark_home"]

#: The server's main class (``sbin/start-connect-server.sh`` runs it through spark-submit).
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_HOST = "127.0.0.1"


def spark_home() -> Path:
    """The installed pyspark's directory, which holds ``bin/spark-submit`` and ``jars/``.

    Raises:
        ConnectServerError: pyspark is missing, or has no Spark Connect server jar.
    """
    try:
        import pyspark  # noqa: PLC0415 - only the tests' server needs it
    except ImportError as e:
        raise ConnectServerError(
            "the Spark Connect server needs pyspark: pip install 'tfrecord-io[connect]'"
        ) from e
    home = Path(pyspark.__file__).resolve().parent
    if not any((home / "jars").glob("spark-connect_*.jar")):
        raise ConnectServerError(
            f"{home / 'jars'} has no spark-connect_*.jar: this server runs the Connect server "
            "that pyspark 4.x bundles (pyspark 3.5's is a separate package, "
            "org.apache.spark:spark-connect_2.12, which this helper does not fetch)"
        )
    return home


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((_HOST, 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((_HOST, port), timeout=1.0):
            return True
    except OSError:
        return False


class ConnectServer:
    """A running Spark Connect server, in a child JVM; use as a context manager.

    Args:
        base_dir: its working directory (warehouse, logs). A new temporary directory (removed
            on :meth:`stop`) when None.
        master: the server's Spark master; the default runs two executor JVMs of one core.
        port: the gRPC port on 127.0.0.1; 0 picks a free one.
        jars: jars for its classpath and its executors' (the bundled tfrecord-io jar when None).
        conf: further Spark settings of the server's application.
        python: the Python of Spark's workers (this interpreter when None).
        startup_timeout: seconds to wait until it accepts connections.

    Attributes (once started): :attr:`url` (``sc://127.0.0.1:PORT``), :attr:`log_path`.
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        master: str = "local-cluster[2,1,1024]",
        port: int = 0,
        jars: list[str] | None = None,
        conf: Mapping[str, str] | None = None,
        python: str | None = None,
        startup_timeout: float = 180.0,
    ) -> None:
        self._own_base = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.master = master
        self.port = port
        self.jars = jars
        self.conf = dict(conf or {})
        self.python = python or sys.executable
        self.startup_timeout = startup_timeout
        self._child: ChildJvm | None = None

    def start(self) -> ConnectServer:
        """Starts the server and waits until its port accepts connections; returns self."""
        if self._child is not None:
            raise ConnectServerError("this ConnectServer is already started")
        home = spark_home()
        jars = self.jars
        if jars is None:
            from tfrecord_io.spark import jar_path  # noqa: PLC0415 - pyspark is there (above)

            jars = [jar_path()]
        if self.base_dir is None:
            self.base_dir = Path(tempfile.mkdtemp(prefix="spark-connect-"))
        self.base_dir = self.base_dir.resolve()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        if self.port == 0:
            self.port = _free_port()
        conf = {
            "spark.connect.grpc.binding.address": _HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": _HOST,
            "spark.driver.bindAddress": _HOST,
            "spark.ui.enabled": "false",
            "spark.pyspark.python": self.python,
            "spark.sql.warehouse.dir": str(self.base_dir / "warehouse"),
            **self.conf,
        }
        args = [str(home / "bin" / "spark-submit"), "--master", self.master,
                "--name", "tfrecord-io Spark Connect server", "--class", SERVER_CLASS]
        if jars:
            args += ["--jars", ",".join(jars)]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        args.append("spark-internal")  # the primary resource of a class already on the classpath
        env = {
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": _HOST,
            "PYSPARK_PYTHON": self.python,
            "PYSPARK_DRIVER_PYTHON": self.python,
            "SPARK_NO_DAEMONIZE": "1",
        }
        self._child = ChildJvm(
            "CONNECT", args, self.base_dir / "connect-server.log", ConnectServerError,
            env=env, cwd=self.base_dir, probe=self._probe,
        )
        try:
            self._child.start(self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _probe(self) -> dict[str, Any] | None:
        return {"port": self.port} if _accepts(self.port) else None

    def stop(self) -> None:
        """Stops the server and everything it started (executors, Python workers); removes an
        own base directory."""
        if self._child is not None:
            self._child.stop(timeout=0)
            self._child = None
        if self._own_base and self.base_dir is not None and self.base_dir.exists():
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> ConnectServer:
        return self.start() if self._child is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server's JVM is alive."""
        return self._child is not None and self._child.running

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:PORT``: what ``SparkSession.builder.remote`` takes."""
        if self._child is None:
            raise ConnectServerError("the Spark Connect server is not started")
        return f"sc://{_HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        """The server's log (its stderr: Spark's log4j output)."""
        assert self.base_dir is not None
        return self.base_dir / "connect-server.log"

    def session(self) -> Any:
        """A Spark Connect client session of this server (``pyspark.sql.SparkSession``)."""
        from tfrecord_io.spark import session  # noqa: PLC0415

        return session(remote=self.url)
