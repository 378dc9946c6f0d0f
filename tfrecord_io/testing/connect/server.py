"""The Spark Connect server of the tests: ``SparkConnectServer`` in a child JVM.

See :mod:`tfrecord_io.testing.connect` for what it runs and how a client reaches it.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfrecord_io.errors import ConnectServerError
from tfrecord_io.testing.childjvm import ChildJvm, JvmService

__all__ = ["ConnectServer", "bundles_server", "find_server_jar", "server_jar_name", "spark_home"]

#: The server's main class (``sbin/start-connect-server.sh`` runs it through spark-submit).
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_HOST = "127.0.0.1"


#: A Connect server jar for a pyspark that bundles none (pyspark 3.5): a path to
#: ``spark-connect_2.12-VERSION.jar``.
SERVER_JAR_ENV = "TFRECORD_IO_CONNECT_JAR"
_TOOLS_DIR = Path(__file__).resolve().parents[3] / ".tools"


def _pyspark_home() -> Path:
    try:
        import pyspark  # noqa: PLC0415 - only the tests' server needs it
    except ImportError as e:
        raise ConnectServerError(
            "the Spark Connect server needs pyspark: pip install 'tfrecord-io[connect]'"
        ) from e
    return Path(pyspark.__file__).resolve().parent


def bundles_server() -> bool:
    """Whether the installed pyspark bundles Spark's Connect server (pyspark 4.x does, in
    ``jars/spark-connect_*.jar``; pyspark 3.5 does not).

    Raises:
        ConnectServerError: pyspark is missing.
    """
    return any((_pyspark_home() / "jars").glob("spark-connect_*.jar"))


def server_jar_name() -> str:
    """The file name of the Connect server jar that matches the installed pyspark exactly:
    ``spark-connect_SCALA-VERSION.jar``, as Maven Central publishes
    ``org.apache.spark:spark-connect_SCALA:VERSION``.

    Raises:
        ConnectServerError: pyspark is missing.
    """
    import pyspark  # noqa: PLC0415 - pyspark may be missing (raises)

    cores = sorted((_pyspark_home() / "jars").glob("spark-core_*.jar"))
    scala = cores[0].name.split("_", 1)[1].split("-", 1)[0] if cores else "2.12"
    return f"spark-connect_{scala}-{pyspark.__version__}.jar"


def find_server_jar() -> Path | None:
    """The separate Connect server jar for a pyspark that bundles none:
    ``$TFRECORD_IO_CONNECT_JAR``, else ``.tools/`` :func:`server_jar_name` at the repository root
    (``make setup-spark35`` fetches it there); None when neither exists.
    """
    named = os.environ.get(SERVER_JAR_ENV)
    if named:
        return Path(named)
    candidate = _TOOLS_DIR / server_jar_name()
    return candidate if candidate.is_file() else None


def spark_home(server_jar: str | os.PathLike[str] | None = None) -> Path:
    """The installed pyspark's directory, which holds ``bin/spark-submit`` and ``jars/``.

    Args:
        server_jar: the Connect server jar for a pyspark that bundles none (pyspark 3.5).

    Raises:
        ConnectServerError: pyspark is missing, *server_jar* is given but not a file, or
            pyspark bundles no Spark Connect server and *server_jar* is None.
    """
    home = _pyspark_home()
    given = server_jar is not None
    if bundles_server() and not given:
        return home
    if not given or not Path(server_jar).is_file():
        import pyspark  # noqa: PLC0415 - pyspark may be missing (raises)

        where = f"{server_jar} is not a file" if server_jar is not None else "no server jar given"
        what = ("needs the Connect server jar it was given" if given else
                "bundles no Spark Connect server")
        raise ConnectServerError(
            f"pyspark {pyspark.__version__} {what} ({where}): fetch "
            f"org.apache.spark:{server_jar_name().rsplit('-', 1)[0]}:{pyspark.__version__} "
            f"from Maven Central into {_TOOLS_DIR / server_jar_name()} (`make setup-spark35` "
            f"does), or name the jar in ${SERVER_JAR_ENV}"
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


class ConnectServer(JvmService):
    """A running Spark Connect server, in a child JVM; use as a context manager.

    Args:
        base_dir: its working directory (warehouse, logs). A new temporary directory (removed
            on :meth:`stop`) when None.
        master: the server's Spark master; the default runs two executor JVMs of one core.
        port: the gRPC port on 127.0.0.1; 0 picks a free one.
        jars: jars for its classpath and its executors' (the bundled tfrecord-io jar when None).
        server_jar: Spark's Connect server jar (``spark-connect_2.12-VERSION.jar`` of the
            installed pyspark's very version), for a pyspark that bundles none (pyspark 3.5);
            :func:`find_server_jar`'s when None. With pyspark 4.x, which bundles its server,
            a given jar is only checked to exist.
        conf: further Spark settings of the server's application.
        python: the Python of Spark's workers (this interpreter when None).
        startup_timeout: seconds to wait until it accepts connections.

    Attributes (once started): :attr:`url` (``sc://127.0.0.1:PORT``), :attr:`log_path`.
    Stopping it stops everything it started (executors, Python workers).
    """

    label = "the Spark Connect server"
    error = ConnectServerError
    temp_prefix = "spark-connect-"
    stop_wait = 0.0  # spark-submit's JVM does not read its stdin: SIGTERM at once

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        master: str = "local-cluster[2,1,1024]",
        port: int = 0,
        jars: list[str] | None = None,
        server_jar: str | os.PathLike[str] | None = None,
        conf: Mapping[str, str] | None = None,
        python: str | None = None,
        startup_timeout: float = 600.0,
    ) -> None:
        super().__init__(base_dir, startup_timeout)
        self.master = master
        self.port = port
        self.jars = jars
        self.server_jar = server_jar
        self.conf = dict(conf or {})
        self.python = python or sys.executable

    def _child_jvm(self, base_dir: Path) -> ChildJvm:
        bundled = bundles_server()
        server_jar = self.server_jar or (None if bundled else find_server_jar())
        home = spark_home(server_jar)
        if bundled:
            server_jar = None  # the bundled server runs; a given jar was only checked
        jars = self.jars
        if jars is None:
            from tfrecord_io.spark import jar_path  # noqa: PLC0415 - pyspark is there (above)

            jars = [jar_path()]
        if server_jar is not None:
            jars = [str(Path(server_jar).resolve()), *jars]
        if self.port == 0:
            self.port = _free_port()
        conf = {
            "spark.connect.grpc.binding.address": _HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": _HOST,
            "spark.driver.bindAddress": _HOST,
            "spark.ui.enabled": "false",
            "spark.pyspark.python": self.python,
            "spark.sql.warehouse.dir": str(base_dir / "warehouse"),
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
        return ChildJvm(
            "CONNECT", args, base_dir / "connect-server.log", ConnectServerError,
            env=env, cwd=base_dir, probe=self._probe,
        )

    def _probe(self) -> dict[str, Any] | None:
        return {"port": self.port} if _accepts(self.port) else None

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:PORT``: what ``SparkSession.builder.remote`` takes."""
        self._started()
        return f"sc://{_HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        """The server's log (its stderr: Spark's log4j output)."""
        assert self.base_dir is not None
        return self.base_dir / "connect-server.log"

    def session(self) -> Any:
        """A Spark Connect client session of this server (``pyspark.sql.SparkSession``)."""
        from tfrecord_io.spark import session  # noqa: PLC0415 - pyspark, for a client only

        return session(remote=self.url)
