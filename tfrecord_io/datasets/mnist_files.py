"""Where MNIST comes from and goes to: local, ``hdfs://`` or ``http(s)://`` inputs, local or HDFS output.

The converter's one place that touches locations; the location layer (``tfrecord_io.fs``)
replaces this module's body.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import shutil
import urllib.error
import urllib.request
from typing import Any

from tfrecord_io import records as _records
from tfrecord_io.errors import MnistError

__all__ = ["input_kind", "list_names", "join", "read_file", "fetch", "OutputDir"]

log = logging.getLogger(__name__)

_HTTP_TIMEOUT = 60.0
_USER_AGENT = "tfrecord-io (MNIST converter)"


def input_kind(location: str) -> str:
    """``"http"``, ``"hdfs"`` or ``"local"``; ValueError for other URL schemes."""
    scheme = location.split("://", 1)[0].lower() if "://" in location else ""
    if scheme in ("http", "https"):
        return "http"
    return _records._classify(location)[0]  # "local" or "hdfs"; ValueError for others


def list_names(location: str, kind: str) -> set[str]:
    """Names of the files directly in a local or HDFS directory."""
    if kind == "hdfs":
        from tfrecord_io import hdfs  # noqa: PLC0415 - optional, heavier dependency

        try:
            status = hdfs.stat(location)
        except FileNotFoundError:
            raise MnistError(f"{location}: no such directory") from None
        if not status.is_dir:
            raise MnistError(f"{location}: not a directory; give the directory of the IDX files")
        return {posixpath.basename(s.url.rstrip("/")) for s in hdfs.ls(location) if not s.is_dir}
    path = _records._classify(location)[1]
    if not os.path.exists(path):
        raise MnistError(f"{location}: no such directory")
    if not os.path.isdir(path):
        raise MnistError(f"{location}: not a directory; give the directory of the IDX files")
    return {entry.name for entry in os.scandir(path) if entry.is_file()}


def join(base: str, name: str) -> str:
    """*name* in the directory or base URL *base*."""
    if "://" in base:
        return base.rstrip("/") + "/" + name
    return os.path.join(base, name)


def read_file(location: str) -> bytes:
    """The whole content of a local path or hdfs:// URL."""
    with contextlib.ExitStack() as stack:
        stream, _, _ = _records._open_location(location, "rb", stack)
        return stream.read()


def fetch(url: str) -> bytes | None:
    """GET *url*; None if the server says it is not there (404, or 403 as S3 says)."""
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT) as response:  # noqa: S310
            return response.read()
    except urllib.error.HTTPError as exc:
        if exc.code in (403, 404, 410):
            log.debug("Not found: %s (HTTP %d)", url, exc.code)
            return None
        raise MnistError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MnistError(f"{url}: cannot download: {reason}") from None



# --------------------------------------------------------------------------------------------
# Output locations: local directories or HDFS


class OutputDir:
    """The few file system operations the conversion needs, on a local path or an HDFS URL."""

    def __init__(self, location: str) -> None:
        self.kind, self.path = _records._classify(location)
        if self.kind == "hdfs":
            from tfrecord_io import hdfs  # noqa: PLC0415

            self._hdfs: Any = hdfs
            self.path = self.path.rstrip("/") or self.path
        else:
            self.path = os.path.abspath(self.path)

    def join(self, base: str, *names: str) -> str:
        """*base* (this directory or a path under it) extended by *names*."""
        if self.kind == "hdfs":
            return "/".join([base.rstrip("/"), *names])
        return os.path.join(base, *names)

    def exists(self, path: str) -> bool:
        return self._hdfs.exists(path) if self.kind == "hdfs" else os.path.lexists(path)

    def is_dir(self, path: str) -> bool:
        if self.kind == "hdfs":
            return self._hdfs.exists(path) and self._hdfs.stat(path).is_dir
        return os.path.isdir(path)

    def makedirs(self, path: str) -> None:
        if self.kind == "hdfs":
            self._hdfs.makedirs(path)
        else:
            os.makedirs(path, exist_ok=True)

    def remove_tree(self, path: str) -> None:
        if self.kind == "hdfs":
            self._hdfs.delete(path, recursive=True)
        elif os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)

    def rename(self, src: str, dst: str) -> None:
        if self.kind == "hdfs":
            self._hdfs.rename(src, dst)
        else:
            os.rename(src, dst)

    def touch(self, path: str) -> None:
        if self.kind == "hdfs":
            with self._hdfs.open(path, "wb"):
                pass
        else:
            with open(path, "wb"):
                pass

    def size(self, path: str) -> int:
        return self._hdfs.stat(path).length if self.kind == "hdfs" else os.path.getsize(path)

    def hadoop_url(self, path: str) -> str:
        """The path as Spark should see it: local paths as file: URLs, so that a default
        file system of HDFS does not capture them."""
        return path if self.kind == "hdfs" else "file://" + path
