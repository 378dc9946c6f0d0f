"""The test HDFS's process driver: a MiniDFSCluster in a child JVM, driven over its stdin.

:class:`MiniHdfs` runs ``org.tfrecordio.minihdfs.MiniHdfs`` (a Hadoop ``MiniDFSCluster``) through
:class:`~tfrecord_io.testing.childjvm.ChildJvm`: it waits until the JVM prints its
``MINIHDFS READY {json}`` line, and drives it through its stdin (stop and restart DataNodes for
failure tests). The JVM shuts its cluster down when its stdin closes, so it never outlives the
Python process that started it: every running cluster is also stopped at interpreter exit. Its
classpath comes from :mod:`tfrecord_io.testing.minihdfs.classpath`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tfrecord_io.errors import MiniHdfsError
from tfrecord_io.testing.childjvm import DEFAULT_JVM_OPTIONS, ChildJvm, JvmService, find_java
from tfrecord_io.testing.minihdfs.classpath import MAIN_CLASS, ensure_classpath

__all__ = ["MiniHdfs", "start_for_tests"]


def _error(message: str) -> MiniHdfsError:
    return MiniHdfsError(f"mini HDFS: {message}")


class MiniHdfs(JvmService):
    """A running mini HDFS cluster, in a child JVM; use as a context manager.

    Args:
        base_dir: where the cluster keeps its storage, configuration and log. A new temporary
            directory (removed on :meth:`stop`) when None.
        datanodes: number of DataNodes.
        replication: default replication (``min(2, datanodes)`` when None).
        rpc_port, http_port: NameNode ports; 0 picks free ones.
        block_size: default HDFS block size in bytes (Hadoop's 128 MiB when None).
        conf_dir: where ``core-site.xml`` and ``hdfs-site.xml`` go (``base_dir/conf`` when None).
        classpath: JVM classpath (see :func:`find_classpath` for the default).
        java: the ``java`` executable (``$JAVA_HOME/bin/java``, else ``java`` on PATH, when None).
        jvm_options: extra JVM options, after the defaults.
        startup_timeout: seconds to wait for the cluster to be ready.
        host: the address every server binds and is known by (127.0.0.1 by default; a bridge
            address makes the cluster reachable from network namespaces on that bridge).

    Attributes (once started):
        url: ``hdfs://127.0.0.1:PORT``, the NameNode RPC URL (what Spark/Hadoop use).
        webhdfs_url: ``webhdfs://127.0.0.1:HTTPPORT``.
        http_url: ``http://127.0.0.1:HTTPPORT``, the NameNode web UI and WebHDFS REST root.
        conf_dir: a directory usable as ``HADOOP_CONF_DIR`` (``fs.defaultFS`` is :attr:`url`).
        superuser: the HDFS superuser (the user running the JVM).
        datanodes: one dict per DataNode at startup (``xfer``, ``http``, ``ipc`` addresses).
        start_seconds: wall time from launching the JVM to ready.
    """

    label = "the mini HDFS"
    error = MiniHdfsError
    temp_prefix = "minihdfs-"
    stop_wait = 30.0

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        datanodes: int = 2,
        replication: int | None = None,
        rpc_port: int = 0,
        http_port: int = 0,
        block_size: int | None = None,
        conf_dir: str | os.PathLike[str] | None = None,
        classpath: str | None = None,
        java: str | None = None,
        jvm_options: Sequence[str] = (),
        startup_timeout: float = 600.0,
        host: str = "127.0.0.1",
    ) -> None:
        super().__init__(base_dir, startup_timeout)
        self.datanode_count = datanodes
        self.replication = replication
        self.rpc_port = rpc_port
        self.http_port = http_port
        self.block_size = block_size
        self._conf_dir_arg = Path(conf_dir) if conf_dir is not None else None
        self._classpath = classpath
        self.java = java
        self.jvm_options = tuple(jvm_options)
        self.host = host

    def _child_jvm(self, base_dir: Path) -> ChildJvm:
        classpath = ensure_classpath(self._classpath)
        java = self.java or find_java()
        if java is None:
            raise MiniHdfsError(
                "no `java` on PATH (and JAVA_HOME unset): the mini HDFS needs Java 11+"
            )
        args = [
            java,
            "-Xmx1g",
            *DEFAULT_JVM_OPTIONS,
            *self.jvm_options,
            "-cp",
            classpath,
            MAIN_CLASS,
            "--base-dir",
            str(base_dir),
            "--datanodes",
            str(self.datanode_count),
            "--rpc-port",
            str(self.rpc_port),
            "--http-port",
            str(self.http_port),
            "--host",
            self.host,
        ]
        if self.replication is not None:
            args += ["--replication", str(self.replication)]
        if self.block_size is not None:
            args += ["--block-size", str(self.block_size)]
        if self._conf_dir_arg is not None:
            args += ["--conf-dir", str(self._conf_dir_arg.resolve())]
        return ChildJvm(
            "MINIHDFS", args, base_dir / "minihdfs.stderr", _error, logs=[self.log_path]
        )

    # -- addresses -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``hdfs://127.0.0.1:PORT``: the NameNode RPC URL."""
        return str(self._ready_info()["rpc"])

    @property
    def webhdfs_url(self) -> str:
        """``webhdfs://127.0.0.1:HTTPPORT``."""
        return str(self._ready_info()["webhdfs"])

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:HTTPPORT``: NameNode web UI; WebHDFS under ``/webhdfs/v1``."""
        return str(self._ready_info()["http"])

    @property
    def conf_dir(self) -> str:
        """A ``HADOOP_CONF_DIR`` for this cluster (core-site.xml, hdfs-site.xml)."""
        return str(self._ready_info()["conf_dir"])

    @property
    def superuser(self) -> str:
        """The HDFS superuser: the OS user that runs the JVM."""
        return str(self._ready_info()["superuser"])

    @property
    def datanodes(self) -> list[dict[str, Any]]:
        """Addresses of the DataNodes, by startup index."""
        return list(self._ready_info()["datanodes"])

    @property
    def log_path(self) -> Path:
        """Hadoop's log file of the cluster."""
        assert self.base_dir is not None
        return self.base_dir / "minihdfs.log"

    def env(self) -> dict[str, str]:
        """Environment variables that point Hadoop clients at this cluster."""
        return {"HADOOP_CONF_DIR": self.conf_dir}

    # -- failure injection ---------------------------------------------------------------------

    def command(self, line: str, timeout: float = 120.0) -> str:
        """Sends one command line to the JVM and returns the text of its ``OK`` answer."""
        return self._started().command(line, timeout)

    def stop_datanode(self, index: int) -> None:
        """Stops DataNode ``index`` (startup numbering) as a crash would: the NameNode is not
        told, and still hands out its block locations until its heartbeats expire (~12 s)."""
        self.command(f"stop-datanode {int(index)}")

    def restart_datanode(self, index: int) -> None:
        """Restarts a stopped DataNode on its old ports and storage; returns once registered."""
        self.command(f"restart-datanode {int(index)}")

    def ping(self) -> None:
        """Raises unless the JVM answers."""
        self.command("ping", timeout=30)

    def __repr__(self) -> str:
        state = self.url if self._info is not None and self.running else "stopped"
        return f"<MiniHdfs {state}>"


def start_for_tests(
    tmp_base: str | os.PathLike[str],
    *,
    datanodes: int = 2,
    replication: int | None = None,
    block_size: int | None = 1024 * 1024,
    build: bool = True,
    **kwargs: Any,
) -> MiniHdfs:
    """Starts a mini HDFS for a test session, storing everything under ``tmp_base``.

    The small default block size (1 MiB) gives test files several blocks, so that reads cross
    block and DataNode boundaries. With ``build`` true, a missing classpath is built with Maven
    (see :func:`ensure_classpath`) instead of failing. The caller stops the cluster.
    """
    classpath = ensure_classpath(kwargs.pop("classpath", None), build=build)
    cluster = MiniHdfs(
        Path(tmp_base),
        datanodes=datanodes,
        replication=replication,
        block_size=block_size,
        classpath=classpath,
        **kwargs,
    )
    return cluster.start()
