"""``gs://`` URLs: Google Cloud Storage, through pyarrow's :class:`pyarrow.fs.GcsFileSystem`
(Google's Cloud Storage client for C++).

Why pyarrow's client: it is already a dependency of the core (as for ``s3://``), it is Google's
own client library, and its reads run in C++ without holding the GIL. Inside TensorFlow,
``gs://`` stays TensorFlow's own file system (tfrecord-io's plugin does not replace it); this
module serves the rest of tfrecord-io: the readers and writers, listing and expansion of inputs,
the command line, the cluster's files.

Configuration, read from the environment on every operation (a client is kept per distinct
configuration), or given to :class:`GcsFileSystem` and registered
(``fs.register("gs", GcsFileSystem(...), replace=True)``):

* **credentials**: Google's Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``
  naming a service account's key file, ``gcloud auth application-default login``, or the VM's
  service account);
* **project**: ``GOOGLE_CLOUD_PROJECT`` (only creating buckets needs one; tfrecord-io never
  does);
* **emulator**: ``STORAGE_EMULATOR_HOST`` (``http://host:port``, the name Google's client
  libraries take), for fake-gcs-server or Google's storage testbench: requests go there,
  unauthenticated;
* **retries**: ``TFRECORD_IO_GCS_RETRY_SECONDS``, how long a failing request is retried before
  the error is raised (default 30; Google's client would retry for 15 minutes, which looks
  like a hang).

Semantics and errors are those of every object store (:mod:`tfrecord_io.fs.objectstore`): key
prefixes as directories, ranged reads fetched ahead, writes that appear whole when closed (a
resumable upload, finalized at once), renames as server-side copies.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import threading
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from tfrecord_io.fs.objectstore import ObjectStoreFileSystem

__all__ = ["EMULATOR_ENV", "ENVIRONMENT", "PROJECT_ENV", "RETRY_ENV", "GcsFileSystem",
           "GcsSettings"]

#: ``http://host:port`` of an emulator (fake-gcs-server, the storage testbench).
EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
#: The project (for creating buckets only).
PROJECT_ENV = "GOOGLE_CLOUD_PROJECT"
#: Seconds a failing request is retried (default 30).
RETRY_ENV = "TFRECORD_IO_GCS_RETRY_SECONDS"
#: What :meth:`GcsFileSystem.environment` passes on to another process.
ENVIRONMENT = (EMULATOR_ENV, PROJECT_ENV, RETRY_ENV)
_GIVEN_AS = {"emulator": EMULATOR_ENV, "project": PROJECT_ENV, "retry_seconds": RETRY_ENV}
_DEFAULT_RETRY_SECONDS = 30.0

_NO_BUCKET = ("bucket does not exist", "Bucket not found", "NoSuchBucket")
_DENIED = ("PERMISSION_DENIED", "UNAUTHENTICATED", "status_code=403", "status_code=401",
           "Could not automatically determine credentials", "Permission denied")
_UNREACHABLE = ("UNAVAILABLE", "DEADLINE_EXCEEDED", "Couldn't connect", "Connection refused",
                "Retry policy exhausted", "timed out", "curl")


@dataclasses.dataclass(frozen=True)
class GcsSettings:
    """One resolved GCS configuration (:meth:`GcsFileSystem.settings`).

    Attributes:
        emulator: ``scheme://host[:port]`` of an emulator, or None (Google's service).
        project: the project, or None.
        retry_seconds: how long a failing request is retried.
    """

    emulator: str | None
    project: str | None
    retry_seconds: float

    def where(self) -> str:
        """The emulator, or ``Google Cloud Storage``."""
        return self.emulator or "Google Cloud Storage"

    def limits(self) -> str:
        """For messages: how long requests were retried."""
        return f"{self.retry_seconds:g} s of retries"


class GcsFileSystem(ObjectStoreFileSystem):
    """``gs://BUCKET/KEY`` through pyarrow's GCS client; see the module's docstring.

    Every argument left None is read from the environment on each operation.

    Args:
        emulator: ``http://host:port`` of an emulator.
        project: the project.
        retry_seconds: how long a failing request is retried.
    """

    protocols = ("gs",)
    _no_bucket_words = _NO_BUCKET
    _denied_words = _DENIED
    _unreachable_words = _UNREACHABLE
    _denied_hint = ("wrong or missing credentials, or no permission for the bucket: check "
                    "GOOGLE_APPLICATION_CREDENTIALS or the service account in use, and the "
                    "bucket's IAM")

    def __init__(self, *, emulator: str | None = None, project: str | None = None,
                 retry_seconds: float | None = None) -> None:
        super().__init__()
        self._given: dict[str, Any] = {"emulator": emulator, "project": project,
                                       "retry_seconds": retry_seconds}
        self._clients: dict[GcsSettings, pafs.GcsFileSystem] = {}
        self._lock = threading.Lock()

    def settings(self) -> GcsSettings:
        """The configuration in effect now: what was given, the rest from the environment.
        Raises ``ValueError`` for a retry time that is not a positive number."""
        emulator = self._given["emulator"] or os.environ.get(EMULATOR_ENV) or None
        if emulator is not None:
            emulator = emulator.rstrip("/")
            if "://" not in emulator:
                emulator = "http://" + emulator
        retry = self._given["retry_seconds"]
        if retry is None:
            text = os.environ.get(RETRY_ENV, "").strip()
            try:
                retry = float(text) if text else _DEFAULT_RETRY_SECONDS
            except ValueError:
                raise ValueError(f"{RETRY_ENV}={text!r} is not a number") from None
        if retry <= 0:
            raise ValueError(f"the GCS retry time must be positive, not {retry!r}")
        return GcsSettings(emulator=emulator,
                           project=self._given["project"] or os.environ.get(PROJECT_ENV) or None,
                           retry_seconds=float(retry))

    def environment(self) -> dict[str, str]:
        """The settings of :data:`ENVIRONMENT` this process has, with what this file system was
        given in their place. ``GOOGLE_APPLICATION_CREDENTIALS`` is not among them: it names a
        file of this machine's."""
        env = {name: os.environ[name] for name in ENVIRONMENT if os.environ.get(name)}
        for name, value in self._given.items():
            if value is not None:
                env[_GIVEN_AS[name]] = str(value)
        return env

    def _children(self, client: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
        """The directory's entries, derived from a listing of everything under it: pyarrow's
        listing by delimiter loses the subdirectories without a marker object of their own when
        the listed directory has one (as ``makedirs``, Hadoop's connector and gcsfuse write)."""
        found = client.get_file_info(pafs.FileSelector(path, recursive=True,
                                                       allow_not_found=True))
        if not found:
            kind = client.get_file_info(path).type
            if kind == pafs.FileType.NotFound:
                raise FileNotFoundError(path)
            if kind == pafs.FileType.File:
                raise NotADirectoryError(path)
        # By name and kind: an object whose name is also the prefix of others (``x`` beside
        # ``x/y``) is both a file and a directory, listed as both (as on S3), so that neither's
        # data is left out.
        entries: dict[tuple[str, bool], pafs.FileInfo] = {}
        for info in found:
            name, deeper, _ = info.path[len(path) + 1:].partition("/")
            if not name:
                # A key below an empty path part (``dir//x``): listed as the directory itself,
                # as pyarrow's listing by delimiter does, so that the caller knows it is there.
                entries["", True] = pafs.FileInfo(f"{path}/", pafs.FileType.Directory)
                continue
            is_dir = bool(deeper) or info.type == pafs.FileType.Directory
            if (name, is_dir) in entries:
                continue
            entries[name, is_dir] = (pafs.FileInfo(f"{path}/{name}", pafs.FileType.Directory)
                                     if deeper else info)
        return [entries[key] for key in sorted(entries)]

    def _connect(self, url: str) -> tuple[pafs.GcsFileSystem, GcsSettings]:
        config = self.settings()
        with self._lock:
            client = self._clients.get(config)
        if client is not None:
            return client, config
        options: dict[str, Any] = {
            "retry_time_limit": datetime.timedelta(seconds=config.retry_seconds),
        }
        if config.project:
            options["project_id"] = config.project
        if config.emulator:
            parts = urlsplit(config.emulator)
            options.update(anonymous=True, scheme=parts.scheme, endpoint_override=parts.netloc)
        client = pafs.GcsFileSystem(**options)
        with self._lock:
            return self._clients.setdefault(config, client), config
