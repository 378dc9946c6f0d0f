"""Where MNIST comes from and goes to: local, ``hdfs://``, ``s3://`` or ``http(s)://`` inputs,
local, HDFS or S3 output, all through the location layer (:mod:`tfrecord_io.fs`)."""

from __future__ import annotations

import logging
import os
import posixpath

from tfrecord_io import fs
from tfrecord_io.errors import MnistError

__all__ = ["input_kind", "list_names", "read_file", "fetch", "OutputDir"]

log = logging.getLogger(__name__)

_HTTP_TIMEOUT = 60.0


def input_kind(location: str) -> str:
    """``"http"`` for ``http(s)://`` base URLs (files requested by name), else ``"listable"``.

    Raises:
        UnsupportedURLError: a URL scheme no file system serves (a ``ValueError``).
    """
    protocol = fs.split_url(location)[0]
    if protocol in ("http", "https"):
        return "http"
    fs.filesystem(location)  # an unknown scheme fails here, before anything is read
    return "listable"


def list_names(location: str) -> set[str]:
    """Names of the regular files directly in a local, HDFS or S3 directory (a FIFO or device
    named like an IDX file is not one: it is never read)."""
    try:
        info = fs.stat(location)
    except FileNotFoundError:
        raise MnistError(f"{location}: no such directory") from None
    if not info.is_dir:
        raise MnistError(f"{location}: not a directory; give the directory of the IDX files")
    return {
        posixpath.basename(i.url.rstrip("/")) for i in fs.ls(location, detail=True)
        if not i.is_dir and not i.special
    }


def read_file(location: str) -> bytes:
    """The whole content of a file at a path or URL."""
    with fs.open(location) as f:
        return f.read()


def fetch(url: str) -> bytes | None:
    """GET *url*; None if the server says it is not there (404, 410, or 401/403 as S3 says)."""
    try:
        with fs.open(url, timeout=_HTTP_TIMEOUT) as f:
            return f.read()
    except (FileNotFoundError, PermissionError):
        log.debug("Not found: %s", url)
        return None
    except OSError as exc:
        raise MnistError(f"{url}: cannot download: {exc}") from None


class OutputDir:
    """The conversion's output directory, local, HDFS or S3: its path and the URL Spark uses."""

    def __init__(self, location: str) -> None:
        self.local = fs.is_local(location)
        if self.local:
            self.path = os.path.abspath(fs.split_url(location)[1])
        else:
            self.path = location.rstrip("/") or location

    def hadoop_url(self, path: str) -> str:
        """The path as Spark should see it: local paths as file: URLs, so that a default
        file system of HDFS does not capture them."""
        return fs.as_url(path)
