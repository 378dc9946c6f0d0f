"""TensorBoard for a training log directory, in a child process that leaves nothing behind.

The cluster's chief node calls it for ``cluster.run(..., tensorboard=True)``; it works on its
own too::

    from tfrecord_io.cluster import tensorboard

    with tensorboard.start("hdfs://namenode:8020/logs/run1", host="10.0.0.5") as board:
        print(board.url)        # http://10.0.0.5:PORT/ -- already answering HTTP
        ...
    # board.stop() ran: the process group is gone, the port is closed

:func:`start` runs ``python -m tfrecord_io.cluster.tensorboard`` in a new process group (its own
session). That entry registers tfrecord-io's ``hdfs://`` file system in TensorFlow
(:func:`tfrecord_io.tf.register_filesystems`) before TensorBoard reads anything, so *log_dir*
may be a local directory or an ``hdfs://`` / ``webhdfs://`` URL; TensorBoard reads it through
``tf.io.gfile`` (``--load_fast=false``: the Rust data server knows no ``hdfs://``). TensorBoard
binds *host* only (never every interface) on a port the kernel picks, so two boards on one host
never collide, and reports its URL back. :func:`start` returns once that URL answers HTTP, or
raises :class:`~tfrecord_io.errors.TensorBoardError` with the end of TensorBoard's output.

:meth:`TensorBoardProcess.stop` ends the whole process group (SIGTERM, then SIGKILL after a
grace period) and reaps it. The child also watches its parent: if the process that started it
dies without calling ``stop`` (a killed node), TensorBoard exits within a second by itself.

TensorBoard's output goes to this module's logger, each line prefixed ``[tensorboard]``.
TensorBoard's HTTP server has no authentication: bind it to an address only trusted users reach.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from types import TracebackType

from tfrecord_io.errors import MissingDependencyError, TensorBoardError
from tfrecord_io.extras import require

__all__ = ["TensorBoardProcess", "start", "DEFAULT_TIMEOUT"]

log = logging.getLogger(__name__)

#: Seconds :func:`start` waits for TensorBoard to answer HTTP. Importing TensorFlow is most of
#: it: seconds on an idle machine, more than a minute on a busy one.
DEFAULT_TIMEOUT = 300.0
_URL_LINE = "TFRECORD_IO_TENSORBOARD_URL="
_TAIL_LINES = 40
_POLL = 0.2


class TensorBoardProcess:
    """A running TensorBoard child process (made by :func:`start`).

    Attributes:
        url: where it serves, ``http://HOST:PORT/``.
        log_dir: the directory it serves.
        host: the address it binds.
        pid: the child's process id, which is also its process group id.
    """

    def __init__(self, process: subprocess.Popen[str], log_dir: str, host: str) -> None:
        self._process = process
        self.log_dir = log_dir
        self.host = host
        self.pid = process.pid
        self.url = ""
        self._url_seen = threading.Event()
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._reader = threading.Thread(
            target=self._read_output, name=f"tensorboard-output-{self.pid}", daemon=True
        )
        self._reader.start()

    def _read_output(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            line = line.rstrip("\n")
            if line.startswith(_URL_LINE) and not self.url:
                self.url = line[len(_URL_LINE):]
                self._url_seen.set()
                continue
            self._tail.append(line)
            log.info("[tensorboard] %s", line)

    @property
    def running(self) -> bool:
        """Whether the child process is still alive."""
        return self._process.poll() is None

    def output_tail(self) -> str:
        """The last lines TensorBoard printed (for error messages)."""
        return "\n".join(self._tail)

    def _wait_ready(self, timeout: float, cancel: threading.Event | None = None) -> None:
        deadline = time.monotonic() + timeout
        while not self._url_seen.wait(_POLL):
            self._check_cancel(cancel)
            if not self.running:
                self._reader.join(1.0)
                raise TensorBoardError(
                    f"TensorBoard for {self.log_dir} on {self.host} exited with status "
                    f"{self._process.returncode} before serving; its output ends with:\n"
                    f"{self.output_tail()}"
                )
            if time.monotonic() > deadline:
                raise TensorBoardError(
                    f"TensorBoard for {self.log_dir} on {self.host} did not start within "
                    f"{timeout:.0f} s; "
                    f"its output ends with:\n{self.output_tail()}"
                )
        last_error: Exception | None = None
        while time.monotonic() < deadline and self.running:
            self._check_cancel(cancel)
            try:
                with urllib.request.urlopen(self.url, timeout=2.0) as response:  # noqa: S310 - the http:// URL TensorBoard printed
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError) as e:
                last_error = e
            time.sleep(_POLL)
        state = "exited" if not self.running else f"did not answer within {timeout:.0f} s"
        raise TensorBoardError(
            f"TensorBoard for {self.log_dir} at {self.url} {state} (last error: {last_error}); "
            f"its output ends with:\n{self.output_tail()}"
        )

    def _check_cancel(self, cancel: threading.Event | None) -> None:
        if cancel is not None and cancel.is_set():
            raise TensorBoardError(f"TensorBoard for {self.log_dir} on {self.host} was stopped "
                                   "before it served")

    def stop(self, grace: float = 5.0) -> None:
        """Stop TensorBoard: SIGTERM to its process group, SIGKILL after *grace* seconds, and
        reap it. Afterwards neither its processes nor its port remain. Idempotent."""
        if self._process.returncode is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, sig)
                try:
                    self._process.wait(grace)
                    break
                except subprocess.TimeoutExpired:
                    log.warning("TensorBoard (pid %d) ignored SIGTERM; killing it", self.pid)
        # A member of the group that outlived the leader (none expected) gets a SIGKILL too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self._reader.join(grace)
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> TensorBoardProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"TensorBoardProcess(pid={self.pid}, url={self.url!r}, {state})"


def _package_root() -> str:
    """The directory holding the ``tfrecord_io`` package, for the child's import path."""
    import tfrecord_io  # noqa: PLC0415 - the package itself, for its path

    return os.path.dirname(os.path.dirname(os.path.abspath(tfrecord_io.__file__)))


