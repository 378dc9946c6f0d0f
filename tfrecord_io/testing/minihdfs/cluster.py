"""The test HDFS's process driver: a MiniDFSCluster in a child JVM, driven over its stdin.

:class:`MiniHdfs` runs ``org.tfrecordio.minihdfs.MiniHdfs`` (a Hadoop ``MiniDFSCluster``) as a
child process, waits until it prints its ``MINIHDFS READY {json}`` line, and drives it through its
stdin (stop and restart DataNodes for failure tests). The JVM shuts its cluster down when its
stdin closes, so it never outlives the Python process that started it: every running cluster is
also stopped at interpreter exit. Its classpath comes from
:mod:`tfrecord_io.testing.minihdfs.classpath`.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tfrecord_io.errors import MiniHdfsError
from tfrecord_io.testing.minihdfs.classpath import MAIN_CLASS, ensure_classpath

__all__ = ["MiniHdfs", "start_for_tests"]

_READY = "MINIHDFS READY "
# Variables of the parent that must not change who the NameNode runs as, or what it reads.
_SCRUBBED_ENV = (
    "HADOOP_USER_NAME",
    "HADOOP_PROXY_USER",
    "HADOOP_CONF_DIR",
    "HADOOP_TOKEN_FILE_LOCATION",
    "CLASSPATH",
)
# C1 only and the serial GC: startup is about twice as fast on a busy 2-core machine, and
# read/write throughput measured the same (the DataNodes are I/O- and checksum-bound).
_DEFAULT_JVM_OPTIONS = (
    "-Xmx1g",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    # No hsperfdata: its sampler wakes every 50 ms, some 5% of a core on a small machine.
    "-XX:-UsePerfData",
    "-Djava.net.preferIPv4Stack=true",
    "-Djava.awt.headless=true",
)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class MiniHdfs:
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
        java: the ``java`` executable.
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
        self._own_base = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.datanode_count = datanodes
        self.replication = replication
        self.rpc_port = rpc_port
        self.http_port = http_port
        self.block_size = block_size
        self._conf_dir_arg = Path(conf_dir) if conf_dir is not None else None
        self._classpath = classpath
        self.java = java or _find_java()
        self.jvm_options = tuple(jvm_options)
        self.startup_timeout = startup_timeout
        self.host = host
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Lock()
        self._info: dict[str, Any] | None = None
        self.start_seconds: float | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> MiniHdfs:
        """Starts the cluster and waits until it is ready; returns self."""
        if self._proc is not None:
            raise MiniHdfsError("this MiniHdfs is already started")
        classpath = ensure_classpath(self._classpath)
        self._lines = queue.Queue()
        self._info = None
        if self.base_dir is None:
            self.base_dir = Path(tempfile.mkdtemp(prefix="minihdfs-"))
        self.base_dir = self.base_dir.resolve()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        args = [
            self.java,
            *_DEFAULT_JVM_OPTIONS,
            *self.jvm_options,
            "-cp",
            classpath,
            MAIN_CLASS,
            "--base-dir",
            str(self.base_dir),
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
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
        self._stderr_path = self.base_dir / "minihdfs.stderr"
        stderr = open(self._stderr_path, "wb")  # noqa: SIM115 - the child's, closed below
        t0 = time.monotonic()
        try:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                text=True,
                encoding="utf-8",
                bufsize=1,
                start_new_session=True,  # Ctrl-C in a terminal goes to Python, which stops us.
            )
        except OSError as e:
            raise MiniHdfsError(f"could not run {self.java!r}: {e}") from e
        finally:
            stderr.close()
        threading.Thread(
            target=self._pump, args=(self._proc,), name="minihdfs-stdout", daemon=True
        ).start()
        _LIVE.add(self)
        try:
            self._info = self._wait_ready(t0)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _failure(self, what: str) -> MiniHdfsError:
        assert self.base_dir is not None
        parts = [what]
        err = _tail(self._stderr_path)
        if err:
            parts.append(f"--- {self._stderr_path} (tail) ---\n{err}")
        log = _tail(self.base_dir / "minihdfs.log")
        if log:
            parts.append(f"--- {self.base_dir / 'minihdfs.log'} (tail) ---\n{log}")
        return MiniHdfsError("\n".join(parts))

    def _wait_ready(self, t0: float) -> dict[str, Any]:
        deadline = t0 + self.startup_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure(
                    f"the mini HDFS was not ready after {self.startup_timeout:.0f} s"
                )
            try:
                line = self._lines.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if line is None:
                assert self._proc is not None
                code = self._proc.wait()
                raise self._failure(f"the mini HDFS JVM exited with code {code} before ready")
            if line.startswith(_READY):
                return json.loads(line[len(_READY):])

    def stop(self, timeout: float = 30.0) -> None:
        """Shuts the cluster down (closing its stdin; then SIGTERM, then SIGKILL)."""
        proc = self._proc
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # MiniHdfs shuts down on end of input
            except OSError:
                pass
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            self._proc = None
        _LIVE.discard(self)
        if self._own_base and self.base_dir is not None and self.base_dir.exists():
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> MiniHdfs:
        return self.start() if self._proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the JVM is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The process id of the JVM (NameNode and DataNodes), while it is started."""
        return self._proc.pid if self._proc is not None else None

    # -- addresses -----------------------------------------------------------------------------

    def _require(self) -> dict[str, Any]:
        if self._info is None:
            raise MiniHdfsError("the mini HDFS is not started")
        return self._info

    @property
    def url(self) -> str:
        """``hdfs://127.0.0.1:PORT``: the NameNode RPC URL."""
        return str(self._require()["rpc"])

    @property
    def webhdfs_url(self) -> str:
        """``webhdfs://127.0.0.1:HTTPPORT``."""
        return str(self._require()["webhdfs"])

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:HTTPPORT``: NameNode web UI; WebHDFS under ``/webhdfs/v1``."""
        return str(self._require()["http"])

    @property
    def conf_dir(self) -> str:
        """A ``HADOOP_CONF_DIR`` for this cluster (core-site.xml, hdfs-site.xml)."""
        return str(self._require()["conf_dir"])

    @property
    def superuser(self) -> str:
        """The HDFS superuser: the OS user that runs the JVM."""
        return str(self._require()["superuser"])

    @property
    def datanodes(self) -> list[dict[str, Any]]:
        """Addresses of the DataNodes, by startup index."""
        return list(self._require()["datanodes"])

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
        """Sends one command line to the JVM and returns its ``OK`` answer."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.poll() is not None:
                raise MiniHdfsError("the mini HDFS is not running")
            proc.stdin.write(line.strip() + "\n")
            proc.stdin.flush()
            deadline = time.monotonic() + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise MiniHdfsError(f"no answer to {line!r} from the mini HDFS in {timeout} s")
                try:
                    answer = self._lines.get(timeout=remaining)
                except queue.Empty:
                    continue
                if answer is None:
                    raise self._failure(f"the mini HDFS exited while running {line!r}")
                if answer.startswith("OK"):
                    return answer
                if answer.startswith("ERROR"):
                    raise MiniHdfsError(f"mini HDFS: {line!r} failed: {answer[6:]}")
                # anything else is stray output: ignore

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


_LIVE: set[MiniHdfs] = set()


@atexit.register
def _stop_all() -> None:
    for cluster in list(_LIVE):
        cluster.stop(timeout=15)


def _find_java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise MiniHdfsError("no `java` on PATH (and JAVA_HOME unset): the mini HDFS needs Java 11+")
    return java


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
