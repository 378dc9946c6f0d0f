"""``az://`` and ``abfs[s]://`` URLs: Azure Blob Storage and ADLS Gen2, through pyarrow's
:class:`pyarrow.fs.AzureFileSystem` (the Azure SDK for C++).

URLs, as fsspec's adlfs and Hadoop's ABFS connector write them:

* ``az://CONTAINER/KEY``: a container of the configured account;
* ``abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/KEY`` (and ``abfss://``, TLS): a container of
  the account the host names (Hadoop's form, so that paths Spark writes are read as they are);
  ``abfs://CONTAINER/KEY`` is the configured account's.

Why pyarrow's client: it is already a dependency of the core (as for ``s3://``), it is
Microsoft's own SDK for C++, and it serves both flat (Blob) and hierarchical-namespace (ADLS
Gen2) accounts, which it tells apart by itself; reads run in C++ without holding the GIL.

Configuration, read from the environment on every operation (a change takes effect at once; a
client is kept per distinct configuration), or given to :class:`AzureFileSystem` and registered
(``fs.register(["az", "abfs", "abfss"], AzureFileSystem(...), replace=True)``):

* **account**: ``AZURE_STORAGE_ACCOUNT_NAME`` (``az://`` URLs need it);
* **credentials**: ``AZURE_STORAGE_ACCOUNT_KEY`` (a shared key), else
  ``AZURE_STORAGE_SAS_TOKEN`` (a shared access signature), else the Azure SDK's default chain
  (``DefaultAzureCredential``: a service principal's ``AZURE_CLIENT_ID``/``AZURE_TENANT_ID``/
  ``AZURE_CLIENT_SECRET``, workload identity, the Azure CLI's login, the managed identity);
* **endpoints**: ``AZURE_STORAGE_BLOB_ENDPOINT`` (and ``AZURE_STORAGE_DFS_ENDPOINT``),
  ``http(s)://host[:port]``, for an emulator such as Azurite or a private endpoint; none means
  Azure's own (``ACCOUNT.blob.core.windows.net``);
* or all of it at once, in ``AZURE_STORAGE_CONNECTION_STRING`` (``AccountName=...;AccountKey=
  ...;BlobEndpoint=...``, or ``UseDevelopmentStorage=true`` for Azurite on its default port),
  as Azure's tools take it; the variables above win over it.

Hadoop's ABFS and WASB connectors (Spark's writes) mark each directory of a flat-namespace
account with an empty blob whose metadata says ``hdi_isfolder=true``. pyarrow's client takes
such a blob for an empty file; here it is the directory it marks: ``stat`` says so (one request
more for each empty blob it meets), a listing names it once, ``makedirs`` below it writes
markers of the same kind, ``delete`` of a directory removes its marker too, and a copy or rename
below it, which pyarrow refuses, goes through this client (read and written in 8 MiB blocks)
instead of the store.

Semantics and errors are those of every object store (:mod:`tfrecord_io.fs.objectstore`): key
prefixes as directories, ranged reads fetched ahead, writes that appear whole when closed (a
block blob committed at once; as pyarrow's stream empties the blob it opens, the data goes to a
hidden blob beside the target first, ``.NAME.UUID.upload``, which a copy in the store then puts
in the target's place), renames as server-side copies. On a flat-namespace account a
directory is a key prefix; on ADLS Gen2 it is a real directory. pyarrow's Azure client has no
timeout settings: requests are retried by the Azure SDK's default policy (3 retries, backing
off), and a store that stops answering mid-transfer is noticed when its connection drops.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import uuid
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from tfrecord_io.errors import ObjectStoreError, ObjectStoreFileExistsError, UnsupportedURLError
from tfrecord_io.fs.objectstore import ObjectStoreFileSystem

__all__ = ["ACCOUNT_KEY_ENV", "ACCOUNT_NAME_ENV", "BLOB_ENDPOINT_ENV", "CONNECTION_STRING_ENV",
           "DFS_ENDPOINT_ENV", "ENVIRONMENT", "SAS_TOKEN_ENV", "AzureFileSystem",
           "AzureSettings"]

#: The storage account of ``az://`` URLs.
ACCOUNT_NAME_ENV = "AZURE_STORAGE_ACCOUNT_NAME"
#: The account's shared key.
ACCOUNT_KEY_ENV = "AZURE_STORAGE_ACCOUNT_KEY"
#: A shared access signature (instead of the key).
SAS_TOKEN_ENV = "AZURE_STORAGE_SAS_TOKEN"
#: ``http(s)://host[:port]`` of the Blob service, for an emulator or a private endpoint.
BLOB_ENDPOINT_ENV = "AZURE_STORAGE_BLOB_ENDPOINT"
#: ``http(s)://host[:port]`` of the Data Lake (dfs) service.
DFS_ENDPOINT_ENV = "AZURE_STORAGE_DFS_ENDPOINT"
#: Everything in one string, as Azure's tools take it (the variables above win over it).
CONNECTION_STRING_ENV = "AZURE_STORAGE_CONNECTION_STRING"
#: What :meth:`AzureFileSystem.environment` passes on to another process.
ENVIRONMENT = (CONNECTION_STRING_ENV, ACCOUNT_NAME_ENV, ACCOUNT_KEY_ENV, SAS_TOKEN_ENV,
               BLOB_ENDPOINT_ENV, DFS_ENDPOINT_ENV, "AZURE_CLIENT_ID", "AZURE_TENANT_ID",
               "AZURE_CLIENT_SECRET")
_GIVEN_AS = {"account_name": ACCOUNT_NAME_ENV, "account_key": ACCOUNT_KEY_ENV,
             "sas_token": SAS_TOKEN_ENV, "blob_endpoint": BLOB_ENDPOINT_ENV,
             "dfs_endpoint": DFS_ENDPOINT_ENV}
# Azurite's well-known development account (public, in Microsoft's documentation).
_DEVELOPMENT = {
    "AccountName": "devstoreaccount1",
    "AccountKey": "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
                  "KBHBeksoGMGw==",
    "BlobEndpoint": "http://127.0.0.1:10000/devstoreaccount1",
}

_NO_CONTAINER = ("ContainerNotFound", "specified container does not exist")
_DENIED = ("AuthenticationFailed", "AuthorizationFailure", "AuthorizationPermissionMismatch",
           "Server failed to authenticate", "InvalidAuthenticationInfo", "403 Forbidden",
           "401 Unauthorized", "CredentialUnavailable", "AuthenticationRequired")
_UNREACHABLE = ("Could not connect", "Fail to get a new connection", "Connection refused",
                "Failed to connect", "Timeout",
                "timed out", "curl", "Connection reset")


@dataclasses.dataclass(frozen=True)
class AzureSettings:
    """One resolved Azure configuration (:meth:`AzureFileSystem.settings`). Secrets are left out
    of ``repr``.

    Attributes:
        account_name: the account of ``az://`` URLs, or None.
        account_key: its shared key, or None.
        sas_token: a shared access signature, or None.
        blob_endpoint: ``scheme://host[:port]`` of the Blob service, or None (Azure's).
        dfs_endpoint: ``scheme://host[:port]`` of the Data Lake service, or None (Azure's).
    """

    account_name: str | None
    account_key: str | None = dataclasses.field(repr=False)
    sas_token: str | None = dataclasses.field(repr=False)
    blob_endpoint: str | None
    dfs_endpoint: str | None

    def where(self) -> str:
        """The Blob endpoint, or ``Azure account NAME``."""
        if self.blob_endpoint:
            return f"{self.blob_endpoint} (account {self.account_name})"
        return f"Azure account {self.account_name}"

    def limits(self) -> str:
        """For messages: the Azure SDK retries each request by its default policy."""
        return "the Azure SDK's retries"


def _connection_string(text: str) -> dict[str, str]:
    parts = dict(item.split("=", 1) for item in text.split(";") if "=" in item)
    if parts.get("UseDevelopmentStorage", "").lower() == "true":
        return {**_DEVELOPMENT, **{k: v for k, v in parts.items() if k != "UseDevelopmentStorage"}}
    return parts


def _origin(endpoint: str | None) -> str | None:
    """``scheme://host[:port]`` of an endpoint URL (an emulator's may end with its account)."""
    if not endpoint:
        return None
    parts = urlsplit(endpoint if "://" in endpoint else "https://" + endpoint)
    return f"{parts.scheme}://{parts.netloc}"


