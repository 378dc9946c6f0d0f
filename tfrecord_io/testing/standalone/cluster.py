"""A Spark standalone cluster across hosts of a :class:`~.netns.VirtualNetwork`, for tests.

:class:`StandaloneCluster` runs a Master in the root namespace, bound to the bridge address, and
one Worker in each host's namespace, bound to that host's address (``--host`` and
``SPARK_LOCAL_IP``, which the Worker's executors, their Python workers and the processes those
start inherit), each from the installed pyspark's ``bin/spark-class``. A driver that binds the
bridge address (:meth:`StandaloneCluster.spark_conf`) reaches its executors only over the
virtual network. Stopping it stops the Workers and Master and kills whatever is left in the
namespaces (the network itself is its owner's to remove).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tfrecord_io.errors import StandaloneClusterError
from tfrecord_io.testing.childjvm import tail
from tfrecord_io.testing.standalone.netns import VirtualNetwork

__all__ = ["StandaloneCluster"]

_MASTER = "org.apache.spark.deploy.master.Master"
_WORKER = "org.apache.spark.deploy.worker.Worker"

def spark_class() -> Path:
    """The installed pyspark's ``bin/spark-class``."""
    import pyspark  # noqa: PLC0415 - only who runs Spark needs it

    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"

def _kill_all_in(namespace: str) -> None:
    """SIGKILL to every process in a network namespace."""
    pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True,
                          text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])

class StandaloneCluster:
    """A Master on ``network.gateway`` and a Worker on every host of ``network``.

    Args:
        network: a created :class:`~.netns.VirtualNetwork`.
        base_dir: logs and the Workers' work directories (a temporary directory, removed on
            :meth:`stop`, when None).
        worker_cores, worker_memory: what each Worker offers.
        startup_timeout: seconds to wait for the Master and for every Worker to register.
    """

    def __init__(
        self,
        network: VirtualNetwork,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        worker_cores: int = 2,
        worker_memory: str = "3g",
        startup_timeout: float = 600.0,
    ) -> None:
        self.network = network
        self._own_base = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.startup_timeout = startup_timeout
        self.master_url: str | None = None
        self._procs: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    def start(self) -> StandaloneCluster:
        """Starts the Master, then the Workers, and waits until every Worker has registered."""
        if self.base_dir is None:
            self.base_dir = Path(tempfile.mkdtemp(prefix="standalone-"))
        self.base_dir.mkdir(parents=True, exist_ok=True)
        host = self.network.gateway
        port = _free_port(host)
        self.master_url = f"spark://{host}:{port}"
        try:
            master_log = self._spawn("master", [
                str(spark_class()), _MASTER, "--host", host, "--port", str(port),
                "--webui-port", str(_free_port(host)),
            ], env={"SPARK_LOCAL_IP": host})
            self._wait_for(master_log, "I have been elected leader", "the Master")
            logs = [self._spawn_worker(i) for i in range(len(self.network.hosts))]
            for i, log in enumerate(logs):
                self._wait_for(log, "Successfully registered with master", f"Worker {i}")
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn_worker(self, index: int) -> Path:
        assert self.base_dir is not None and self.master_url is not None
        h = self.network.hosts[index]
        work = self.base_dir / f"worker-{index}"
        work.mkdir(exist_ok=True)
        return self._spawn(f"worker-{index}", h.command([
            str(spark_class()), _WORKER, "--host", h.address,
            "--cores", str(self.worker_cores), "--memory", self.worker_memory,
            "--work-dir", str(work), "--webui-port", "0", self.master_url,
        ]), env={"SPARK_LOCAL_IP": h.address, "SPARK_PUBLIC_DNS": h.address})

    def lose_host(self, index: int) -> None:
        """Host ``index`` goes down: its Worker and every process in its namespace (executors,
        their Python workers, TensorFlow nodes) are killed at once (SIGKILL)."""
        name = f"worker-{index}"
        for _, proc, _ in [p for p in self._procs if p[0] == name]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        self._procs = [p for p in self._procs if p[0] != name]
        _kill_all_in(self.network.hosts[index].namespace)

    def restart_worker(self, index: int) -> None:
        """Starts host ``index``'s Worker again (after :meth:`lose_host`) and waits until it has
        registered with the Master."""
        log = self.base_dir / f"worker-{index}.log" if self.base_dir else None
        if log is not None and log.exists():
            log.unlink()
        log = self._spawn_worker(index)
        self._wait_for(log, "Successfully registered with master", f"Worker {index}")

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> Path:
        assert self.base_dir is not None
        log = self.base_dir / f"{name}.log"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
        full_env.update(env)
        full_env.setdefault("PYSPARK_PYTHON", sys.executable)
        with open(log, "wb") as out:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=full_env,
                                    start_new_session=True)
        self._procs.append((name, proc, log))
        return log

    def _wait_for(self, log: Path, text: str, what: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if text in log.read_text(errors="replace"):
                return
            for name, proc, plog in self._procs:
                if proc.poll() is not None:
                    raise StandaloneClusterError(
                        f"the Spark {name} exited with code {proc.returncode}; its log "
                        f"{plog}:\n{tail(plog)}")
            time.sleep(0.5)
        raise StandaloneClusterError(
            f"{what} did not start in {self.startup_timeout:.0f} s; its log {log}:\n{tail(log)}")

    def stop(self) -> None:
        """Stops the Workers, then the Master (SIGTERM, then SIGKILL to their process groups),
        and kills whatever is left in the hosts' namespaces."""
        for _, proc, _ in reversed(self._procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for _, proc, _ in reversed(self._procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._procs = []
        for h in self.network.hosts:
            _kill_all_in(h.namespace)
        if self._own_base and self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def spark_conf(self, *, executor_memory: str = "1g", python: str | None = None
                   ) -> dict[str, str]:
        """Spark settings of a driver in the root namespace: it binds the bridge address, so
        that executors reach it (and it them) only over the virtual network. One executor per
        host, and a task takes all of its cores, so the two tasks of a two-node barrier stage
        (``cluster.run``) run on different hosts."""
        host = self.network.gateway
        python = python or sys.executable
        conf = {
            "spark.driver.host": host,
            "spark.driver.bindAddress": host,
            "spark.executor.memory": executor_memory,
            "spark.executor.cores": str(self.worker_cores),
            "spark.cores.max": str(self.worker_cores * len(self.network.hosts)),
            "spark.task.cpus": str(self.worker_cores),
            "spark.pyspark.python": python,
            "spark.executorEnv.PYSPARK_PYTHON": python,
        }
        pythonpath = os.environ.get("PYTHONPATH")
        if pythonpath:
            conf["spark.executorEnv.PYTHONPATH"] = pythonpath
        return conf

    def worker_log(self, index: int) -> str:
        """The tail of Worker ``index``'s log."""
        assert self.base_dir is not None
        return tail(self.base_dir / f"worker-{index}.log")

    def __repr__(self) -> str:
        return f"<StandaloneCluster {self.master_url or 'stopped'}>"

