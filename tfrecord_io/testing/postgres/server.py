"""The PostgreSQL server of the tests: Debian's ``initdb`` and ``postgres`` in a temporary dir.

:class:`Postgres` makes a new cluster (``initdb``, trust authentication, user ``postgres``),
starts ``postgres`` on ``127.0.0.1`` at a free port with its unix socket in the same directory,
and removes everything when stopped. PostgreSQL refuses to run as root: as root, the server runs
as the ``postgres`` OS user that Debian's package creates (``setpriv``), in a directory that user
owns, and it is sent SIGKILL if the thread that started it dies, so it never outlives its tests.
"""

from __future__ import annotations

import glob
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import psycopg

from tfrecord_io.errors import PostgresError
from tfrecord_io.testing.processes import stop_group

__all__ = ["BIN_ENV", "Postgres", "find_bindir"]

log = logging.getLogger(__name__)

#: Environment variable naming the directory of ``initdb`` and ``postgres``.
BIN_ENV = "TFRECORD_IO_POSTGRES_BIN"

_INSTALL_HINT = "install PostgreSQL (`apt-get install postgresql`, or `make setup-system`)"


def find_bindir() -> Path | None:
    """The directory of PostgreSQL's ``initdb`` and ``postgres``: ``$TFRECORD_IO_POSTGRES_BIN``,
    else the newest ``/usr/lib/postgresql/VERSION/bin`` (Debian's layout), else the directory of
    ``initdb`` on ``PATH``; None when there is none."""
    named = os.environ.get(BIN_ENV)
    if named:
        return Path(named)
    debian = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if debian:
        return Path(debian[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Postgres:
    """A PostgreSQL server on 127.0.0.1 for tests, in a temporary directory of its own.

    Example::

        with Postgres() as db:
            print(db.jdbc_url)   # jdbc:postgresql://127.0.0.1:PORT/postgres
            with db.connect() as conn:
                conn.execute("select 1")

    Attributes:
        port: the TCP port on 127.0.0.1 (0 before :meth:`start`).
        user, database: the superuser and the database to connect as and to (``postgres``).
        base_dir: the temporary directory (data directory, socket, log); removed by :meth:`stop`.
    """

    user = "postgres"
    database = "postgres"

    def __init__(self, port: int = 0, os_user: str = "postgres",
                 settings: dict[str, str] | None = None) -> None:
        """Args:
            port: the TCP port; 0 picks a free one.
            os_user: the OS user the server runs as when this process is root.
            settings: further server settings (``postgres -c NAME=VALUE``).
        """
        self._port_wanted = port
        self._os_user = os_user
        self._settings = dict(settings or {})
        self.port = 0
        self.base_dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file = None
        self.start_seconds = 0.0

    # -- where to connect ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """A libpq URL: ``postgresql://postgres@127.0.0.1:PORT/postgres``."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.database}"

    @property
    def jdbc_url(self) -> str:
        """The URL of the PostgreSQL JDBC driver: ``jdbc:postgresql://127.0.0.1:PORT/postgres``."""
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}"

    @property
    def log_path(self) -> Path | None:
        """The server's log (stdout and stderr)."""
        return self.base_dir / "postgres.log" if self.base_dir else None

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def connect(self, **kwargs: object) -> psycopg.Connection:
        """A new psycopg connection to the database, as the superuser (autocommit off)."""
        return psycopg.connect(self.url, **kwargs)

    # -- life ---------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> Postgres:
        """Make the cluster, start the server and wait until it accepts connections.

        Raises:
            PostgresError: PostgreSQL is not installed, the ``postgres`` OS user is missing (as
                root), or the server did not come up within *timeout* seconds (its log is named).
        """
        if self._process is not None:
            raise PostgresError("the test PostgreSQL server is already started")
        started = time.monotonic()
        bindir = find_bindir()
        if bindir is None or not (bindir / "initdb").exists():
            raise PostgresError(f"no PostgreSQL (initdb) found: {_INSTALL_HINT}, or set {BIN_ENV}")
        runas = self._runas_prefix()
        self.base_dir = Path(tempfile.mkdtemp(prefix="tfrecord-io-postgres-"))
        try:
            if runas:
                entry = pwd.getpwnam(self._os_user)
                os.chown(self.base_dir, entry.pw_uid, entry.pw_gid)
            data = self.base_dir / "data"
            self._run("initdb", [*runas, str(bindir / "initdb"), "-D", str(data),
                                 "-U", self.user, "-A", "trust", "-E", "UTF8", "--locale=C",
                                 "--no-sync", "--no-instructions"])
            # A free port can be taken by another process before the server binds it: then
            # the server exits at once, and a new free port is tried (a given port is not).
            for attempt in range(1 if self._port_wanted else 3):
                self.port = self._port_wanted or _free_port()
                self._launch(bindir, runas, data)
                try:
                    self._wait_ready(started + timeout)
                    break
                except PostgresError:
                    if attempt == 2 or self.running or "already in use" not in self._tail():
                        raise
                    log.info("port %d was taken; trying another", self.port)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        log.info("PostgreSQL on 127.0.0.1:%d in %.1f s (%s)", self.port, self.start_seconds,
                 self.base_dir)
        return self

    def stop(self) -> None:
        """Stop the server (a fast shutdown, then SIGKILL after 15 s) and remove its directory.
        Safe to call twice, and after a failed start."""
        process, self._process = self._process, None
        # SIGINT to the postmaster alone: PostgreSQL's "fast" shutdown of its backends.
        stop_group(process, first=signal.SIGINT, to_group=False, grace=15.0)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None

    def __enter__(self) -> Postgres:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- helpers ------------------------------------------------------------------------------

    def _runas_prefix(self) -> list[str]:
        """``setpriv`` to the OS user when this process is root (PostgreSQL refuses root);
        SIGKILL is its parent-death signal, so the server dies with the thread that started it."""
        if os.geteuid() != 0:
            return []
        try:
            pwd.getpwnam(self._os_user)
        except KeyError:
            raise PostgresError(
                f"running as root, but there is no {self._os_user!r} OS user to run PostgreSQL "
                f"as (PostgreSQL refuses root): {_INSTALL_HINT}, which creates it"
            ) from None
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise PostgresError("running as root needs `setpriv` (util-linux) to run PostgreSQL "
                                f"as {self._os_user!r}: apt-get install util-linux")
        return [setpriv, f"--reuid={self._os_user}", f"--regid={self._os_user}",
                "--init-groups", "--pdeathsig=SIGKILL", "--"]

    def _launch(self, bindir: Path, runas: list[str], data: Path) -> None:
        """Start ``postgres`` on :attr:`port` (appending to the log)."""
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.base_dir),
            # A throwaway database: no durability, little memory.
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "32MB",
            "max_connections": "40",
            **self._settings,
        }
        command = [*runas, str(bindir / "postgres"), "-D", str(data)]
        for name, value in settings.items():
            command += ["-c", f"{name}={value}"]
        if self._log_file is None:
            self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed by stop()
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log_file,
            stderr=subprocess.STDOUT, cwd=self.base_dir, start_new_session=True,
        )

    def _run(self, name: str, command: Sequence[str]) -> None:
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              cwd=self.base_dir, timeout=120)
        if done.returncode != 0:
            raise PostgresError(
                f"{name} failed (exit {done.returncode}): "
                f"{(done.stdout + done.stderr).strip()[-2000:]}"
            )

    def _wait_ready(self, deadline: float) -> None:
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise PostgresError(f"the test PostgreSQL server exited at start: {self._tail()}")
            try:
                # Through this server's own unix socket: a TCP connection could reach another
                # server on the port. PostgreSQL binds its TCP port before its socket, and exits
                # when it cannot, so a server that answers here owns the port too.
                with psycopg.connect(host=str(self.base_dir), port=self.port, user=self.user,
                                     dbname=self.database, connect_timeout=2):
                    return
            except psycopg.OperationalError as e:
                last = e
                time.sleep(0.1)
        raise PostgresError(f"the test PostgreSQL server did not accept connections in time "
                            f"({last}): {self._tail()}")

    def _tail(self) -> str:
        path = self.log_path
        text = path.read_text(errors="replace")[-2000:] if path and path.exists() else ""
        return f"log {path}:\n{text}"
