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

Semantics (key prefixes as directories, read-ahead of ranged GETs, atomic writes, copies for
renames) and errors are those of every object store: :mod:`tfrecord_io.fs.objectstore`. On S3 a
large file is uploaded in a multipart upload, which S3 makes visible only when it completes.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from tfrecord_io.fs.objectstore import READ_BUFFER, ObjectStoreFileSystem

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
_DEFAULT_ENDPOINT_REGION = "us-east-1"
# Seconds before a bucket's region that could not be found is asked again.
_REGION_RETRY_SECONDS = 60.0

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
        """The endpoint, or ``AWS S3 (REGION)``."""
        return self.endpoint or f"AWS S3 ({self.region or 'its default region'})"

    def limits(self) -> str:
        """The attempts and timeouts of a request, for messages."""
        return (f"{self.max_attempts} attempt(s), {self.connect_timeout:g} s to connect, "
                f"{self.request_timeout:g} s per request")


def _number(name: str, default: float, given: float | None, *, whole: bool = False) -> float:
    """*given*, else the environment's *name* (a positive number; a whole one if *whole*), else
    *default*."""
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
    if whole and not value.is_integer():
        raise ValueError(f"{name}={text!r} must be a whole number")
    return value


class S3FileSystem(ObjectStoreFileSystem):
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
    _no_bucket_words = _NO_BUCKET
    _denied_words = _DENIED
    _unreachable_words = _UNREACHABLE
    _denied_hint = ("wrong or missing credentials, or no permission for the bucket: check "
                    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the instance role, "
                    "and the bucket policy")

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
        super().__init__()
        if addressing not in (None, "path", "virtual"):
            raise ValueError(f"addressing must be 'path' or 'virtual', not {addressing!r}")
        self._given = {
            "endpoint_url": endpoint_url, "region": region, "addressing": addressing,
            "access_key": access_key, "secret_key": secret_key,
            "session_token": session_token, "connect_timeout": connect_timeout,
            "request_timeout": request_timeout, "max_attempts": max_attempts,
        }
        self._clients: dict[tuple[S3Settings, str | None], pafs.S3FileSystem] = {}
        # A bucket's region, or None until the monotonic time when a failed lookup is retried.
        self._bucket_regions: dict[str, str | None] = {}
        self._region_retry: dict[str, float] = {}
        self._lock = threading.Lock()

    # -- configuration and clients ------------------------------------------------------------

    def settings(self) -> S3Settings:
        """The configuration in effect now: what was given, the rest from the environment
        (the module's docstring). Raises ``ValueError`` for an unknown addressing style, or for
        a timeout or number of attempts in the environment that is not a positive number (a
        whole one, for attempts)."""
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
        attempts = int(_number(MAX_ATTEMPTS_ENV, 3, given["max_attempts"], whole=True))
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
            if time.monotonic() < self._region_retry.get(bucket, 0.0):
                return None
        try:
            region: str | None = pafs.resolve_s3_region(bucket)
        except OSError as e:
            # Asked again after a while: a passing failure must not sign every later request
            # of the process for the wrong region.
            log.debug("cannot resolve the region of bucket %s (%s): the SDK's default", bucket, e)
            with self._lock:
                self._region_retry[bucket] = time.monotonic() + _REGION_RETRY_SECONDS
            return None
        with self._lock:
            self._bucket_regions[bucket] = region
        return region

    def _connect(self, url: str) -> tuple[pafs.S3FileSystem, S3Settings]:
        bucket = self._locate(url)[0]
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
