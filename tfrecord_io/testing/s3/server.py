"""The S3 server of the tests: moto's standalone server in a child process, with authentication.

See :mod:`tfrecord_io.testing.s3` for what it serves and why moto. The child runs in a process
group of its own (stopped as a whole) and, where util-linux's ``setpriv`` exists, with SIGKILL as
its parent-death signal, so it never outlives the process that started it, also when that one is
killed.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple
from xml.etree import ElementTree

from tfrecord_io.errors import S3ServerError
from tfrecord_io.testing.processes import kill_group, stop_group

__all__ = ["REGION", "RecordedRequest", "S3Server"]

log = logging.getLogger(__name__)

#: The region the server's clients are told to use (moto takes any).
REGION = "us-east-1"
_HOST = "127.0.0.1"
_USER = "tfrecord-io-tests"
# Requests served before authentication is enforced: the three IAM calls that make the user.
_SETUP_ACTIONS = 3
_INSTALL_HINT = ("install the test extra (`pip install -e '.[test]'`, or `make setup`), which "
                 "brings moto's server")


class RecordedRequest(NamedTuple):
    """A request the server received while recording (:meth:`S3Server.recording`)."""

    method: str
    #: What it was about: ``s3://BUCKET/KEY`` (``s3://BUCKET`` for a bucket), decoded.
    url: str
    #: The ``Range`` header's byte range, ``(first, last)`` inclusive; None without one (or
    #: for a range open at one end).
    range: tuple[int, int] | None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((_HOST, 0))
        return int(s.getsockname()[1])


def _installed() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("moto", "flask", "flask_cors"))


class S3Server:
    """An S3-compatible server (moto) on 127.0.0.1 for tests; use as a context manager.

    Args:
        port: the TCP port; 0 picks a free one.
        auth: enforce SigV4 authentication with the access key made at start (True), or accept
            any request, signed or not, as moto does by default (False).
        startup_timeout: seconds to wait until it answers.
        first_byte_latency: seconds each answer waits after its request arrived, as a store
            across a network does (for benchmarks: :mod:`~tfrecord_io.testing.s3.distant`).
        connection_rate: bytes a second each answer's body is sent at, at most (None: as fast
            as the connection takes it), as a store serves one connection.

    Attributes (once started): :attr:`port`, :attr:`endpoint_url` (``http://127.0.0.1:PORT``),
    :attr:`access_key`, :attr:`secret_key`, :attr:`start_seconds`, :attr:`log_path`.
    """

    def __init__(self, port: int = 0, *, auth: bool = True, startup_timeout: float = 60.0,
                 first_byte_latency: float = 0.0, connection_rate: float | None = None) -> None:
        if first_byte_latency < 0 or (connection_rate is not None and connection_rate <= 0):
            raise ValueError("first_byte_latency must be >= 0 and connection_rate > 0, not "
                             f"{first_byte_latency}, {connection_rate}")
        self._port_wanted = port
        self.auth = auth
        self.first_byte_latency = first_byte_latency
        self.connection_rate = connection_rate
        self.startup_timeout = startup_timeout
        self.port = 0
        self.access_key = "AKIAIOSFODNN7EXAMPLE"  # any key works while auth is off
        self.secret_key = "not-checked-without-auth"
        self.base_dir: Path | None = None
        self.start_seconds = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    # -- where to connect ---------------------------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``: what ``AWS_ENDPOINT_URL_S3`` is set to."""
        return f"http://{_HOST}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        """The server's log (its stdout and stderr: one line per request)."""
        return self.base_dir / "moto.log" if self.base_dir else None

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The server's process id (also its process group's), while started."""
        return self._process.pid if self._process is not None else None

    def environment(self) -> dict[str, str]:
        """The standard AWS settings that point a client at this server: the endpoint
        (``AWS_ENDPOINT_URL_S3``), the access key and secret, the region."""
        return {
            "AWS_ENDPOINT_URL_S3": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": REGION,
        }

    def client(self, service: str = "s3") -> Any:
        """A boto3 client of this server, signed with its access key (boto3 comes with moto).
        Tests use it to look at the store without tfrecord-io's code."""
        import boto3  # noqa: PLC0415 - a test dependency (moto's), only where asked for

        return boto3.client(service, endpoint_url=self.endpoint_url, region_name=REGION,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key)

    def create_bucket(self, name: str) -> str:
        """Creates a bucket; returns its ``s3://NAME`` URL."""
        self.client().create_bucket(Bucket=name)
        return f"s3://{name}"

    def fill(self, bucket: str, objects: Mapping[str, bytes], threads: int = 8) -> None:
        """Puts many small objects fast, for tests that need a long listing: plain ``PUT``
        requests on kept-alive connections from a few threads, with authentication paused
        meanwhile (signing each request costs more than storing it)."""
        local = threading.local()

        def put(item: tuple[str, bytes]) -> None:
            connection = getattr(local, "connection", None)
            if connection is None:
                connection = local.connection = http.client.HTTPConnection(_HOST, self.port,
                                                                           timeout=30)
            connection.request("PUT", f"/{bucket}/{urllib.parse.quote(item[0])}", body=item[1])
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise S3ServerError(f"PUT {bucket}/{item[0]}: HTTP {response.status}")

        if self.auth:
            self._api("reset-auth", b"inf")
        try:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(put, objects.items()))
        finally:
            if self.auth:
                self._api("reset-auth", b"0")

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> S3Server:
        """Starts the server, waits until it answers, and (with *auth*) makes its user and key.

        Raises:
            S3ServerError: moto's server is not installed, or it did not come up within the
                startup timeout (the message has the tail of its log).
        """
        if self._process is not None:
            raise S3ServerError("the test S3 server is already started")
        if not _installed():
            raise S3ServerError(f"moto's S3 server is not installed: {_INSTALL_HINT}")
        started = time.monotonic()
        self.base_dir = Path(tempfile.mkdtemp(prefix="tfrecord-io-s3-"))
        try:
            # A free port can be taken by another process before the server binds it: then the
            # server exits at once, and another free port is tried (a given port is not).
            attempts = 1 if self._port_wanted else 3
            for attempt in range(attempts):
                self.port = self._port_wanted or _free_port()
                self._launch()
                try:
                    self._wait_ready(started + self.startup_timeout)
                    break
                except S3ServerError:
                    if attempt == attempts - 1 or self.running or "in use" not in self._tail():
                        raise
                    log.info("port %d was taken; trying another", self.port)
            if self.auth:
                self._enable_auth()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        log.info("S3 server (moto) on %s in %.1f s", self.endpoint_url, self.start_seconds)
        return self

    def stop(self) -> None:
        """Stops the server (SIGTERM to its process group, SIGKILL after 10 s) and removes its
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
        """Ends the server at once (SIGKILL), as a crash would; its directory stays until
        :meth:`stop`."""
        kill_group(self._process)

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[RecordedRequest]]:
        """Records the requests the server receives inside the ``with`` block (moto's own
        recorder); the list it gives is filled, in the order they arrived, when the block ends.
        For tests of what a client asks of a store: how many requests, which byte ranges."""
        self._api("recorder/reset-recording", b"")
        self._api("recorder/start-recording", b"")
        found: list[RecordedRequest] = []
        try:
            yield found
        finally:
            self._api("recorder/stop-recording", b"")
            text = self._api("recorder/download-recording").decode("utf-8")
            found.extend(_recorded(line) for line in text.splitlines() if line.strip())

    # -- helpers ------------------------------------------------------------------------------

    def _launch(self) -> None:
        command = [sys.executable, "-m", "moto.server", "--host", _HOST, "--port", str(self.port)]
        if self.first_byte_latency or self.connection_rate:
            command = [sys.executable, "-m", "tfrecord_io.testing.s3.distant", "--host", _HOST,
                       "--port", str(self.port),
                       "--first-byte-latency", str(self.first_byte_latency)]
            if self.connection_rate:
                command += ["--connection-rate", str(self.connection_rate)]
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            command = [setpriv, "--pdeathsig=SIGKILL", "--", *command]
        # The server's own AWS settings do not matter, and a developer's must not leak into it.
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)  # authentication: switched on by the API
        env.pop("MOTO_ENABLE_RECORDING", None)  # recording: switched on by recording()
        assert self.base_dir is not None
        env["MOTO_RECORDER_FILEPATH"] = str(self.base_dir / "requests.jsonl")
        if self._log_file is None:
            self._log_file = open(self.base_dir / "moto.log", "ab")  # noqa: SIM115 - stop()
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT,
            cwd=self.base_dir, env=env, start_new_session=True,
        )

    def _api(self, path: str, data: bytes | None = None, timeout: float = 5.0) -> bytes:
        """A request to moto's own API (``/moto-api/...``), which is never authenticated."""
        request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1, the server's own
            f"{self.endpoint_url}/moto-api/{path}", data=data,
            method="POST" if data is not None else "GET",
            headers={"Content-Type": "text/plain"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http
            return bytes(response.read())

    def _wait_ready(self, deadline: float) -> None:
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise S3ServerError(f"the test S3 server exited at start: {self._tail()}")
            try:
                self._api("")
                return
            except (OSError, urllib.error.URLError) as e:
                last = e
                time.sleep(0.1)
        raise S3ServerError(f"the test S3 server did not answer in time ({last}): {self._tail()}")

    def _iam(self, action: str, **params: str) -> ElementTree.Element:
        """One call of IAM's query API, unsigned (served while authentication is off), routed to
        moto's IAM by the service an Authorization header names; the XML answer."""
        body = urllib.parse.urlencode({"Action": action, "Version": "2010-05-08", **params})
        connection = http.client.HTTPConnection(_HOST, self.port, timeout=30)
        try:
            connection.request("POST", "/", body=body, headers={
                "Content-Type": "application/x-www-form-urlencoded",
                # Not checked while authentication is off: it only names the service.
                "Authorization": "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/"
                                 f"{REGION}/iam/aws4_request, SignedHeaders=host, Signature=0"})
            response = connection.getresponse()
            text = response.read()
        finally:
            connection.close()
        if response.status != 200:
            raise S3ServerError(f"IAM {action} on the test S3 server: HTTP {response.status}: "
                                f"{text[:500]!r}")
        return ElementTree.fromstring(text)

    def _enable_auth(self) -> None:
        """Makes the IAM user, its key and an allow-all policy with the last unauthenticated
        requests; every request after them must be signed with that key."""
        self._api("reset-auth", str(_SETUP_ACTIONS).encode())
        self._iam("CreateUser", UserName=_USER)
        key = self._iam("CreateAccessKey", UserName=_USER)
        found = {e.tag.rsplit("}", 1)[-1]: e.text for e in key.iter()}
        policy = {"Version": "2012-10-17",
                  "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        self._iam("PutUserPolicy", UserName=_USER, PolicyName="everything",
                  PolicyDocument=json.dumps(policy))
        access_key, secret_key = found.get("AccessKeyId"), found.get("SecretAccessKey")
        if not access_key or not secret_key:
            raise S3ServerError("the test S3 server made no access key")
        self.access_key, self.secret_key = access_key, secret_key

    def _tail(self) -> str:
        path = self.log_path
        text = path.read_text(errors="replace")[-2000:] if path and path.exists() else ""
        return f"log {path}:\n{text}"


_BYTE_RANGE = re.compile(r"bytes=(\d+)-(\d+)")


def _recorded(line: str) -> RecordedRequest:
    """One line of moto's recording as a :class:`RecordedRequest` (path-style addressing, as
    the tests' clients use)."""
    entry = json.loads(line)
    headers = {k.lower(): v for k, v in entry.get("headers", {}).items()}
    found = _BYTE_RANGE.fullmatch(headers.get("range", "").strip())
    byte_range = (int(found[1]), int(found[2])) if found else None
    path = urllib.parse.unquote(urllib.parse.urlsplit(entry["url"]).path)
    return RecordedRequest(entry["method"], "s3://" + path.strip("/"), byte_range)
