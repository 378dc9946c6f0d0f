"""The protocol registry: which :class:`~tfrecord_io.fs.backend.FileSystem` serves each URL
scheme. Built-in file systems are imported on first use, so ``import tfrecord_io.fs`` stays
light (no HDFS, HTTP or object store client loaded)."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from tfrecord_io.errors import UnsupportedURLError
from tfrecord_io.fs.backend import FileSystem
from tfrecord_io.fs.urls import redact, split_url

__all__ = ["environment", "filesystem", "protocols", "register", "unregister"]

_Factory = FileSystem | Callable[[], FileSystem] | str

# scheme -> a FileSystem, a callable making one, or "module:Class" to import on first use.
_registry: dict[str, _Factory] = {
    "file": "tfrecord_io.fs.local:LocalFileSystem",
    "hdfs": "tfrecord_io.fs.hdfs:HdfsFileSystem",
    "webhdfs": "tfrecord_io.fs.hdfs:HdfsFileSystem",
    "http": "tfrecord_io.fs.http:HttpFileSystem",
    "https": "tfrecord_io.fs.http:HttpFileSystem",
    "s3": "tfrecord_io.fs.s3:S3FileSystem",
    "az": "tfrecord_io.fs.azure:AzureFileSystem",
    "abfs": "tfrecord_io.fs.azure:AzureFileSystem",
    "abfss": "tfrecord_io.fs.azure:AzureFileSystem",
    "gs": "tfrecord_io.fs.gcs:GcsFileSystem",
}
_instances: dict[Any, FileSystem] = {}
_lock = threading.Lock()


def register(
    schemes: str | Iterable[str],
    filesystem: FileSystem | Callable[[], FileSystem],
    *,
    replace: bool = False,
) -> None:
    """Serves URLs of *schemes* with *filesystem* (an instance, or a callable making one on
    first use).

    Raises:
        ValueError: a scheme is already registered and *replace* is false.
    """
    names = [schemes] if isinstance(schemes, str) else list(schemes)
    with _lock:
        for scheme in names:
            key = scheme.lower()
            if key in _registry and not replace:
                raise ValueError(f"the URL scheme {key!r} is already registered")
        for scheme in names:
            _registry[scheme.lower()] = filesystem


def unregister(schemes: str | Iterable[str]) -> None:
    """Stops serving URLs of *schemes* (undoes :func:`register`, for instance at the end of
    a test); the file system made for them is forgotten.

    Raises:
        ValueError: a scheme is not registered.
    """
    names = [s.lower() for s in ([schemes] if isinstance(schemes, str) else schemes)]
    with _lock:
        missing = [scheme for scheme in names if scheme not in _registry]
        if missing:
            raise ValueError(f"the URL schemes {missing} are not registered")
        for scheme in names:
            factory = _registry.pop(scheme)
            if factory not in _registry.values():
                _instances.pop(factory, None)


def protocols() -> list[str]:
    """The URL schemes served, sorted (``file`` means local paths too)."""
    with _lock:
        return sorted(_registry)


def _instance(factory: _Factory) -> FileSystem:
    if isinstance(factory, FileSystem):
        return factory
    with _lock:
        made = _instances.get(factory)
        if made is not None:
            return made
    if isinstance(factory, str):
        module, _, cls = factory.partition(":")
        made = getattr(importlib.import_module(module), cls)()
    else:
        made = factory()
    with _lock:
        return _instances.setdefault(factory, made)


def filesystem(location: str | bytes | os.PathLike[Any]) -> tuple[FileSystem, str]:
    """``(file system, target)`` for a path or URL (see :func:`~tfrecord_io.fs.split_url`).

    Raises:
        UnsupportedURLError: no file system is registered for its scheme (also a ValueError).
    """
    scheme, target = split_url(location)
    with _lock:
        factory = _registry.get(scheme)
    if factory is None:
        known = ", ".join(f"{s}://" for s in protocols())
        raise UnsupportedURLError(
            f"unsupported URL scheme {scheme!r} in {redact(target)!r}: use a local path or a "
            f"URL of {known} (tfrecord_io.fs.register adds others)"
        )
    return _instance(factory), target


def environment() -> dict[str, str]:
    """The environment variables that give another process (a cluster's node) the
    configuration of every registered file system as it stands in this process (each one's
    :meth:`~tfrecord_io.fs.FileSystem.environment`): an object store configured once here is
    configured there too. It may hold credentials."""
    with _lock:
        factories = list(dict.fromkeys(_registry.values(), None))
    env: dict[str, str] = {}
    for factory in factories:
        env.update(_instance(factory).environment())
    return env
