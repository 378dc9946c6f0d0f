"""Starting a node process: a new interpreter, or a fork of a worker with TensorFlow imported.

:func:`start_node` starts ``python -m tfrecord_io.cluster.node WORKDIR`` in its own session
(process group), with stdin from ``/dev/null``, stdout and stderr on pipes and the file
descriptors *pass_fds* inherited at their numbers. Where the Spark worker running the task was
forked from :mod:`tfrecord_io.cluster.daemon` with an environment TensorFlow agrees with
(:func:`tfrecord_io.cluster.daemon.matches`), the node is a fork of the worker that runs
:func:`tfrecord_io.cluster.node.main` with TensorFlow already imported; otherwise it is a new
interpreter. Either way the caller gets the same :class:`NodeProcess`.
"""

from __future__ import annotations

import gc
import io
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from typing import IO, Protocol

from tfrecord_io.cluster import daemon
from tfrecord_io.cluster import node as node_process

__all__ = ["NodeProcess", "ForkedProcess", "start_node"]

_WAIT_STEP = 0.05
_WORKER_STREAMS: list[object] = []
#: Signals a Spark worker may have handled its own way; the node starts with the defaults.
_RESET_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1,
                  signal.SIGUSR2, signal.SIGALRM)


class NodeProcess(Protocol):
    """What the task needs of a node process: ``subprocess.Popen``'s own subset."""

    pid: int
    returncode: int | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class ForkedProcess:
    """A child forked by this process, with ``Popen``'s ``poll``/``wait``/``returncode``."""

    def __init__(self, pid: int, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit status (negative: the signal), or None while it runs."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: nothing more to learn
                self.returncode = -signal.SIGKILL
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Waits for the exit; ``subprocess.TimeoutExpired`` after *timeout* seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"node process {self.pid}", timeout or 0.0)
            time.sleep(_WAIT_STEP)
        assert self.returncode is not None
        return self.returncode


def _command(workdir: str) -> list[str]:
    return [sys.executable, "-u", "-m", node_process.__name__, workdir]


def _keep_only(fds: Sequence[int]) -> None:
    """Closes every descriptor from 3 up but *fds* (all of them are at least 3)."""
    low = 3
    for fd in sorted(set(fds)):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def _import_path(env: dict[str, str]) -> None:
    """Puts the directories of *env*'s ``PYTHONPATH`` first on ``sys.path``, as a new
    interpreter started with *env* would have them (the worker's own path read its own
    ``PYTHONPATH``, not the node's: ``env={"PYTHONPATH": ...}`` of ``cluster.run``)."""
    entries = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[0:0] = [p for p in dict.fromkeys(entries) if p not in sys.path]


def _run_forked(workdir: str, env: dict[str, str], out_w: int, err_w: int,
                pass_fds: Sequence[int]) -> None:
    """In the child: become the node process, as a new interpreter would start it. No return."""
    status = 1
    try:
        # Objects of the parent's that were garbage at the fork stay where they are: collecting
        # one could close a descriptor number the node reuses.
        gc.freeze()
        os.setsid()
        for sig in _RESET_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        _keep_only(pass_fds)
        # The worker's streams stay referenced: collecting one would close its descriptor.
        _WORKER_STREAMS.extend((sys.stdin, sys.stdout, sys.stderr))
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own
        sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0, closefd=False),  # noqa: SIM115 - the process's own
                                      encoding="utf-8", write_through=True)
        sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0, closefd=False),  # noqa: SIM115 - the process's own
                                      encoding="utf-8", errors="backslashreplace",
                                      write_through=True)
        os.chdir(workdir)
        os.environ.clear()
        os.environ.update(env)
        _import_path(env)
        daemon.prepare_node()
        sys.argv = [node_process.__file__, workdir]
        status = node_process.main([workdir])
    except BaseException:  # noqa: BLE001 - the child must never return into the Spark worker
        with open(2, "w", closefd=False) as err:
            traceback.print_exc(file=err)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - exiting either way
                pass
        os._exit(status)


def _fork(workdir: str, env: dict[str, str], pass_fds: Sequence[int]) -> ForkedProcess:
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in os._exit
        os.close(out_r)
        os.close(err_r)
        _run_forked(workdir, env, out_w, err_w, pass_fds)
    os.close(out_w)
    os.close(err_w)
    return ForkedProcess(pid, os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"))


def start_node(workdir: str, env: dict[str, str], pass_fds: Sequence[int]) -> NodeProcess:
    """Starts the node process of *workdir* in its own session.

    Args:
        workdir: the node's directory (``node.json``, ``main.pkl``); its working directory.
        env: its whole environment.
        pass_fds: descriptors it inherits at their numbers (all others are closed).

    Returns:
        The process, with its stdout and stderr to read.
    """
    if daemon.matches(env):
        return _fork(workdir, env, pass_fds)
    return subprocess.Popen(  # noqa: S603 - our own entry point, no shell
        _command(workdir),
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
    )