def start(
    log_dir: str | os.PathLike[str],
    host: str = "127.0.0.1",
    *,
    timeout: float = DEFAULT_TIMEOUT,
    reload_interval: float = 5.0,
    env: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
) -> TensorBoardProcess:
    """Start TensorBoard serving *log_dir* on *host*, on a free port, and wait until it answers.

    Args:
        log_dir: the log directory, local or ``hdfs://`` / ``webhdfs://``. It need not exist yet
            (TensorBoard shows it once it does).
        host: the address to bind, e.g. the executor's address (never ``0.0.0.0`` by default).
        timeout: seconds to wait for TensorBoard to answer HTTP.
        reload_interval: seconds between TensorBoard's re-reads of *log_dir*.
        env: environment of the child (default: this process's).
        cancel: set, it stops the wait (and TensorBoard): a node that ended while its
            TensorBoard was starting.

    Returns:
        The running :class:`TensorBoardProcess`; its ``url`` answers HTTP. Call ``stop()`` (or
        use it as a context manager) when done.

    Raises:
        TensorBoardError: TensorBoard is not installed, failed, did not answer within
            *timeout*, or *cancel* was set; it is stopped before this is raised.
    """
    log_dir = os.fspath(log_dir)
    child_env = dict(os.environ if env is None else env)
    root = _package_root()
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (root, child_env.get("PYTHONPATH", "")) if p
    )
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    command = [
        sys.executable, "-u", "-m", __name__,
        "--logdir", log_dir,
        "--host", host,
        "--reload-interval", str(reload_interval),
        "--parent", str(os.getpid()),
    ]
    log.info("Starting TensorBoard for %s on %s", log_dir, host)
    process = subprocess.Popen(  # noqa: S603 - our own entry point, no shell
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=child_env,
        start_new_session=True,  # its own process group: stop() ends all of it
    )
    board = TensorBoardProcess(process, log_dir, host)
    try:
        board._wait_ready(timeout, cancel)  # noqa: SLF001 - this module's own class
    except BaseException:
        board.stop()
        raise
    log.info("TensorBoard for %s at %s (pid %d)", log_dir, board.url, board.pid)
    return board


# ---------------------------------------------------------------------------------------------
# The child process: python -m tfrecord_io.cluster.tensorboard --logdir L --host H --parent PID


def _watch_parent(parent: int, stop: threading.Event) -> None:
    while not stop.wait(0.5):
        if os.getppid() != parent:
            stop.set()


def main(argv: list[str] | None = None) -> int:
    """Entry of the child process: register ``hdfs://`` in TensorFlow, run TensorBoard, print
    its URL on a line of its own, and serve until SIGTERM or until the parent is gone."""
    parser = argparse.ArgumentParser(prog="python -m tfrecord_io.cluster.tensorboard")
    parser.add_argument("--logdir", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--reload-interval", type=float, default=5.0)
    parser.add_argument("--parent", type=int, default=0, help="exit when this process is gone")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from tfrecord_io import tf as tfr  # noqa: PLC0415 - the tf layer, in this child only

    remote = "://" in args.logdir and not args.logdir.startswith("file://")
    try:
        tfr.register_filesystems()
    except Exception as e:  # noqa: BLE001 - only fatal when the log dir needs it
        if remote:
            print(f"cannot serve {args.logdir}: {e}", flush=True)
            return 2
        log.warning("hdfs:// not available in TensorBoard: %s", e)
    try:
        program = require("tensorboard.program", "cluster.run(tensorboard=True)")
    except MissingDependencyError as e:
        print(e, flush=True)
        return 2

    board = program.TensorBoard()
    board.configure(argv=[
        "tensorboard",
        "--logdir", args.logdir,
        "--host", args.host,
        "--port", "0",
        "--load_fast", "false",
        "--reload_interval", str(args.reload_interval),
    ])
    url = board.launch()
    print(f"{_URL_LINE}{url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.parent:
        threading.Thread(target=_watch_parent, args=(args.parent, stop), daemon=True).start()
    while not stop.wait(1.0):
        pass
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: TensorBoard and TensorFlow leave threads that interpreter shutdown would wait
    # for, keeping the process (and its port) alive after its main thread has ended.
    os._exit(status)
