"""The GCS server of the tests: fake-gcs-server in a child process, its data in memory.

See :mod:`tfrecord_io.testing.gcs` for what it serves and why fake-gcs-server; the child's life
(free port, process group, parent-death signal, stop) is :class:`~tfrecord_io.testing.emulator.
EmulatorServer`'s. The helpers that look at the store without tfrecord-io's code
(:meth:`GcsServer.create_bucket`, :meth:`~GcsServer.list_objects`, :meth:`~GcsServer.get_object`,
:meth:`~GcsServer.put_object`) speak its JSON API with the standard library alone.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfrecord_io.errors import GcsServerError
from tfrecord_io.testing.emulator import HOST, EmulatorServer, find_program

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["FAKE_GCS_SERVER_ENV", "PROJECT", "GcsServer", "find_fake_gcs_server"]

#: Environment variable naming the ``fake-gcs-server`` program instead of the one ``make setup``
#: builds.
FAKE_GCS_SERVER_ENV = "TFRECORD_IO_FAKE_GCS_SERVER"
#: The project that buckets are made in (the server takes any).
PROJECT = "test"
# Where `make setup` builds it (GOBIN=.tools/bin go install ...), under .tools/.
_INSTALLED = "bin/fake-gcs-server"
_INSTALL_HINT = (f"run `make setup` (or `make setup-emulators`), which builds it with `go "
                 f"install` into .tools/bin; or set {FAKE_GCS_SERVER_ENV} to a `fake-gcs-server` "
                 f"program")


def find_fake_gcs_server() -> Path | None:
    """fake-gcs-server's program: ``$TFRECORD_IO_FAKE_GCS_SERVER``, else
    ``.tools/bin/fake-gcs-server`` (``make setup``), else ``fake-gcs-server`` on ``PATH``; None
    when there is none."""
    return find_program(FAKE_GCS_SERVER_ENV, _INSTALLED, "fake-gcs-server")


class GcsServer(EmulatorServer):
    """Google Cloud Storage (fake-gcs-server) on 127.0.0.1 for tests; a context manager.

    Args:
        port: the TCP port; 0 picks a free one.
        startup_timeout: seconds to wait until it answers.

    Attributes (once started): :attr:`port`, :attr:`endpoint_url` (``http://127.0.0.1:PORT``),
    :attr:`start_seconds`, :attr:`log_path`.
    """

    name = "GCS (fake-gcs-server)"
    error = GcsServerError
    log_name = "fake-gcs-server.log"
    install_hint = _INSTALL_HINT

    # -- where to connect ---------------------------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``: what ``STORAGE_EMULATOR_HOST`` is set to."""
        return f"http://{HOST}:{self.port}"

    def environment(self) -> dict[str, str]:
        """The setting that points Google's client libraries at this server:
        ``STORAGE_EMULATOR_HOST`` (``http://127.0.0.1:PORT``). No credentials: the server
        checks none."""
        return {"STORAGE_EMULATOR_HOST": self.endpoint_url}

    def filesystem(self) -> pyarrow.fs.GcsFileSystem:
        """pyarrow's GCS file system on this server (anonymous, plain HTTP; retries given up
        after 5 s, not pyarrow's 15 minutes)."""
        import datetime  # noqa: PLC0415 - only where asked for

        import pyarrow.fs  # noqa: PLC0415 - only where asked for

        return pyarrow.fs.GcsFileSystem(
            anonymous=True, scheme="http", endpoint_override=f"{HOST}:{self.port}",
            project_id=PROJECT, retry_time_limit=datetime.timedelta(seconds=5),
        )

    # -- the store, without tfrecord-io --------------------------------------------------------

    def create_bucket(self, name: str) -> str:
        """Creates a bucket (in project ``test``); returns its ``gs://NAME`` URL."""
        self._request("POST", f"/storage/v1/b?project={PROJECT}",
                      json.dumps({"name": name}).encode())
        return f"gs://{name}"

    def list_objects(self, bucket: str, prefix: str = "") -> dict[str, int]:
        """Every object of *bucket* whose name starts with *prefix*: name -> size in bytes
        (all pages of the listing)."""
        found: dict[str, int] = {}
        token = ""
        while True:
            query = {"prefix": prefix, **({"pageToken": token} if token else {})}
            page = json.loads(self._request(
                "GET", f"/storage/v1/b/{_quote(bucket)}/o?{urllib.parse.urlencode(query)}"))
            for item in page.get("items", []):
                found[item["name"]] = int(item.get("size", 0))
            token = page.get("nextPageToken", "")
            if not token:
                return found

    def get_object(self, bucket: str, name: str) -> bytes:
        """The content of object *name* of *bucket*."""
        return self._request("GET", f"/storage/v1/b/{_quote(bucket)}/o/{_quote(name)}?alt=media")

    def put_object(self, bucket: str, name: str, data: bytes) -> None:
        """Writes object *name* of *bucket* (a simple upload, in one request)."""
        query = urllib.parse.urlencode({"uploadType": "media", "name": name})
        self._request("POST", f"/upload/storage/v1/b/{_quote(bucket)}/o?{query}", data,
                      "application/octet-stream")

    # -- what the emulator base class asks ------------------------------------------------------

    def _program(self) -> Path | None:
        return find_fake_gcs_server()

    def _command(self, program: Path) -> list[str]:
        # Plain HTTP, the data in memory; the URLs it hands out (resumable uploads' Location,
        # objects' mediaLink) point back at it; its log: a line per request.
        return [str(program), "-scheme", "http", "-host", HOST, "-port", str(self.port),
                "-backend", "memory", "-public-host", f"{HOST}:{self.port}",
                "-external-url", self.endpoint_url, "-log-level", "info"]

    def _listening_line(self) -> str:
        return f"server started at http://{HOST}:{self.port}"

    def _answers(self) -> bool:
        try:
            return json.loads(self._request("GET", "/storage/v1/b", timeout=5)).get(
                "kind") == "storage#buckets"
        except (ValueError, GcsServerError):
            return False

    # -- helpers -------------------------------------------------------------------------------

    def _request(self, method: str, target: str, body: bytes | None = None,
                 content_type: str = "application/json", timeout: float = 30.0) -> bytes:
        """One request of its JSON API (*target*: the path and query)."""
        headers: dict[str, Any] = {"Content-Type": content_type} if body is not None else {}
        request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1, the server's own
            self.endpoint_url + target, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                return bytes(response.read())
        except urllib.error.HTTPError as e:
            raise GcsServerError(f"{method} {target} on the test GCS server: HTTP {e.code}: "
                                 f"{e.read()[:500]!r}") from None


def _quote(name: str) -> str:
    """A bucket or object name as one path segment of the JSON API (``/`` escaped too)."""
    return urllib.parse.quote(name, safe="")
