"""An object-store emulator in a child process on loopback: what the test S3 server
(:mod:`tfrecord_io.testing.s3`), the test Azure Blob server (:mod:`tfrecord_io.testing.azurite`)
and the test GCS server (:mod:`tfrecord_io.testing.gcs`) share.

Each is a program that ``make setup`` installs: into the virtual environment (moto's server,
run by its Python), into ``.tools/`` (Azurite with npm, fake-gcs-server with ``go install``), or
that an environment variable names instead.
:class:`EmulatorServer` runs it on 127.0.0.1 at a free port (another free port when that one is
taken before the program binds it; a port given by the caller is not changed), in a directory of
its own (its working directory and its log), in a process group of its own and, where
util-linux's ``setpriv`` exists, with SIGKILL as its parent-death signal, so it never outlives
the process that started it, also when that one is killed. It is ready when its log says it
listens on that port (so the answer comes from this very process, not from whatever else took
the port) and it answers a request as itself. Stopping it ends its process group (SIGTERM, then
SIGKILL) and removes its directory. Every emulator keeps its data in memory.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, ClassVar, TypeVar

from tfrecord_io.errors import TFRecordError
from tfrecord_io.testing.processes import kill_group, stop_group

__all__ = ["HOST", "EmulatorServer", "find_program"]

log = logging.getLogger(__name__)

#: The address every emulator listens on.
HOST = "127.0.0.1"

_Server = TypeVar("_Server", bound="EmulatorServer")


def find_program(env: str, under_tools: str, on_path: str) -> Path | None:
    """The program of an emulator: ``$env`` if set (a path, used as given), else
    ``.tools/<under_tools>`` at the repository root when it exists (where ``make setup`` puts
    it), else *on_path* found on ``PATH``; None when there is none."""
    from tfrecord_io.testing.classpaths import TOOLS  # noqa: PLC0415 - a sibling, kept light

    named = os.environ.get(env)
    if named:
        return Path(named)
    installed = TOOLS / under_tools
    if installed.is_file():
        return installed
    found = shutil.which(on_path)
    return Path(found) if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class EmulatorServer:
    """An emulator on 127.0.0.1 for tests; use as a context manager. Subclasses say which
    program, how it is started and how it is recognized.

    Args:
        port: the TCP port; 0 picks a free one.
        startup_timeout: seconds to wait until it answers.

    Attributes (once started): :attr:`port`, :attr:`base_dir` (its working directory, with its
    log), :attr:`start_seconds`, :attr:`log_path`, :attr:`pid`.
    """

    #: The emulator in messages ("Azurite").
    name: ClassVar[str] = "emulator"
    #: The exception of a failed start (a :class:`~tfrecord_io.errors.TFRecordError`).
    error: ClassVar[type[TFRecordError]] = TFRecordError
    #: The name of its log in :attr:`base_dir`.
    log_name: ClassVar[str] = "emulator.log"
    #: How to get the program, said when it is missing.
    install_hint: ClassVar[str] = "run `make setup`"

    def __init__(self, port: int = 0, *, startup_timeout: float = 60.0) -> None:
        self._port_wanted = port
        self.startup_timeout = startup_timeout
        self.port = 0
        self.base_dir: Path | None = None
        self.start_seconds = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._log_offset = 0

    # -- what subclasses say ------------------------------------------------------------------

    def _program(self) -> Path | None:
        """The emulator's program, or None when it is not installed."""
        raise NotImplementedError

    def _command(self, program: Path) -> list[str]:
        """The command line that runs *program* on :data:`HOST`:``self.port``."""
        raise NotImplementedError

    def _child_environment(self) -> dict[str, str]:
        """The environment of the child: this process's, by default."""
        return dict(os.environ)

    def _listening_line(self) -> str:
        """What its log says once it listens on ``self.port``."""
        raise NotImplementedError

    def _answers(self) -> bool:
        """Whether a request to it is answered as this emulator answers (one try)."""
        raise NotImplementedError

    # -- where it is ---------------------------------------------------------------------------

    @property
    def log_path(self) -> Path | None:
        """The emulator's log (its stdout and stderr)."""
        return self.base_dir / self.log_name if self.base_dir else None

    @property
    def running(self) -> bool:
        """Whether the emulator's process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The emulator's process id (also its process group's), while started."""
        return self._process.pid if self._process is not None else None

    # -- life ----------------------------------------------------------------------------------

    def start(self: _Server) -> _Server:
        """Starts the emulator and waits until it answers.

        Raises:
            TFRecordError: (the subclass's :attr:`error`) the program is not installed, or it
                did not come up within the startup timeout (the message has the tail of its
                log).
        """
        if self._process is not None:
            raise self.error(f"the test {self.name} server is already started")
        program = self._program()
        if program is None:
            raise self.error(f"{self.name} is not installed: {self.install_hint}")
        if not program.is_file() or not os.access(program, os.X_OK):
            raise self.error(f"{self.name}'s program {program} is missing or not executable: "
                             f"{self.install_hint}")
        started = time.monotonic()
        self.base_dir = Path(tempfile.mkdtemp(prefix=f"tfrecord-io-{Path(self.log_name).stem}-"))
        try:
            # A free port can be taken by another process before the emulator binds it: then it
            # exits at once, and another free port is tried (a given port is not).
            attempts = 1 if self._port_wanted else 3
            for attempt in range(attempts):
                self.port = self._port_wanted or _free_port()
                self._launch(program)
                try:
                    self._wait_ready(started + self.startup_timeout)
                    break
                except self.error:
                    if (attempt == attempts - 1 or self.running
                            or "in use" not in self._tail().lower()):
                        raise
                    log.info("%s: port %d was taken; trying another", self.name, self.port)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        log.info("%s on 127.0.0.1:%d in %.1f s", self.name, self.port, self.start_seconds)
        return self

    def stop(self) -> None:
        """Stops the emulator (SIGTERM to its process group, SIGKILL after 10 s) and removes its
        directory. Safe to call twice, and after a failed start."""
        process, self._process = self._process, None
        stop_group(process)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None

    def kill(self) -> None:
        """Ends the emulator at once (SIGKILL), as a crash would; its directory stays until
        :meth:`stop`."""
        kill_group(self._process)

    def __enter__(self: _Server) -> _Server:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- helpers -------------------------------------------------------------------------------

    def _launch(self, program: Path) -> None:
        command = self._command(program)
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            command = [setpriv, "--pdeathsig=SIGKILL", "--", *command]
        if self._log_file is None:
            assert self.base_dir is not None
            self._log_file = open(self.base_dir / self.log_name, "ab")  # noqa: SIM115 - stop()
        self._log_file.flush()
        self._log_offset = self._log_file.tell()
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT,
            cwd=self.base_dir, env=self._child_environment(), start_new_session=True,
        )

    def _listening(self) -> bool:
        """Whether this launch's part of the log says it listens on ``self.port``."""
        path = self.log_path
        if path is None or not path.exists():
            return False
        with open(path, "rb") as f:
            f.seek(self._log_offset)
            text = f.read().decode(errors="replace")
        return self._listening_line() in text

    def _wait_ready(self, deadline: float) -> None:
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise self.error(f"the test {self.name} server exited at start: {self._tail()}")
            try:
                if self._listening() and self._answers():
                    return
            except OSError as e:  # urllib's errors among them
                last = e
            time.sleep(0.05)
        raise self.error(f"the test {self.name} server did not answer in "
                         f"{self.startup_timeout:.0f} s ({last}): {self._tail()}")

    def _tail(self) -> str:
        path = self.log_path
        text = path.read_text(errors="replace")[-2000:] if path and path.exists() else ""
        return f"log {path}:\n{text}"
