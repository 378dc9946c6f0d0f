"""The S3 server of the tests: moto's standalone server in a child process, with authentication.

See :mod:`tfrecord_io.testing.s3` for what it serves and why moto. Its process is run, found
ready and stopped as the other stores' emulators are (:class:`~tfrecord_io.testing.emulator.
EmulatorServer`): in a process group of its own, with SIGKILL as its parent-death signal where
util-linux's ``setpriv`` exists, so it never outlives the process that started it.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import re
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple
from xml.etree import ElementTree

from tfrecord_io.errors import S3ServerError
from tfrecord_io.testing.emulator import HOST, EmulatorServer

__all__ = ["REGION", "RecordedRequest", "S3Server"]

#: The region the server's clients are told to use (moto takes any).
REGION = "us-east-1"
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


def _installed() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("moto", "flask", "flask_cors"))


class S3Server(EmulatorServer):
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
    :attr:`access_key`, :attr:`secret_key`, :attr:`start_seconds`, :attr:`log_path` (one line
    per request), :attr:`pid`.
    """

    name = "S3 (moto)"
    error = S3ServerError
    log_name = "moto.log"
    install_hint = _INSTALL_HINT

    def __init__(self, port: int = 0, *, auth: bool = True, startup_timeout: float = 60.0,
                 first_byte_latency: float = 0.0, connection_rate: float | None = None) -> None:
        if first_byte_latency < 0 or (connection_rate is not None and connection_rate <= 0):
            raise ValueError("first_byte_latency must be >= 0 and connection_rate > 0, not "
                             f"{first_byte_latency}, {connection_rate}")
        super().__init__(port, startup_timeout=startup_timeout)
        self.auth = auth
        self.first_byte_latency = first_byte_latency
        self.connection_rate = connection_rate
        self.access_key = "AKIAIOSFODNN7EXAMPLE"  # any key works while auth is off
        self.secret_key = "not-checked-without-auth"

    # -- where to connect ---------------------------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``: what ``AWS_ENDPOINT_URL_S3`` is set to."""
        return f"http://{HOST}:{self.port}"

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
                connection = local.connection = http.client.HTTPConnection(HOST, self.port,
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
        super().start()
        if self.auth:
            try:
                self._enable_auth()
            except BaseException:
                self.stop()
                raise
        return self

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

    def _program(self) -> Path | None:
        return Path(sys.executable) if _installed() else None

    def _command(self, program: Path) -> list[str]:
        if self.first_byte_latency or self.connection_rate:
            command = [str(program), "-m", "tfrecord_io.testing.s3.distant", "--host", HOST,
                       "--port", str(self.port),
                       "--first-byte-latency", str(self.first_byte_latency)]
            if self.connection_rate:
                command += ["--connection-rate", str(self.connection_rate)]
            return command
        return [str(program), "-m", "moto.server", "--host", HOST, "--port", str(self.port)]

    def _child_environment(self) -> dict[str, str]:
        # The server's own AWS settings do not matter, and a developer's must not leak into it.
        env = {k: v for k, v in super()._child_environment().items() if not k.startswith("AWS_")}
        env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)  # authentication: switched on by the API
        env.pop("MOTO_ENABLE_RECORDING", None)  # recording: switched on by recording()
        assert self.base_dir is not None
        env["MOTO_RECORDER_FILEPATH"] = str(self.base_dir / "requests.jsonl")
        return env

    def _listening_line(self) -> str:
        return f"Running on http://{HOST}:{self.port}"  # werkzeug's, for moto and distant

    def _answers(self) -> bool:
        self._api("")  # moto's own API, never authenticated
        return True

    def _api(self, path: str, data: bytes | None = None, timeout: float = 5.0) -> bytes:
        """A request to moto's own API (``/moto-api/...``), which is never authenticated."""
        request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1, the server's own
            f"{self.endpoint_url}/moto-api/{path}", data=data,
            method="POST" if data is not None else "GET",
            headers={"Content-Type": "text/plain"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http
            return bytes(response.read())

    def _iam(self, action: str, **params: str) -> ElementTree.Element:
        """One call of IAM's query API, unsigned (served while authentication is off), routed to
        moto's IAM by the service an Authorization header names; the XML answer."""
        body = urllib.parse.urlencode({"Action": action, "Version": "2010-05-08", **params})
        connection = http.client.HTTPConnection(HOST, self.port, timeout=30)
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
