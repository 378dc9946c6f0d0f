"""``s3://`` URLs: Amazon S3 and S3-compatible object stores (MinIO, Ceph's RGW, ...), through
pyarrow's :class:`pyarrow.fs.S3FileSystem` (the AWS SDK for C++).

Why pyarrow's client and not fsspec's ``s3fs``: pyarrow is already a dependency of the core,
so ``s3://`` costs no new package, while s3fs brings fsspec, aiobotocore and aiohttp, and
aiobotocore pins botocore to a narrow range that often conflicts with the boto3 a user's
environment already has. pyarrow's client is the AWS SDK itself (its credential chain, SigV4,
retries, multipart uploads), and reads run in C++ without holding the GIL, which matters for
TensorFlow's reader threads going through tfrecord-io's plugin.

Configuration is the standard AWS one, read from the environment on every operation (a change
takes effect at once; a client is kept per distinct configuration), or given to
:class:`S3FileSystem` and registered (``fs.register("s3", S3FileSystem(...), replace=True)``):

* **credentials**: the AWS SDK's default chain: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``
  (and ``AWS_SESSION_TOKEN``), then the profile (``AWS_PROFILE``, ``~/.aws/credentials`` and
  ``~/.aws/config``), web identity, the container's and the EC2 instance's role;
* **region**: ``AWS_REGION``, else ``AWS_DEFAULT_REGION``; else, with an endpoint below,
  ``us-east-1``; else (AWS itself) each bucket's own region, asked once per bucket;
* **endpoint**: ``AWS_ENDPOINT_URL_S3``, else ``AWS_ENDPOINT_URL`` (``http://host:9000``, as
  the AWS CLI and SDKs take them), for an S3-compatible store; none means AWS;
* **addressing**: path-style (``ENDPOINT/BUCKET/KEY``) when an endpoint is set, as MinIO and
  Ceph need, virtual-hosted (``BUCKET.s3.REGION.amazonaws.com/KEY``) on AWS;
  ``TFRECORD_IO_S3_ADDRESSING=path`` or ``virtual`` chooses;
* **timeouts and retries**, so that nothing hangs: ``TFRECORD_IO_S3_CONNECT_TIMEOUT`` (seconds
  to connect, default 10), ``TFRECORD_IO_S3_REQUEST_TIMEOUT`` (seconds a request may stay
  silent, default 30), ``AWS_MAX_ATTEMPTS`` (attempts of each request, default 3, the AWS
  SDK's standard retry mode).

Semantics on a store that has no directories:

* A "directory" is a key prefix: ``s3://b/data`` is a directory when a key starts with
  ``data/`` (or the marker object ``data/`` exists, which :meth:`~S3FileSystem.makedirs`
  writes, as Hadoop's S3A and pyarrow do). Listing is by prefix and delimiter, 1,000 keys per
  request, continued until the end.
* Reads are ranged ``GET`` requests of :data:`READ_BUFFER` bytes, fetched ahead of the reader
  in a background thread (:class:`~tfrecord_io.fs.readahead.ReadAhead`, two blocks at most), so
  that parsing and the transfer overlap; a seek elsewhere starts fetching there.
* **Writes are atomic**: ``open(url, "wb")`` stages the data in a local temporary file (in
  ``TMPDIR``) and uploads it when the file is closed (a multipart upload for large files, which
  S3 makes visible only when it completes). Until then nothing is at the URL; a writer closed
  by an exception (``with`` block), abandoned without :meth:`close`, or whose writes failed
  uploads nothing, so no half-written object is ever visible.
  :func:`tfrecord_io.fs.atomic_write` therefore writes in place.
* ``replace`` of a file is a server-side copy (atomic for readers of the destination) and a
  delete; ``rename`` refuses an existing destination; renaming a directory copies each object,
  then deletes the source (not atomic). Buckets are never created or deleted.

Errors (:mod:`tfrecord_io.errors`, each naming the URL): a missing object
:class:`~tfrecord_io.errors.ObjectStoreFileNotFoundError` (a ``FileNotFoundError``); a bucket
that does not exist :class:`~tfrecord_io.errors.BucketNotFoundError`; wrong credentials or no
permission :class:`~tfrecord_io.errors.ObjectStorePermissionError` (a ``PermissionError``); an
unreachable or silent endpoint after the retries, or a connection lost mid-read,
:class:`~tfrecord_io.errors.ObjectStoreError`. All of them are ``OSError`` subclasses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import logging
import os
import tempfile
import threading
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from tfrecord_io.errors import (
    BucketNotFoundError,
    ObjectStoreError,
    ObjectStoreFileExistsError,
    ObjectStoreFileNotFoundError,
    ObjectStorePermissionError,
    TFRecordError,
    UnsupportedURLError,
)
from tfrecord_io.fs.backend import FileInfo, FileSystem, PositionedReader
from tfrecord_io.fs.readahead import ReadAhead

__all__ = [
    "ADDRESSING_ENV",
    "CONNECT_TIMEOUT_ENV",
    "ENDPOINT_ENVS",
    "ENVIRONMENT",
    "READ_BUFFER",
    "REQUEST_TIMEOUT_ENV",
    "S3FileSystem",
    "S3Settings",
]

log = logging.getLogger(__name__)

#: Where an S3-compatible store's endpoint is read from, first found wins (the AWS SDKs' names).
ENDPOINT_ENVS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
#: ``path`` or ``virtual``: how buckets are addressed (default: path with an endpoint).
ADDRESSING_ENV = "TFRECORD_IO_S3_ADDRESSING"
#: Seconds allowed to connect (default 10).
CONNECT_TIMEOUT_ENV = "TFRECORD_IO_S3_CONNECT_TIMEOUT"
#: Seconds a request may go without receiving data (default 30).
REQUEST_TIMEOUT_ENV = "TFRECORD_IO_S3_REQUEST_TIMEOUT"
#: Attempts per request, the AWS SDKs' standard setting (default 3).
MAX_ATTEMPTS_ENV = "AWS_MAX_ATTEMPTS"
#: Every setting of :func:`S3FileSystem.environment` passes on, in the order the AWS SDKs
#: document them: the endpoint, region, credentials, then tfrecord-io's own. ``AWS_PROFILE``
#: is not among them: a profile names a file of this machine's.
ENVIRONMENT = (*ENDPOINT_ENVS, "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
               "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", MAX_ATTEMPTS_ENV, ADDRESSING_ENV,
               CONNECT_TIMEOUT_ENV, REQUEST_TIMEOUT_ENV)
# What each argument of S3FileSystem is called in the environment.
_GIVEN_AS = {
    "endpoint_url": "AWS_ENDPOINT_URL_S3", "region": "AWS_REGION",
    "access_key": "AWS_ACCESS_KEY_ID", "secret_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN", "max_attempts": MAX_ATTEMPTS_ENV,
    "addressing": ADDRESSING_ENV, "connect_timeout": CONNECT_TIMEOUT_ENV,
    "request_timeout": REQUEST_TIMEOUT_ENV,
}
#: Bytes fetched by one ranged GET when reading (a block of the read-ahead).
READ_BUFFER = 8 << 20
# The buffer above the read-ahead, for small reads (a record's header) without a lock each.
_SMALL_READS = 256 << 10
_DEFAULT_ENDPOINT_REGION = "us-east-1"

# Words of the AWS SDK's messages (as pyarrow passes them on) that say what went wrong.
_NO_BUCKET = ("NO_SUCH_BUCKET", "NoSuchBucket", "specified bucket does not exist")
_DENIED = ("ACCESS_DENIED", "AccessDenied", "INVALID_ACCESS_KEY_ID", "InvalidAccessKeyId",
           "SIGNATURE_DOES_NOT_MATCH", "SignatureDoesNotMatch", "EXPIRED_TOKEN", "ExpiredToken",
           "INVALID_TOKEN", "InvalidToken", "HTTP response code: 403", "HTTP response code: 401",
           "MISSING_AUTHENTICATION_TOKEN", "No credentials")
_UNREACHABLE = ("NETWORK_CONNECTION", "curlCode", "REQUEST_TIMEOUT", "Timeout was reached",
                "Couldn't connect", "Connection refused", "timed out")


@dataclasses.dataclass(frozen=True)
class S3Settings:
    """One resolved S3 configuration (:meth:`S3FileSystem.settings`): what this process's
    ``s3://`` uses now, given or from the AWS environment. Secrets are left out of ``repr``.

    Attributes:
        endpoint: an S3-compatible store's ``scheme://host[:port]``, or None for AWS.
        region: the region to sign for, or None (AWS: each bucket's own).
        addressing: ``"path"`` or ``"virtual"``.
        access_key: explicit credentials (given, or the environment's ``AWS_ACCESS_KEY_ID``),
            or None for the rest of the AWS SDK's chain.
        secret_key: the secret of *access_key*.
        session_token: a temporary credential's token, or None.
        profile: ``AWS_PROFILE``, or None.
        connect_timeout: seconds to connect.
        request_timeout: seconds a request may receive nothing.
        max_attempts: attempts per request.
    """

    endpoint: str | None  # scheme://host[:port], as given
    region: str | None
    addressing: str  # "path" | "virtual"
    access_key: str | None
    secret_key: str | None = dataclasses.field(repr=False)
    session_token: str | None = dataclasses.field(repr=False)
    # Not passed on (the AWS SDK reads it): part of the key, so a new profile is a new client.
    profile: str | None
    connect_timeout: float
    request_timeout: float
    max_attempts: int

    def where(self) -> str:
        return self.endpoint or f"AWS S3 ({self.region or 'its default region'})"


def _number(name: str, default: float, given: float | None) -> float:
    if given is not None:
        return given
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number") from None
    if value <= 0:
        raise ValueError(f"{name}={text!r} must be positive")
    return value


def _parse(url: str) -> tuple[str, str]:
    """``(bucket, key)`` of ``s3://bucket/key``: the key without leading or trailing ``/``,
    taken literally (S3 keys are not percent-encoded in these URLs)."""
    rest = url.split("://", 1)[1]
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise UnsupportedURLError(f"{url!r} names no bucket: use s3://BUCKET/KEY")
    return bucket, key.strip("/")


def _arrow_path(bucket: str, key: str) -> str:
    return f"{bucket}/{key}" if key else bucket


def _has(text: str, words: tuple[str, ...]) -> bool:
    return any(w in text for w in words)


class S3FileSystem(FileSystem):
    """``s3://BUCKET/KEY`` through pyarrow's S3 client; see the module's docstring.

    Every argument left None is read from the standard AWS environment (module docstring) on
    each operation.

    Args:
        endpoint_url: an S3-compatible store's endpoint, ``http(s)://host[:port]``.
        region: the region (AWS), or the one an S3-compatible store expects.
        addressing: ``"path"`` or ``"virtual"``.
        access_key: with *secret_key* (and *session_token*), credentials instead of the AWS
            SDK's chain.
        secret_key: the secret of *access_key*.
        session_token: a temporary credential's token.
        connect_timeout: seconds to connect (see :data:`CONNECT_TIMEOUT_ENV`).
        request_timeout: seconds a request may receive nothing (see
            :data:`REQUEST_TIMEOUT_ENV`).
        max_attempts: attempts per request (1: no retries).
    """

    protocols = ("s3",)
    atomic_writes = True

    def __init__(
        self,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        addressing: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
        max_attempts: int | None = None,
    ) -> None:
        if addressing not in (None, "path", "virtual"):
            raise ValueError(f"addressing must be 'path' or 'virtual', not {addressing!r}")
        self._given = {
            "endpoint_url": endpoint_url, "region": region, "addressing": addressing,
            "access_key": access_key, "secret_key": secret_key,
            "session_token": session_token, "connect_timeout": connect_timeout,
            "request_timeout": request_timeout, "max_attempts": max_attempts,
        }
        self._clients: dict[tuple[S3Settings, str | None], pafs.S3FileSystem] = {}
        self._bucket_regions: dict[str, str | None] = {}
        self._buckets_seen: set[tuple[S3Settings, str]] = set()
        self._lock = threading.Lock()

    # -- configuration and clients ------------------------------------------------------------

    def settings(self) -> S3Settings:
        """The configuration in effect now: what was given, the rest from the environment
        (the module's docstring). Raises ``ValueError`` for an unknown addressing style."""
        given = self._given
        endpoint = given["endpoint_url"]
        if endpoint is None:
            endpoint = next((os.environ[n] for n in ENDPOINT_ENVS if os.environ.get(n)), None)
        if endpoint is not None:
            endpoint = endpoint.rstrip("/")
            if "://" not in endpoint:
                endpoint = "https://" + endpoint
        region = given["region"] or os.environ.get("AWS_REGION") or \
            os.environ.get("AWS_DEFAULT_REGION") or None
        if region is None and endpoint is not None:
            region = _DEFAULT_ENDPOINT_REGION
        addressing = given["addressing"] or os.environ.get(ADDRESSING_ENV, "").strip().lower()
        if addressing not in ("", "path", "virtual"):
            raise ValueError(f"{ADDRESSING_ENV}={addressing!r}: use 'path' or 'virtual'")
        if not addressing:
            addressing = "path" if endpoint is not None else "virtual"
        access_key, secret_key = given["access_key"], given["secret_key"]
        token = given["session_token"]
        if access_key is None and secret_key is None:
            # The chain's first link, made explicit so that a changed environment is a new
            # configuration (and a new client), not a cached old key.
            env_key = os.environ.get("AWS_ACCESS_KEY_ID")
            env_secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
            if env_key and env_secret:
                access_key, secret_key = env_key, env_secret
                token = token or os.environ.get("AWS_SESSION_TOKEN") or None
        attempts = int(_number(MAX_ATTEMPTS_ENV, 3, given["max_attempts"]))
        return S3Settings(
            endpoint=endpoint, region=region, addressing=addressing, access_key=access_key,
            secret_key=secret_key, session_token=token,
            profile=os.environ.get("AWS_PROFILE") or None,
            connect_timeout=_number(CONNECT_TIMEOUT_ENV, 10.0, given["connect_timeout"]),
            request_timeout=_number(REQUEST_TIMEOUT_ENV, 30.0, given["request_timeout"]),
            max_attempts=max(1, attempts),
        )

    def environment(self) -> dict[str, str]:
        """The settings of :data:`ENVIRONMENT` that this process has, with what this file
        system was given in their place, so that another process's ``s3://`` resolves as this
        one's does. What is set nowhere stays out: the other process's own settings and the
        rest of the AWS SDK's chain (its profile, its instance role) still apply there.
        Explicit credentials are included: the result is as secret as they are."""
        env = {name: os.environ[name] for name in ENVIRONMENT if os.environ.get(name)}
        given = {name: value for name, value in self._given.items() if value is not None}
        if "endpoint_url" in given:
            for name in ENDPOINT_ENVS:
                env.pop(name, None)
        if "region" in given:
            env.pop("AWS_DEFAULT_REGION", None)
        if "access_key" in given or "secret_key" in given:
            env.pop("AWS_SESSION_TOKEN", None)  # the environment's token is of its own key
        for name, value in given.items():
            env[_GIVEN_AS[name]] = str(value)
        return env

    def _region_of(self, config: S3Settings, bucket: str) -> str | None:
        """The region to sign for: configured, else (AWS only) the bucket's own, asked once."""
        if config.region is not None or config.endpoint is not None:
            return config.region
        with self._lock:
            if bucket in self._bucket_regions:
                return self._bucket_regions[bucket]
        try:
            region: str | None = pafs.resolve_s3_region(bucket)
        except OSError as e:
            log.debug("cannot resolve the region of bucket %s (%s): the SDK's default", bucket, e)
            region = None
        with self._lock:
            self._bucket_regions[bucket] = region
        return region

    def _client(self, bucket: str) -> tuple[pafs.S3FileSystem, S3Settings]:
        config = self.settings()
        region = self._region_of(config, bucket)
        key = (config, region)
        with self._lock:
            client = self._clients.get(key)
        if client is not None:
            return client, config
        options: dict[str, Any] = {
            "connect_timeout": config.connect_timeout,
            "request_timeout": config.request_timeout,
            "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=config.max_attempts),
            "force_virtual_addressing": config.addressing == "virtual",
            # The writers open their stream only to upload the whole file: a small one then
            # goes in a single PutObject instead of a three-request multipart upload.
            "allow_delayed_open": True,
            "allow_bucket_creation": False,
            "allow_bucket_deletion": False,
        }
        if region is not None:
            options["region"] = region
        if config.endpoint is not None:
            parts = urlsplit(config.endpoint)
            options["scheme"] = parts.scheme or "https"
            options["endpoint_override"] = parts.netloc
        if config.access_key is not None:
            options["access_key"] = config.access_key
            options["secret_key"] = config.secret_key
            if config.session_token:
                options["session_token"] = config.session_token
        client = pafs.S3FileSystem(**options)
        with self._lock:
            return self._clients.setdefault(key, client), config

    # -- errors -------------------------------------------------------------------------------

    def _error(self, e: OSError, url: str, what: str, config: S3Settings) -> OSError:
        """The error of :mod:`tfrecord_io.errors` for a failed pyarrow call on *url*."""
        if isinstance(e, TFRecordError):
            return e
        text = str(e)
        bucket = _parse(url)[0]
        if _has(text, _NO_BUCKET):
            return BucketNotFoundError(
                f"cannot {what} {url}: the bucket {bucket!r} does not exist at {config.where()}"
            )
        if _has(text, _DENIED):
            return ObjectStorePermissionError(
                f"access denied to {url} at {config.where()} (wrong or missing credentials, or "
                f"no permission for the bucket: check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                f"AWS_PROFILE or the instance role, and the bucket policy): {text}"
            )
        if isinstance(e, FileNotFoundError):
            return ObjectStoreFileNotFoundError(f"no such object: {url}")
        if _has(text, _UNREACHABLE):
            return ObjectStoreError(
                f"cannot {what} {url}: the object store at {config.where()} did not answer "
                f"(after {config.max_attempts} attempt(s), {config.connect_timeout:g} s to "
                f"connect, {config.request_timeout:g} s per request): {text}"
            )
        return ObjectStoreError(f"cannot {what} {url}: {text}")

    @contextlib.contextmanager
    def _translated(self, url: str, what: str, config: S3Settings) -> Any:
        try:
            yield
        except OSError as e:
            raise self._error(e, url, what, config) from None

    def _call(self, url: str, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        bucket, _ = _parse(url)
        client, config = self._client(bucket)
        with self._translated(url, what, config):
            return fn(client, *args, **kwargs)

    def _missing(self, url: str) -> OSError:
        """What a missing *url* means: no such object, or no such bucket (asked once)."""
        self._check_bucket(url)
        return ObjectStoreFileNotFoundError(f"no such object or directory: {url}")

    def _check_bucket(self, url: str) -> None:
        """:class:`BucketNotFoundError` unless the bucket of *url* exists (a positive answer is
        remembered for the process)."""
        bucket, _ = _parse(url)
        client, config = self._client(bucket)
        with self._lock:
            if (config, bucket) in self._buckets_seen:
                return
        with self._translated(url, "reach", config):
            found = client.get_file_info(bucket).type != pafs.FileType.NotFound
        if not found:
            raise BucketNotFoundError(
                f"the bucket {bucket!r} of {url} does not exist at {config.where()}"
            )
        with self._lock:
            self._buckets_seen.add((config, bucket))

    def _arrow_info(self, url: str) -> pafs.FileInfo:
        bucket, key = _parse(url)
        return self._call(url, "stat", lambda c: c.get_file_info(_arrow_path(bucket, key)))

    @staticmethod
    def _info(url: str, info: pafs.FileInfo) -> FileInfo:
        is_dir = info.type == pafs.FileType.Directory
        mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
        return FileInfo(url, 0 if is_dir else int(info.size or 0), is_dir, mtime)

    # -- the operations -----------------------------------------------------------------------

    def open(self, target: str, mode: str, *, buffer_size: int = READ_BUFFER) -> BinaryIO:  # type: ignore[override]
        bucket, key = _parse(target)
        if not key:
            raise IsADirectoryError(f"{target} is a bucket, not an object")
        if mode == "rb":
            client, config = self._client(bucket)
            try:
                handle = client.open_input_file(_arrow_path(bucket, key))
            except FileNotFoundError:
                raise self._missing(target) from None
            except OSError as e:
                raise self._error(e, target, "open", config) from None
            size = int(handle.size())
            raw = _Reader(handle, size, target, self, config)
            ahead = ReadAhead(raw, size, block_size=buffer_size, name=target)
            return io.BufferedReader(ahead, min(buffer_size, _SMALL_READS))  # type: ignore[return-value]
        if mode == "wb":
            self._check_bucket(target)  # a wrong bucket fails now, not after the data is staged
            return _Writer(self, target)  # type: ignore[return-value]
        raise ValueError(f"unsupported mode {mode!r} for {target}")

    def stat(self, target: str) -> FileInfo:
        info = self._arrow_info(target)
        if info.type == pafs.FileType.NotFound:
            if not _parse(target)[1]:
                self._check_bucket(target)
            raise self._missing(target)
        return self._info(target, info)

    def ls(self, target: str) -> list[FileInfo]:
        bucket, key = _parse(target)
        selector = pafs.FileSelector(_arrow_path(bucket, key), recursive=False)
        client, config = self._client(bucket)
        try:
            found = client.get_file_info(selector)
        except FileNotFoundError:
            raise self._missing(target) from None
        except NotADirectoryError:
            raise NotADirectoryError(f"not a directory: {target}") from None
        except OSError as e:
            raise self._error(e, target, "list", config) from None
        base = target.rstrip("/")
        return [self._info(f"{base}/{info.base_name}", info) for info in found]

    def makedirs(self, target: str) -> None:
        bucket, key = _parse(target)
        if not key:
            self._check_bucket(target)
            return
        info = self._arrow_info(target)
        if info.type == pafs.FileType.File:
            raise ObjectStoreFileExistsError(f"cannot create the directory {target}: an object "
                                             "is there")
        if info.type == pafs.FileType.Directory:
            return
        self._check_bucket(target)
        self._call(target, "create the directory",
                   lambda c: c.create_dir(_arrow_path(bucket, key), recursive=True))

    def delete(self, target: str, recursive: bool) -> None:
        bucket, key = _parse(target)
        if not key:
            raise self._unsupported("delete the bucket", target)
        info = self._arrow_info(target)
        path = _arrow_path(bucket, key)
        if info.type == pafs.FileType.NotFound:
            raise self._missing(target)
        if info.type == pafs.FileType.File:
            self._call(target, "delete", lambda c: c.delete_file(path))
            return
        if not recursive and self.ls(target):
            raise ObjectStoreError(errno.ENOTEMPTY, f"directory not empty: {target}")
        self._call(target, "delete", lambda c: c.delete_dir(path))

    def _copy_object(self, src: str, dst: str) -> None:
        s_bucket, s_key = _parse(src)
        d_bucket, d_key = _parse(dst)
        if not d_key:
            raise IsADirectoryError(f"{dst} is a bucket, not an object")
        self._call(
            src,
            "copy",
            lambda c: c.copy_file(_arrow_path(s_bucket, s_key), _arrow_path(d_bucket, d_key)),
        )

    def rename(self, src: str, dst: str) -> None:
        """Moves *src* to *dst*, which must not exist: a file by a server-side copy and a
        delete; a directory object by object, then the source is deleted (not atomic)."""
        source = self._arrow_info(src)
        if source.type == pafs.FileType.NotFound:
            raise self._missing(src)
        if self._arrow_info(dst).type != pafs.FileType.NotFound:
            raise ObjectStoreFileExistsError(f"rename destination exists: {dst}")
        if source.type == pafs.FileType.File:
            self._copy_object(src, dst)
            self.delete(src, recursive=False)
            return
        s_bucket, s_key = _parse(src)
        base = _arrow_path(s_bucket, s_key)
        entries = self._call(src, "list", lambda c: c.get_file_info(
            pafs.FileSelector(base, recursive=True)))
        self.makedirs(dst)
        d = dst.rstrip("/")
        for entry in entries:
            relative = entry.path[len(base) + 1:]
            if entry.type == pafs.FileType.Directory:
                self.makedirs(f"{d}/{relative}")
            else:
                self._copy_object(f"s3://{entry.path}", f"{d}/{relative}")
        self.delete(src, recursive=True)

    def replace(self, src: str, dst: str) -> None:
        """Moves the file *src* to *dst*, replacing a file there: the copy replaces *dst* at
        once for its readers (S3 writes whole objects), then *src* is deleted."""
        target = self._arrow_info(dst)
        if target.type == pafs.FileType.Directory:
            raise ObjectStoreFileExistsError(f"cannot replace the directory {dst} by {src}")
        source = self._arrow_info(src)
        if source.type == pafs.FileType.NotFound:
            raise self._missing(src)
        if source.type == pafs.FileType.Directory:
            if target.type != pafs.FileType.NotFound:
                raise ObjectStoreFileExistsError(f"cannot replace {dst} by the directory {src}")
            self.rename(src, dst)
            return
        self._copy_object(src, dst)
        self.delete(src, recursive=False)

    # -- used by the file objects ------------------------------------------------------------

    def _upload(self, staged: str, url: str) -> None:
        """Uploads the local file *staged* to *url*: one write of the whole file, memory-mapped,
        into pyarrow's output stream (a multipart upload for large files, completed only when
        every part is in), then its close. One call into C++: nothing can stop it half-way and
        then complete the upload (pyarrow's streams complete when dropped; a failed part makes
        that completion fail, so nothing appears)."""
        bucket, key = _parse(url)
        client, config = self._client(bucket)
        size = os.path.getsize(staged)
        with self._translated(url, "write", config):
            # compression=None: pyarrow would gzip the bytes again for a name ending in .gz.
            out = client.open_output_stream(_arrow_path(bucket, key), compression=None)
            if not size:
                out.close()
                return
            with pa.memory_map(staged) as source:
                # The stream uploads from the mapped pages themselves, in the background: they
                # must stay mapped until it is closed.
                out.write(source.read_buffer())
                out.close()


class _Reader(PositionedReader):
    """Ranged reads of one object (under a :class:`ReadAhead` and a :class:`io.BufferedReader`
    by ``open``)."""

    _size: int

    def __init__(self, handle: Any, size: int, url: str, owner: S3FileSystem,
                 config: S3Settings) -> None:
        super().__init__(url, size)
        self._handle = handle
        self._owner = owner
        self._config = config

    def readinto(self, buffer: Any) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        view = memoryview(buffer).cast("B")
        n = min(len(view), self._size - self._pos)
        if n <= 0:
            return 0
        try:
            self._handle.seek(self._pos)
            got = int(self._handle.readinto(view[:n]))
        except OSError as e:
            error = self._owner._error(e, self.name, f"read byte {self._pos} of", self._config)  # noqa: SLF001 - its own file system
            raise error from None
        self._pos += got
        return got

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(OSError):
                self._handle.close()
        super().close()


class _Writer(io.BufferedIOBase):
    """Stages the data in a local temporary file; :meth:`close` uploads it (the object appears
    then, whole), :meth:`abort` discards it (nothing appears)."""

    def __init__(self, owner: S3FileSystem, url: str) -> None:
        super().__init__()
        self.name = url
        self._owner = owner
        self._staged = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by close/abort
            prefix="tfrecord-io-s3-", suffix=".upload", delete=False
        )
        self._failed: BaseException | None = None
        self._finished = False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.closed:
            raise ValueError(f"write to a closed file ({self.name})")
        try:
            return int(self._staged.write(data))
        except BaseException as e:
            self._failed = e
            raise

    def tell(self) -> int:
        return int(self._staged.tell())

    def flush(self) -> None:
        """Nothing to send yet: the data is uploaded when the file is closed."""
        if not self._staged.closed:
            self._staged.flush()

    def _discard(self) -> None:
        self._finished = True
        with contextlib.suppress(OSError):
            self._staged.close()
        with contextlib.suppress(OSError):
            os.remove(self._staged.name)

    def abort(self) -> None:
        """Closes without uploading: nothing appears at the URL (an object already there stays
        as it was)."""
        if not self._finished:
            self._discard()
        super().close()

    def close(self) -> None:
        """Uploads the staged data; the object appears now, whole.

        Raises:
            ObjectStoreError: the upload failed (nothing appears); or a write had failed, and
                nothing is uploaded.
        """
        if self._finished:
            super().close()
            return
        try:
            if self._failed is not None:
                raise ObjectStoreError(
                    f"not uploading {self.name}: a write to it failed ({self._failed!r})"
                )
            self._staged.close()
            self._owner._upload(self._staged.name, self.name)  # noqa: SLF001 - its own file system
        finally:
            self._discard()
            super().close()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        # Never closed: abandoned, as after an error. Uploading here would publish data that
        # its writer may not have finished.
        if not self._finished:
            log.warning("%s was never closed: nothing is uploaded", self.name)
            self._discard()
