"""A service of the tests in a child JVM: it prints one ``NAME READY {json}`` line when up,
answers commands read on its stdin with one ``OK ...`` or ``ERROR ...`` line each, and shuts down
when its stdin closes, so it never outlives the Python process that started it.

:class:`ChildJvm` is the process and its protocol. :class:`JvmService` is what the test HDFS, the
test YARN and the Spark Connect server share around it: a base directory of the caller's or of
its own (removed when it stops), start and stop, use as a context manager, and every started
service stopped at interpreter exit.

A JVM that is not ours (Spark's own servers, run through ``spark-submit``) prints no ready line:
a ``probe`` says when it is up instead, and :meth:`ChildJvm.stop` with ``timeout=0`` sends it
SIGTERM at once. The JVM runs in a process group of its own, and stopping it ends the whole
group, so processes it started (executors, their Python workers) go with it.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

__all__ = ["ChildJvm", "JvmService", "find_java", "tail"]

# Variables of the parent that must not change who the services run as, or what they read.
SCRUBBED_ENV = (
    "HADOOP_USER_NAME",
    "HADOOP_PROXY_USER",
    "HADOOP_CONF_DIR",
    "HADOOP_TOKEN_FILE_LOCATION",
    "CLASSPATH",
)
# C1 only and the serial GC: a Hadoop mini cluster starts about twice as fast on a busy machine.
DEFAULT_JVM_OPTIONS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    # No hsperfdata: its sampler wakes every 50 ms, some 5% of a core on a small machine.
    "-XX:-UsePerfData",
    "-Djava.net.preferIPv4Stack=true",
    "-Djava.awt.headless=true",
)


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a (log) file, or "" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def find_java() -> str | None:
    """``$JAVA_HOME/bin/java``, else ``java`` on PATH, else None."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


