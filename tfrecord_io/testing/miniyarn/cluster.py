"""The test YARN's process driver: a MiniYARNCluster and its HDFS in a child JVM.

:class:`MiniYarn` runs ``org.tfrecordio.miniyarn.MiniYarn`` (a ResourceManager, NodeManagers
that check each container's physical memory, and a MiniDFSCluster, all on 127.0.0.1) through
:class:`~tfrecord_io.testing.childjvm.ChildJvm`, and says how a Spark application runs on it
(:meth:`MiniYarn.spark_conf`). Stopping it stops the NodeManagers, which kill every container.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tfrecord_io.errors import MiniYarnError
from tfrecord_io.testing.childjvm import DEFAULT_JVM_OPTIONS, ChildJvm, JvmService, find_java
from tfrecord_io.testing.miniyarn.classpath import (
    CLASSPATH_ENV,
    MAIN_CLASS,
    find_classpath,
)

__all__ = ["MiniYarn", "SHIPPED_DIR", "SHIPPED_PYTHON"]

#: Where a shipped environment (``--archives ARCHIVE#environment``) is unpacked in a
#: container's working directory, and its interpreter there.
SHIPPED_DIR = "environment"
SHIPPED_PYTHON = f"./{SHIPPED_DIR}/bin/python"


class MiniYarn(JvmService):
    """A running test YARN with its HDFS, in a child JVM; use as a context manager.

    Args:
        base_dir: where the cluster keeps its storage, configuration, container work directories
            and logs. A new temporary directory (removed on :meth:`stop`) when None.
        nodemanagers: number of NodeManagers.
        nm_memory_mb: memory each NodeManager offers to containers.
        classpath: JVM classpath (see :func:`find_classpath`).
        jvm_options: extra JVM options.
        startup_timeout: seconds to wait for the cluster to be ready.

    Attributes (once started): :attr:`conf_dir` (a ``HADOOP_CONF_DIR``), :attr:`hdfs_url`,
    :attr:`resourcemanager`, :attr:`log_path`. Stopping it stops the NodeManagers, which kill
    every container, and its HDFS.
    """

    label = "the test YARN"
    error = MiniYarnError
    temp_prefix = "miniyarn-"

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        nodemanagers: int = 2,
        nm_memory_mb: int = 8192,
        classpath: str | None = None,
        jvm_options: Sequence[str] = (),
        startup_timeout: float = 600.0,
    ) -> None:
        super().__init__(base_dir, startup_timeout)
        self.nodemanagers = nodemanagers
        self.nm_memory_mb = nm_memory_mb
        self._classpath = classpath
        self.jvm_options = tuple(jvm_options)

    def _child_jvm(self, base_dir: Path) -> ChildJvm:
        classpath = find_classpath(self._classpath)
        if classpath is None:
            raise MiniYarnError(
                "no classpath for the test YARN: run `make setup` (or `bin/sbt "
                f"miniyarn/exportClasspath`, which writes .tools/miniyarn.classpath), or set "
                f"{CLASSPATH_ENV}"
            )
        java = find_java()
        if java is None:
            raise MiniYarnError("no `java` on PATH (and JAVA_HOME unset): the test YARN needs it")
        args = [
            java, "-Xmx1g", *DEFAULT_JVM_OPTIONS, *self.jvm_options, "-cp", classpath, MAIN_CLASS,
            "--base-dir", str(base_dir),
            "--nodemanagers", str(self.nodemanagers),
            "--nm-memory-mb", str(self.nm_memory_mb),
        ]
        return ChildJvm(
            "MINIYARN", args, base_dir / "miniyarn.stderr", MiniYarnError,
            logs=[base_dir / "miniyarn.log"],
        )

    @property
    def conf_dir(self) -> str:
        """A ``HADOOP_CONF_DIR``: core-site.xml (``fs.defaultFS``), hdfs-site.xml, yarn-site.xml."""
        return str(self._ready_info()["conf_dir"])

    @property
    def hdfs_url(self) -> str:
        """``hdfs://127.0.0.1:PORT``: the cluster's HDFS, also its ``fs.defaultFS``."""
        return str(self._ready_info()["hdfs"])

    @property
    def resourcemanager(self) -> str:
        """The ResourceManager's client address (``host:port``)."""
        return str(self._ready_info()["resourcemanager"])

    @property
    def log_path(self) -> Path:
        """Hadoop's log of the cluster (container logs are under ``base_dir/yarn``)."""
        assert self.base_dir is not None
        return self.base_dir / "miniyarn.log"

    def containers(self) -> int:
        """How many containers the NodeManagers hold now."""
        return int(self._started().command("containers"))

    def nodemanager_info(self) -> list[dict[str, Any]]:
        """Every NodeManager started so far, by index: ``index``, ``node`` (its NodeId,
        ``host:port``), ``running``, and the ids of the ``containers`` it holds."""
        return list(json.loads(self._started().command("nodemanagers")))

    def stop_nodemanager(self, index: int) -> None:
        """Stops NodeManager *index* as a host going away: it kills its containers and leaves
        the ResourceManager, which reports them lost to their applications. It stays down."""
        self._started().command(f"stop-nodemanager {int(index)}")

    def add_nodemanager(self) -> int:
        """Starts one more NodeManager of the cluster's size (a host coming back); returns its
        index once the ResourceManager counts it."""
        return int(self._started().command("add-nodemanager", timeout=120.0))

    def env(self) -> dict[str, str]:
        """Environment variables that point Hadoop clients and ``spark-submit`` at this cluster."""
        return {"HADOOP_CONF_DIR": self.conf_dir}

    def hadoop_conf(self) -> dict[str, str]:
        """Every setting of :attr:`conf_dir`'s site files."""
        conf: dict[str, str] = {}
        for name in ("core-site.xml", "hdfs-site.xml", "yarn-site.xml"):
            for prop in ET.parse(Path(self.conf_dir) / name).getroot().iter("property"):
                conf[prop.findtext("name", "")] = prop.findtext("value", "")
        return conf

    def spark_conf(
        self,
        *,
        executors: int = 2,
        executor_cores: int = 2,
        executor_memory: str = "512m",
        executor_memory_overhead: str = "2560m",
        python: str | None = None,
        archive: str | None = None,
    ) -> dict[str, str]:
        """Spark settings of a client-mode application on this cluster (``master="yarn"``).

        The site files' settings are passed as ``spark.hadoop.*`` too, so that a driver JVM
        started before ``HADOOP_CONF_DIR`` was set reaches this cluster all the same. Spark's jars
        are taken from the installed pyspark on every node (``spark.yarn.jars=local:...``), not
        uploaded. Each task takes all of its executor's cores. A TensorFlow node process started
        by a task is in the executor container's process tree, so its memory counts against
        ``executor_memory_overhead``.

        With *archive* (a packed Python environment, e.g. by venv-pack; best an ``hdfs://`` URL,
        which every application localizes without uploading it again), the environment travels
        with the application: ``spark.yarn.dist.archives=ARCHIVE#environment`` (what
        ``spark-submit --archives`` sets on YARN; ``spark.archives`` would also unpack it on the
        client-mode driver, whose Java untar refuses a venv's ``bin/python`` symbolic link), and
        executors and the ApplicationMaster run ``./environment/bin/python`` from their
        container, with no ``PYTHONPATH`` of this process. Without it, executors run *python* (this
        interpreter by default) with this process's ``PYTHONPATH``.
        """
        import pyspark  # noqa: PLC0415 - only who runs Spark needs it

        jars = Path(pyspark.__file__).resolve().parent / "jars"
        if archive is not None:
            python = SHIPPED_PYTHON
        python = python or sys.executable
        conf = {f"spark.hadoop.{k}": v for k, v in self.hadoop_conf().items()}
        conf.update({
            "spark.submit.deployMode": "client",
            "spark.yarn.jars": f"local:{jars}/*",
            "spark.yarn.am.memory": "512m",
            "spark.executor.instances": str(executors),
            "spark.executor.cores": str(executor_cores),
            # A task takes a whole executor: the nodes of a cluster.run land in different
            # containers, as on a real cluster.
            "spark.task.cpus": str(executor_cores),
            "spark.executor.memory": executor_memory,
            "spark.executor.memoryOverhead": executor_memory_overhead,
            "spark.dynamicAllocation.enabled": "false",
            "spark.pyspark.python": python,
            "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
            "spark.executorEnv.PYSPARK_PYTHON": python,
        })
        if archive is not None:
            conf["spark.yarn.dist.archives"] = f"{archive}#{SHIPPED_DIR}"
            return conf
        pythonpath = os.environ.get("PYTHONPATH")
        if pythonpath:
            conf["spark.executorEnv.PYTHONPATH"] = pythonpath
        return conf

    def __repr__(self) -> str:
        state = self.resourcemanager if self._info is not None and self.running else "stopped"
        return f"<MiniYarn {state}>"
