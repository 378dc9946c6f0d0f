"""Client exceptions (hdfs-native's RPC errors, the ``hdfs`` package's WebHDFS errors, requests'
connection errors) turned into the :mod:`tfrecord_io.errors` HDFS family, naming the URL."""

from __future__ import annotations

import re

from tfrecord_io.errors import (
    HdfsError,
    HdfsFileExistsError,
    HdfsFileNotFoundError,
    HdfsNotADirectoryError,
    HdfsPermissionError,
)
from tfrecord_io.fs.hdfs.config import current_user
from tfrecord_io.fs.hdfs.urls import Location

__all__ = ["first_line", "is_connect_error", "translate"]


def first_line(e: BaseException) -> str:
    """A one-line reason from a client exception (no Java stack trace, no urllib3 noise)."""
    text = str(e.args[0]) if getattr(e, "args", None) else str(e)
    m = re.match(r'RPCError\("([^"]+)", "(.*)', text, re.S)
    if m:  # hdfs-native: RPCError("java.class", "message\n\tat ...")
        msg = m.group(2).split("\\n")[0].split("\n")[0].replace('\\"', '"')
        return f"{m.group(1).rsplit('.', 1)[-1]}: {msg}"
    m = re.search(r"\[Errno -?\d+\] [^'\")]+", text)
    if m:  # requests/urllib3: keep the OS reason only
        return m.group(0).strip()
    m = re.search(r"connect timeout=([\d.]+)", text)
    if m:
        return f"connect timed out after {float(m.group(1)):g} s"
    text = text.strip()
    return text.splitlines()[0] if text else type(e).__name__


def _exception_class(e: BaseException) -> str:
    """The Java exception class behind a client error, if it says."""
    cls = getattr(e, "exception", None)  # hdfs (WebHDFS) package
    if cls:
        return str(cls)
    m = re.match(r'RPCError\("([^"]+)"', str(e.args[0]) if e.args else "")
    return m.group(1).rsplit(".", 1)[-1] if m else ""


def is_connect_error(e: BaseException) -> bool:
    """Whether a client exception means the server could not be reached."""
    try:
        import requests  # noqa: PLC0415 - only WebHDFS errors need it

        if isinstance(e, requests.exceptions.ConnectionError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(e, (ConnectionError, TimeoutError)) or (
        isinstance(e, OSError)
        and not isinstance(e, (FileNotFoundError, PermissionError, FileExistsError))
        and any(s in str(e) for s in ("Connection refused", "timed out", "unreachable", "os error"))
    )


def _blocking_file(url: str, detail: str) -> str:
    """What a ``ParentNotDirectoryException`` says (``/a/f (is not a directory)``), with the
    file as a URL of *url*'s file system."""
    m = re.search(r"(/.*) \(is not a directory\)", detail)
    authority = re.match(r"[A-Za-z][\w+.-]*://[^/]*", url)
    if m is None or authority is None:
        return detail
    return f"{authority.group(0)}{m.group(1)} is a file, not a directory"


def translate(e: BaseException, url: str, op: str, loc: Location | None = None) -> HdfsError:
    """The :class:`HdfsError` (or subclass) for a client exception raised while doing *op* on
    *url*; one of ours is returned unchanged."""
    if isinstance(e, HdfsError):  # ours (the hdfs package's HdfsError is another class)
        return e
    cls = _exception_class(e)
    detail = first_line(e)
    if isinstance(e, FileNotFoundError) or cls == "FileNotFoundException":
        return HdfsFileNotFoundError(f"no such file or directory: {url} ({detail})")
    if isinstance(e, PermissionError) or cls == "AccessControlException":
        return HdfsPermissionError(
            f"permission denied for HDFS user {current_user()!r} on {url} ({op}): {detail}"
        )
    if isinstance(e, FileExistsError) or cls in (
        "FileAlreadyExistsException",
        "AlreadyBeingCreatedException",
    ):
        return HdfsFileExistsError(f"already exists: {url} ({detail})")
    if cls == "ParentNotDirectoryException":
        return HdfsNotADirectoryError(f"cannot {op} {url}: {_blocking_file(url, detail)}")
    if cls == "PathIsNotEmptyDirectoryException":
        return HdfsError(f"directory not empty: {url} (use recursive=True)")
    if is_connect_error(e) and loc is not None:
        return HdfsError(f"cannot reach HDFS at {loc.authority} to {op} {url}: {detail}")
    return HdfsError(f"HDFS {op} failed for {url}: {detail}")