class ChildJvm:
    """One child JVM speaking the READY/command protocol above.

    Args:
        name: the word before ``READY`` on its ready line (``MINIYARN``...).
        args: the whole command line (java, options, main class, arguments).
        stderr_path: where its stderr goes.
        error: the exception type raised, called with a message.
        logs: files whose tails go into error messages.
        env: variables set for the JVM, over this process's environment (without
            :data:`SCRUBBED_ENV`).
        cwd: its working directory (this process's when None).
        probe: for a JVM that prints no ready line: called about once a second while
            starting; the JVM is ready when it returns a dict (which :meth:`start` returns).
    """

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        stderr_path: Path,
        error: Callable[[str], Exception],
        logs: Sequence[Path] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        probe: Callable[[], dict[str, Any] | None] | None = None,
    ) -> None:
        self._ready = f"{name} READY "
        self._extra_env = dict(env or {})
        self._cwd = cwd
        self._probe = probe
        self._args = list(args)
        self._stderr_path = stderr_path
        self._error = error
        self._logs = [stderr_path, *logs]
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """Whether the JVM is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float) -> dict[str, Any]:
        """Runs the JVM and returns the JSON of its ready line (stops it on failure)."""
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
        env.update(self._extra_env)
        t0 = time.monotonic()
        with open(self._stderr_path, "wb") as stderr:
            try:
                self._proc = subprocess.Popen(
                    self._args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                    env=env, cwd=self._cwd, text=True, encoding="utf-8", bufsize=1,
                    start_new_session=True,  # Ctrl-C in a terminal goes to Python, which stops us
                )
            except OSError as e:
                raise self._error(f"could not run {self._args[0]!r}: {e}") from e
        threading.Thread(target=self._pump, args=(self._proc,), daemon=True).start()
        try:
            return self._wait_ready(t0 + timeout, timeout)
        except BaseException:
            self.stop()
            raise

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def failure(self, what: str) -> Exception:
        """The error to raise for ``what``, with the tails of the JVM's logs."""
        parts = [what]
        for log in self._logs:
            text = tail(log)
            if text:
                parts.append(f"--- {log} (tail) ---\n{text}")
        return self._error("\n".join(parts))

    def _wait_ready(self, deadline: float, timeout: float) -> dict[str, Any]:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.failure(f"not ready after {timeout:.0f} s")
            if self._probe is not None and self.running:
                found = self._probe()
                if found is not None:
                    return found
            try:
                line = self._lines.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if line is None:
                assert self._proc is not None
                raise self.failure(f"the JVM exited with code {self._proc.wait()} before ready")
            if line.startswith(self._ready):
                return json.loads(line[len(self._ready):])

    def command(self, line: str, timeout: float = 120.0) -> str:
        """Sends one command line and returns the text after ``OK``."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.poll() is not None:
                raise self._error("the JVM is not running")
            proc.stdin.write(line.strip() + "\n")
            proc.stdin.flush()
            deadline = time.monotonic() + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._error(f"no answer to {line!r} in {timeout} s")
                try:
                    answer = self._lines.get(timeout=remaining)
                except queue.Empty:
                    continue
                if answer is None:
                    raise self.failure(f"the JVM exited while running {line!r}")
                if answer.startswith("OK"):
                    return answer[2:].strip()
                if answer.startswith("ERROR"):
                    raise self._error(f"{line!r} failed: {answer[6:]}")

    def stop(self, timeout: float = 60.0) -> None:
        """Closes the JVM's stdin (it shuts down); after ``timeout`` seconds (0: at once)
        SIGTERM, then SIGKILL, to its whole process group; once it is gone, SIGKILL to whatever
        is left in its group."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait()
            _signal_group(proc.pid, signal.SIGKILL)  # what it started and left behind
            if proc.stdout is not None:
                proc.stdout.close()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    """Sends ``sig`` to the process group ``pgid`` (the JVM's own: it started a new session)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_Service = TypeVar("_Service", bound="JvmService")


class JvmService:
    """A test service in a :class:`ChildJvm`; use as a context manager. Subclasses say how its
    JVM runs (:meth:`_child_jvm`) and what its ready line holds.

    Args:
        base_dir: where the service keeps its files (storage, configuration, logs). A new
            temporary directory, removed on :meth:`stop`, when None.
        startup_timeout: seconds to wait until it is ready.

    Attributes (once started): :attr:`base_dir`, :attr:`start_seconds` (wall time from
    launching the JVM to ready), :attr:`pid`.
    """

    #: The service in messages ("the mini HDFS").
    label: ClassVar[str] = "the service"
    #: The exception type of its failures.
    error: ClassVar[type[Exception]] = RuntimeError
    #: The prefix of its own temporary base directory.
    temp_prefix: ClassVar[str] = "jvm-service-"
    #: Seconds :meth:`stop` waits for the JVM to end once its stdin is closed, before SIGTERM
    #: (0 for a JVM that does not read its stdin).
    stop_wait: ClassVar[float] = 60.0

    def __init__(self, base_dir: str | os.PathLike[str] | None, startup_timeout: float) -> None:
        self._own_base = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.startup_timeout = startup_timeout
        self.start_seconds: float | None = None
        self._child: ChildJvm | None = None
        self._info: dict[str, Any] | None = None

    def _child_jvm(self, base_dir: Path) -> ChildJvm:
        """The JVM to run, its files under *base_dir* (made already). Raises :attr:`error`
        when something it needs is missing (Java, a classpath)."""
        raise NotImplementedError

    def start(self: _Service) -> _Service:
        """Starts the service and waits until it is ready; returns self. A failed start stops
        whatever it had started."""
        if self._child is not None:
            raise self.error(f"{self.label} is already started")
        self._info = None
        if self.base_dir is None:
            self.base_dir = Path(tempfile.mkdtemp(prefix=self.temp_prefix))
        self.base_dir = self.base_dir.resolve()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        _LIVE.add(self)
        try:
            self._child = self._child_jvm(self.base_dir)
            started = time.monotonic()
            self._info = self._child.start(self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stops the JVM (closing its stdin; after *timeout* seconds, :attr:`stop_wait` when
        None, SIGTERM, then SIGKILL) and removes an own base directory. Safe to call twice, and
        after a failed start."""
        child, self._child = self._child, None
        if child is not None:
            child.stop(self.stop_wait if timeout is None else timeout)
        _LIVE.discard(self)
        if self._own_base and self.base_dir is not None and self.base_dir.exists():
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self: _Service) -> _Service:
        return self.start() if self._child is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the JVM is alive."""
        return self._child is not None and self._child.running

    @property
    def pid(self) -> int | None:
        """The JVM's process id, while it is started."""
        return self._child.pid if self._child is not None else None

    def _started(self) -> ChildJvm:
        """The started JVM; raises :attr:`error` when the service is not started."""
        if self._child is None:
            raise self.error(f"{self.label} is not started")
        return self._child

    def _ready_info(self) -> dict[str, Any]:
        """The JSON of the JVM's ready line; raises :attr:`error` when not started."""
        if self._child is None or self._info is None:
            raise self.error(f"{self.label} is not started")
        return self._info


_LIVE: set[JvmService] = set()


@atexit.register
def _stop_all() -> None:
    for service in list(_LIVE):
        service.stop(timeout=min(service.stop_wait, 15.0))