class AzureFileSystem(ObjectStoreFileSystem):
    """``az://CONTAINER/KEY`` and ``abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/KEY``
    through pyarrow's Azure client; see the module's docstring.

    Every argument left None is read from the environment (module docstring) on each
    operation.

    Args:
        account_name: the storage account of ``az://`` URLs.
        account_key: its shared key.
        sas_token: a shared access signature, instead of the key.
        blob_endpoint: ``http(s)://host[:port]`` of the Blob service (Azurite: its address).
        dfs_endpoint: ``http(s)://host[:port]`` of the Data Lake service.
    """

    protocols = ("az", "abfs", "abfss")
    bucket_word = "container"
    _no_bucket_words = _NO_CONTAINER
    _denied_words = _DENIED
    _unreachable_words = _UNREACHABLE
    _denied_hint = ("wrong or missing credentials, or no permission for the container: check "
                    f"{ACCOUNT_KEY_ENV}, {SAS_TOKEN_ENV} or the Azure identity in use, and the "
                    "container's access")

    def __init__(
        self,
        *,
        account_name: str | None = None,
        account_key: str | None = None,
        sas_token: str | None = None,
        blob_endpoint: str | None = None,
        dfs_endpoint: str | None = None,
    ) -> None:
        super().__init__()
        self._given = {"account_name": account_name, "account_key": account_key,
                       "sas_token": sas_token, "blob_endpoint": blob_endpoint,
                       "dfs_endpoint": dfs_endpoint}
        self._clients: dict[tuple[AzureSettings, str], pafs.AzureFileSystem] = {}
        self._lock = threading.Lock()

    def settings(self) -> AzureSettings:
        """The configuration in effect now: what was given, the rest from the environment."""
        from_string = _connection_string(os.environ.get(CONNECTION_STRING_ENV, ""))

        def pick(name: str, string_key: str) -> str | None:
            given = self._given[name]
            if given is not None:
                return str(given)
            return os.environ.get(_GIVEN_AS[name]) or from_string.get(string_key) or None

        return AzureSettings(
            account_name=pick("account_name", "AccountName"),
            account_key=pick("account_key", "AccountKey"),
            sas_token=pick("sas_token", "SharedAccessSignature"),
            blob_endpoint=_origin(pick("blob_endpoint", "BlobEndpoint")),
            dfs_endpoint=_origin(pick("dfs_endpoint", "DfsEndpoint")),
        )

    def environment(self) -> dict[str, str]:
        """The settings of :data:`ENVIRONMENT` this process has, with what this file system was
        given in their place, so that another process reaches the same account. Credentials
        are included: the result is as secret as they are."""
        env = {name: os.environ[name] for name in ENVIRONMENT if os.environ.get(name)}
        for name, value in self._given.items():
            if value is not None:
                env[_GIVEN_AS[name]] = str(value)
        return env

    # -- URLs and clients ---------------------------------------------------------------------

    def _locate(self, url: str) -> tuple[str, str]:
        """``(container, key)`` of ``az://CONTAINER/KEY`` or
        ``abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/KEY``."""
        scheme, rest = url.split("://", 1)
        authority, _, key = rest.partition("/")
        container = authority.split("@", 1)[0]
        if not container:
            raise UnsupportedURLError(
                f"{url!r} names no container: use {scheme}://CONTAINER/KEY"
                + ("" if scheme == "az" else f" or {scheme}://CONTAINER@ACCOUNT.dfs.core."
                   "windows.net/KEY"))
        return container, key.strip("/")

    # -- Hadoop's directory markers -------------------------------------------------------------

    def _arrow_info(self, url: str) -> pafs.FileInfo:
        info = super()._arrow_info(url)
        if _maybe_marker(info):
            client, _ = self._connect(url)
            if _marks_directory(client, info.path):
                return pafs.FileInfo(info.path, pafs.FileType.Directory)
        return info

    def _children(self, client: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
        # A directory that Hadoop's connectors made on a flat-namespace account is listed twice:
        # as its marker blob (empty) and as the prefix of what it holds. It is one directory.
        try:
            listed = super()._children(client, path)
        except (FileNotFoundError, NotADirectoryError):
            if _marks_directory(client, path):
                return []  # an empty directory: its marker alone
            raise
        # An empty blob listed as a prefix too is a marker: only one without children (an
        # empty directory) costs a request to tell it from an empty file. A blob with data
        # whose name is also a prefix (``x`` beside ``x/y``) is both a file and a directory,
        # listed as both (as on S3), so that neither's data is left out.
        prefixes = {i.path for i in listed if i.type == pafs.FileType.Directory}
        found: dict[tuple[str, bool], pafs.FileInfo] = {}
        for info in listed:
            if info.path in prefixes and (info.type == pafs.FileType.Directory
                                          or _maybe_marker(info)):
                found[info.path, True] = pafs.FileInfo(info.path, pafs.FileType.Directory)
            elif _maybe_marker(info) and _marks_directory(client, info.path):
                found[info.path, True] = pafs.FileInfo(info.path, pafs.FileType.Directory)
            else:
                found[info.path, False] = info
        return list(found.values())

    def makedirs(self, target: str) -> None:
        try:
            super().makedirs(target)
        except OSError as e:
            if not _refused_below_a_marker(e):
                raise
            # A flat-namespace account where Hadoop marked a parent with an empty blob, which
            # pyarrow takes for a file: the missing directories are marked as Hadoop marks them.
            self._mark_directories(target)

    def _delete_dir(self, target: str, path: str) -> None:
        # pyarrow deletes a directory's blobs and its own marker (``dir/``), not Hadoop's
        # (``dir``, which makedirs below Hadoop's markers writes too): that one is deleted here.
        try:
            super()._delete_dir(target, path)
        except FileNotFoundError:
            if not self._delete_hadoop_marker(target, path):
                raise
        else:
            self._delete_hadoop_marker(target, path)

    def _delete_hadoop_marker(self, target: str, path: str) -> bool:
        """Deletes Hadoop's marker blob of the directory *target*; whether there was one."""
        client, _ = self._connect(target)
        marker = path.rstrip("/")
        if not _marks_directory(client, marker):
            return False
        self._call(target, "delete", lambda c: c.delete_file(marker))
        return True

    def _copy_object(self, src: str, dst: str) -> None:
        try:
            super()._copy_object(src, dst)
        except OSError as e:
            if not _refused_below_a_marker(e):
                raise
            # pyarrow refuses a server-side copy below Hadoop's directory marker (it takes the
            # marker for a file): the bytes go through this client instead, block by block.
            source, destination = self._arrow_path(src), self._arrow_path(dst)

            def copy(client: pafs.FileSystem) -> None:
                # compression=None: the bytes as they are, whatever the names end with.
                try:
                    with client.open_input_stream(source, compression=None) as f, \
                            client.open_output_stream(destination, compression=None) as out:
                        while block := f.read(_COPY_BLOCK):
                            out.write(block)
                except BaseException:
                    # pyarrow's stream commits what it holds when closed: a part of the source
                    # is not left at the destination.
                    with contextlib.suppress(OSError):
                        client.delete_file(destination)
                    raise

            self._call(src, "copy", copy)

    def _upload(self, staged: str, url: str) -> None:
        """Uploads *staged* to a hidden blob beside *url* (``.NAME.UUID.upload``), then copies
        it onto *url* in the store and deletes it. pyarrow's Azure stream empties the blob it
        writes as soon as it opens; the target is thus replaced only when the copy ends, whole,
        and a failed upload leaves it as it was. Below Hadoop's directory marker, where pyarrow
        refuses the copy, the data goes straight to the target (empty while it uploads)."""
        head, _, name = url.rpartition("/")
        hidden = f"{head}/.{name}.{uuid.uuid4().hex}.upload"
        super()._upload(staged, hidden)
        try:
            try:
                super()._copy_object(hidden, url)
            except OSError as e:
                if not _refused_below_a_marker(e):
                    raise
                super()._upload(staged, url)
        finally:
            path = self._arrow_path(hidden)
            with contextlib.suppress(OSError):
                self._call(hidden, "delete", lambda c: c.delete_file(path))

    def _mark_directories(self, target: str) -> None:
        """Writes Hadoop's marker blob (empty, ``hdi_isfolder=true``) for *target* and each of
        its parents that is not yet a directory, the outermost first."""
        missing = []
        url = target.rstrip("/")
        while self._locate(url)[1]:
            try:
                if self.stat(url).is_dir:
                    break
            except FileNotFoundError:
                pass
            else:
                raise ObjectStoreFileExistsError(
                    f"cannot create the directory {target}: an object is at {url}")
            missing.append(url)
            url = url.rsplit("/", 1)[0]
        for url in reversed(missing):
            path = self._arrow_path(url)
            self._call(url, "create the directory",
                       lambda c, p=path: c.open_output_stream(p, metadata=_MARKER).close())

    def _account(self, url: str, config: AzureSettings) -> str:
        authority = url.split("://", 1)[1].partition("/")[0]
        if "@" in authority:
            return authority.split("@", 1)[1].split(".", 1)[0]
        if not config.account_name:
            raise ObjectStoreError(
                f"no storage account for {url}: set {ACCOUNT_NAME_ENV} (or "
                f"{CONNECTION_STRING_ENV}), or write the account into the URL "
                "(abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/KEY)")
        return config.account_name

    def _connect(self, url: str) -> tuple[pafs.AzureFileSystem, AzureSettings]:
        config = self.settings()
        account = self._account(url, config)
        key = (config, account)
        with self._lock:
            client = self._clients.get(key)
        if client is not None:
            return client, config
        options: dict[str, Any] = {}
        if account == config.account_name:
            # The configured credentials and endpoints are this account's; another account
            # (named by an abfs:// URL) is reached on Azure with the default chain.
            if config.account_key:
                options["account_key"] = config.account_key
            elif config.sas_token:
                # Arrow appends the token to the account's URL as it is: its "?" is needed.
                options["sas_token"] = "?" + config.sas_token.lstrip("?")
            for prefix, endpoint in (("blob", config.blob_endpoint),
                                     ("dfs", config.dfs_endpoint or config.blob_endpoint)):
                if endpoint:
                    parts = urlsplit(endpoint)
                    options[f"{prefix}_storage_authority"] = parts.netloc
                    options[f"{prefix}_storage_scheme"] = parts.scheme
        client = pafs.AzureFileSystem(account, **options)
        with self._lock:
            return self._clients.setdefault(key, client), config


# Bytes read and written at a time by a copy through the client.
_COPY_BLOCK = 8 << 20
#: The metadata of Hadoop's directory markers.
_MARKER = {"hdi_isfolder": "true"}


def _maybe_marker(info: pafs.FileInfo) -> bool:
    """Whether *info* may be a directory marker: an empty blob."""
    return info.type == pafs.FileType.File and not info.size


def _marks_directory(client: pafs.FileSystem, path: str) -> bool:
    """Whether the empty blob at *path* is a directory marker (its metadata says
    ``hdi_isfolder=true``), as Hadoop's ABFS and WASB connectors write one for each directory
    of a flat-namespace account; pyarrow's client refuses to open such a blob."""
    try:
        client.open_input_file(path).close()
    except OSError as e:
        return "Not a regular file" in str(e)
    return False


def _refused_below_a_marker(e: OSError) -> bool:
    """Whether pyarrow refused an operation because a parent is a blob (ENOTDIR), as it takes
    Hadoop's directory markers for files."""
    return isinstance(e, NotADirectoryError) or "Not a directory" in str(e)
