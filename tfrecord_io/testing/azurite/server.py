"""The Azure Blob server of the tests: Azurite's blob service in a child process.

See :mod:`tfrecord_io.testing.azurite` for what it serves and why Azurite; the child's life
(free port, process group, parent-death signal, stop) is :class:`~tfrecord_io.testing.emulator.
EmulatorServer`'s. The helpers that look at the store without tfrecord-io's code
(:meth:`AzuriteServer.create_container`, :meth:`~AzuriteServer.list_blobs`,
:meth:`~AzuriteServer.get_blob`, :meth:`~AzuriteServer.put_blob`) speak the Blob REST API with
Shared Key authentication, from the standard library alone.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import http.client
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree

from tfrecord_io.errors import AzuriteError
from tfrecord_io.testing.emulator import HOST, EmulatorServer, find_program

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["ACCOUNT_KEY", "ACCOUNT_NAME", "AZURITE_ENV", "AzuriteServer", "find_azurite"]

#: Azurite's well-known development account (its README's), the only account it serves here.
ACCOUNT_NAME = "devstoreaccount1"
#: That account's well-known key (base64), the same in every Azurite.
ACCOUNT_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
               "K1SZFPTOtr/KBHBeksoGMGw==")
#: Environment variable naming Azurite's blob-service program (``azurite-blob``) instead of
#: the one ``make setup`` installs.
AZURITE_ENV = "TFRECORD_IO_AZURITE"
# Where `make setup` installs it (npm install --prefix .tools/azurite), under .tools/.
_INSTALLED = "azurite/node_modules/.bin/azurite-blob"
# The REST API version of the helpers' requests (Azurite checks none: --skipApiVersionCheck).
_API_VERSION = "2023-11-03"
_INSTALL_HINT = (f"run `make setup` (or `make setup-emulators`), which installs it with npm into "
                 f".tools/azurite; or set {AZURITE_ENV} to an `azurite-blob` program")


def find_azurite() -> Path | None:
    """Azurite's blob-service program: ``$TFRECORD_IO_AZURITE``, else
    ``.tools/azurite/node_modules/.bin/azurite-blob`` (``make setup``), else ``azurite-blob`` on
    ``PATH``; None when there is none."""
    return find_program(AZURITE_ENV, _INSTALLED, "azurite-blob")


class AzuriteServer(EmulatorServer):
    """Azure Blob Storage (Azurite's blob service) on 127.0.0.1 for tests; a context manager.

    Args:
        port: the TCP port; 0 picks a free one.
        startup_timeout: seconds to wait until it answers.

    Attributes (once started): :attr:`port`, :attr:`endpoint_url`
    (``http://127.0.0.1:PORT/devstoreaccount1``), :attr:`account_name`, :attr:`account_key`,
    :attr:`start_seconds`, :attr:`log_path`.
    """

    name = "Azurite"
    error = AzuriteError
    log_name = "azurite.log"
    install_hint = _INSTALL_HINT

    account_name = ACCOUNT_NAME
    account_key = ACCOUNT_KEY

    # -- where to connect ---------------------------------------------------------------------

    @property
    def blob_endpoint(self) -> str:
        """``http://127.0.0.1:PORT``: the blob service's scheme and authority, what
        ``AZURE_STORAGE_BLOB_ENDPOINT`` is set to (the account is the first segment of every
        path: Azurite's path-style URLs on an IP address)."""
        return f"http://{HOST}:{self.port}"

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT/devstoreaccount1``: the account's blob endpoint, as Azure's
        connection strings name it (``BlobEndpoint=``)."""
        return f"{self.blob_endpoint}/{self.account_name}"

    @property
    def connection_string(self) -> str:
        """The account as an Azure Storage connection string, the form Azure's SDKs and
        command line take (``AZURE_STORAGE_CONNECTION_STRING``; not in :meth:`environment`)."""
        return (f"DefaultEndpointsProtocol=http;AccountName={self.account_name};"
                f"AccountKey={self.account_key};BlobEndpoint={self.endpoint_url};")

    def environment(self) -> dict[str, str]:
        """The settings that point a client at this server: ``AZURE_STORAGE_ACCOUNT_NAME``,
        ``AZURE_STORAGE_ACCOUNT_KEY`` and ``AZURE_STORAGE_BLOB_ENDPOINT``
        (``http://127.0.0.1:PORT``, :attr:`blob_endpoint`: scheme and authority, without the
        account)."""
        return {
            "AZURE_STORAGE_ACCOUNT_NAME": self.account_name,
            "AZURE_STORAGE_ACCOUNT_KEY": self.account_key,
            "AZURE_STORAGE_BLOB_ENDPOINT": self.blob_endpoint,
        }

    def filesystem(self) -> pyarrow.fs.AzureFileSystem:
        """pyarrow's Azure file system on this server. Its Data Lake (``dfs``) endpoint is this
        server too: pyarrow asks it whether the account has a hierarchical namespace (Azurite
        says no), and would ask the real ``*.dfs.core.windows.net`` otherwise."""
        import pyarrow.fs  # noqa: PLC0415 - only where asked for

        authority = f"{HOST}:{self.port}"
        return pyarrow.fs.AzureFileSystem(
            account_name=self.account_name, account_key=self.account_key,
            blob_storage_authority=authority, blob_storage_scheme="http",
            dfs_storage_authority=authority, dfs_storage_scheme="http",
        )

    # -- the store, without tfrecord-io --------------------------------------------------------

    def create_container(self, name: str) -> str:
        """Creates a container; returns its ``az://NAME`` URL."""
        self._request("PUT", name, {"restype": "container"})
        return f"az://{name}"

    def list_blobs(self, container: str, prefix: str = "") -> dict[str, int]:
        """Every blob of *container* whose name starts with *prefix*: name -> size in bytes
        (all pages of the listing)."""
        found: dict[str, int] = {}
        marker = ""
        while True:
            query = {"restype": "container", "comp": "list"}
            if prefix:
                query["prefix"] = prefix
            if marker:
                query["marker"] = marker
            root = ElementTree.fromstring(self._request("GET", container, query))
            for blob in root.iter("Blob"):
                found[blob.findtext("Name", "")] = int(
                    blob.findtext("Properties/Content-Length", "0"))
            marker = root.findtext("NextMarker", "")
            if not marker:
                return found

    def get_blob(self, container: str, name: str) -> bytes:
        """The content of blob *name* of *container*."""
        return self._request("GET", f"{container}/{name}")

    def put_blob(self, container: str, name: str, data: bytes,
                 metadata: dict[str, str] | None = None) -> None:
        """Writes blob *name* of *container* (a block blob, in one request), with user
        *metadata* (``x-ms-meta-*``: Hadoop's directory markers carry ``hdi_isfolder``)."""
        headers = {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/octet-stream"}
        headers.update({f"x-ms-meta-{k}": v for k, v in (metadata or {}).items()})
        self._request("PUT", f"{container}/{name}", body=data, headers=headers)

    # -- what the emulator base class asks ------------------------------------------------------

    def _program(self) -> Path | None:
        return find_azurite()

    def _command(self, program: Path) -> list[str]:
        # The blob service only, its data in memory (--location would conflict), no access
        # log (--silent), any API version and unknown headers accepted (pyarrow's Azure SDK is
        # newer than the emulator's API versions), no telemetry sent.
        return [str(program), "--blobHost", HOST, "--blobPort", str(self.port),
                "--inMemoryPersistence", "--silent", "--skipApiVersionCheck", "--loose",
                "--disableTelemetry"]

    def _child_environment(self) -> dict[str, str]:
        # AZURITE_ACCOUNTS would replace the well-known account; AZURITE_DB would keep the
        # metadata in a database: a developer's settings must not reach the tests' server.
        return {k: v for k, v in os.environ.items() if not k.startswith("AZURITE_")}

    def _listening_line(self) -> str:
        return f"successfully listens on http://{HOST}:{self.port}"

    def _answers(self) -> bool:
        # An unsigned request is refused, by Azurite, in Azurite's words.
        request = urllib.request.Request(f"{self.endpoint_url}?comp=list")  # noqa: S310 - http
        try:
            with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - http
                server = response.headers.get("Server", "")
        except urllib.error.HTTPError as e:
            server = e.headers.get("Server", "")
        return server.startswith("Azurite-Blob")

    # -- helpers -------------------------------------------------------------------------------

    def _request(self, method: str, path: str, query: dict[str, str] | None = None, *,
                 body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
        """One signed request on the account's resource *path* (``container[/blob]``)."""
        query = query or {}
        url_path = f"/{self.account_name}/{urllib.parse.quote(path)}"
        sent = {"x-ms-date": email.utils.formatdate(usegmt=True),
                "x-ms-version": _API_VERSION, "Content-Length": str(len(body)),
                **(headers or {})}
        sent["Authorization"] = self._shared_key(method, url_path, query, sent)
        target = url_path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        connection = http.client.HTTPConnection(HOST, self.port, timeout=30)
        try:
            connection.request(method, target, body=body, headers=sent)
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        if response.status >= 300:
            raise AzuriteError(f"{method} {path} on the test Azurite: HTTP {response.status}: "
                               f"{data[:500]!r}")
        return data

    def _shared_key(self, method: str, url_path: str, query: dict[str, str],
                    headers: dict[str, Any]) -> str:
        """The ``Authorization`` header of Shared Key authentication (Blob service, version
        2009-09-19 and later)."""
        h = {k.lower(): str(v) for k, v in headers.items()}
        length = h.get("content-length", "")
        standard = [method, h.get("content-encoding", ""), h.get("content-language", ""),
                    "" if length == "0" else length, h.get("content-md5", ""),
                    h.get("content-type", ""), "", h.get("if-modified-since", ""),
                    h.get("if-match", ""), h.get("if-none-match", ""),
                    h.get("if-unmodified-since", ""), h.get("range", "")]
        canonical_headers = "".join(f"{k}:{h[k].strip()}\n" for k in sorted(h)
                                    if k.startswith("x-ms-"))
        resource = f"/{self.account_name}{url_path}" + "".join(
            f"\n{k.lower()}:{v}" for k, v in sorted(query.items()))
        to_sign = "\n".join(standard) + "\n" + canonical_headers + resource
        digest = hmac.new(base64.b64decode(self.account_key), to_sign.encode(),
                          hashlib.sha256).digest()
        return f"SharedKey {self.account_name}:{base64.b64encode(digest).decode()}"
