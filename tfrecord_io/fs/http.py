"""``http://`` and ``https://`` URLs, read-only, through :mod:`urllib.request`.

Every network operation has a timeout (:data:`TIMEOUT` seconds, or ``timeout=`` of
:func:`tfrecord_io.fs.open`). Files open as seekable binary readers: a seek starts a new request
with a ``Range`` header (a server that ignores it is read and discarded up to the offset).
HTTP 404/410 raise :class:`~tfrecord_io.errors.HttpFileNotFoundError`, 401/403
:class:`~tfrecord_io.errors.HttpPermissionError`; HTTP has no directories, so listing, globbing
and writing raise :class:`~tfrecord_io.errors.UnsupportedOperationError`.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import io
import re
import urllib.error
import urllib.request
from typing import Any, BinaryIO
from urllib.parse import unquote, urlsplit, urlunsplit

from tfrecord_io import __version__
from tfrecord_io.errors import (
    FileChangedError,
    HttpError,
    HttpFileNotFoundError,
    HttpPermissionError,
)
from tfrecord_io.fs.backend import FileInfo, FileSystem, PositionedReader, seek_position
from tfrecord_io.fs.urls import redact

__all__ = ["TIMEOUT", "HttpFileSystem", "HttpReader"]

#: Seconds allowed for connecting and for each read from the server.
TIMEOUT = 30.0
_USER_AGENT = f"tfrecord-io/{__version__}"
_BUFFER = 256 * 1024
# The answers to HEAD of a server that may serve GET all the same: 403 (a presigned URL signs
# its method), 405 (Method Not Allowed).
_HEAD_REFUSALS = (403, 405)


def _status_error(code: int, reason: str, url: str) -> HttpError:
    what = f"HTTP {code} {reason}".strip()
    if code in (404, 410):
        return HttpFileNotFoundError(f"no such file: {url} ({what})")
    if code in (401, 403):
        return HttpPermissionError(f"access denied to {url} ({what})")
    return HttpError(f"{url}: {what}")


def _without_userinfo(url: str) -> tuple[str, dict[str, str]]:
    """*url* without its ``user:password@``, and the Basic authorization header it stood for
    (none when it has none)."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, {}
    netloc = parts.netloc.rpartition("@")[2]
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    header = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=netloc)), {"Authorization": header}


def _origin(url: str) -> tuple[str, str, int | str | None]:
    """The scheme, host and port of *url* (the default port of its scheme when it names none;
    a port that is no number as it is written)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port: int | str | None = parts.port
    except ValueError:
        port = parts.netloc.rpartition(":")[2]
    return scheme, (parts.hostname or "").lower(), \
        port or {"http": 80, "https": 443}.get(scheme)


class _RedirectHandler(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but sends the ``Authorization`` of a URL's
    ``user:password@`` only to its own host: urllib would pass it on to any host the server
    redirects to (a CDN, a presigned S3 URL, which refuses a second signature)."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(new.full_url) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


_OPENER = urllib.request.build_opener(_RedirectHandler)


def _request(url: str, timeout: float, method: str = "GET", start: int = 0,
             end: int | None = None, refusals: tuple[int, ...] = ()) -> Any:
    """The response to one request (of the bytes from *start* to *end*, inclusive, when
    either is given); ``None`` for a range past the end (416) or a status of *refusals*.
    Other errors become the HttpError family naming the URL (its credentials hidden). A
    ``user:password@`` in the URL is sent as Basic authorization, to its host only (not to
    another one it redirects to)."""
    target, headers = _without_userinfo(url)
    headers["User-Agent"] = _USER_AGENT
    ranged = bool(start) or end is not None
    if ranged:
        headers["Range"] = f"bytes={start}-{'' if end is None else end}"
    request = urllib.request.Request(target, method=method, headers=headers)  # noqa: S310
    url = redact(url)
    try:
        return _OPENER.open(request, timeout=timeout)
    except urllib.error.HTTPError as e:
        e.close()
        if (e.code == 416 and ranged) or e.code in refusals:  # 416: nothing to read
            return None
        raise _status_error(e.code, str(e.reason or ""), url) from None
    except urllib.error.URLError as e:
        raise HttpError(f"cannot reach {url}: {e.reason}") from None
    except TimeoutError:
        raise HttpError(f"{url}: no answer within {timeout:g} s") from None
    except (OSError, http.client.HTTPException) as e:
        raise HttpError(f"cannot reach {url}: {e}") from None


def _length(response: Any) -> int | None:
    value = response.headers.get("Content-Length")
    if value is None or response.headers.get("Content-Encoding") not in (None, "identity"):
        return None
    try:
        return int(value)
    except ValueError:
        return None


class HttpReader(PositionedReader):
    """A seekable raw reader of one URL (wrapped in a buffered reader by the file system)."""

    def __init__(self, url: str, timeout: float = TIMEOUT) -> None:
        response = _request(url, timeout)  # raises now if the URL is not there
        super().__init__(redact(url), _length(response))  # its name shows in messages
        self._url = url
        self._timeout = timeout
        self._response = response

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        pos = seek_position(self.name, self._pos, self._size, offset, whence)
        if pos != self._pos:
            self._drop()
            self._pos = pos
        return pos

    def _drop(self) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None

    def _open_at(self, pos: int) -> Any:
        response = _request(self._url, self._timeout, start=pos)
        if response is not None and pos and response.status != 206:
            skip = pos  # the server sent the whole file: read up to the offset
            while skip:
                chunk = response.read(min(skip, 1 << 20))
                if not chunk:
                    break
                skip -= len(chunk)
        return response

    def readinto(self, buffer: Any) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        if self._size is not None and self._pos >= self._size:
            return 0
        if self._response is None:
            self._response = self._open_at(self._pos)
            if self._response is None:  # the server has no byte there (416)
                if self._size is not None:  # below the size it had: it shrank
                    raise FileChangedError(
                        f"reading {self.name} failed at byte {self._pos}: the server has no "
                        f"byte there, though the file had {self._size} bytes when opened: it "
                        "changed while being read")
                return 0
        try:
            n = self._response.readinto(buffer)
        except (OSError, http.client.HTTPException) as e:
            self._drop()
            raise HttpError(f"reading {self.name} failed at byte {self._pos}: {e}") from None
        if not n and len(memoryview(buffer)) and self._size is not None and \
                self._pos < self._size:
            # http.client ends a body cut short quietly: that is lost data, not the end.
            self._drop()
            raise HttpError(
                f"reading {self.name} failed at byte {self._pos}: the server ended the answer "
                f"before the file's {self._size} bytes"
            )
        self._pos += n
        return n

    def close(self) -> None:
        self._drop()
        super().close()


class HttpFileSystem(FileSystem):
    """Read-only HTTP(S): :meth:`open` for reading and :meth:`stat`."""

    protocols = ("http", "https")
    can_list = False

    def open(self, target: str, mode: str, *, timeout: float = TIMEOUT) -> BinaryIO:  # type: ignore[override]
        if mode != "rb":
            raise self._unsupported("write", target)
        return io.BufferedReader(HttpReader(target, timeout), _BUFFER)  # type: ignore[return-value]

    def stat(self, target: str) -> FileInfo:
        """Size (``Content-Length``, -1 if the server does not say) and ``Last-Modified`` from a
        HEAD request. A server that refuses HEAD where it serves GET (a presigned URL, whose
        signature covers the method: 403; or 405) is asked for the first byte instead
        (``Range: bytes=0-0``, the size from ``Content-Range``); only if that fails too is the
        error raised, the GET's."""
        response = _request(target, TIMEOUT, method="HEAD", refusals=_HEAD_REFUSALS)
        if response is None:
            return self._stat_by_get(target)
        return self._info(target, response, _length(response))

    def _stat_by_get(self, target: str) -> FileInfo:
        """:meth:`stat` by a GET of the first byte; its body is not read."""
        response = _request(target, TIMEOUT, end=0)
        if response is None:  # 416: an empty file has no byte 0
            return FileInfo(target, 0, False, 0.0)
        size: int | None = None
        if response.status == 206:
            total = re.fullmatch(r"\s*bytes\s+\d+-\d+/(\d+)\s*",
                                 response.headers.get("Content-Range") or "")
            size = int(total.group(1)) if total else None
        else:  # the server ignored the range: the whole file's length, if it says
            size = _length(response)
        return self._info(target, response, size)

    @staticmethod
    def _info(target: str, response: Any, size: int | None) -> FileInfo:
        """The :class:`FileInfo` of *target* from *response*'s headers (closed here, its body
        unread)."""
        try:
            mtime = 0.0
            modified = response.headers.get("Last-Modified")
            if modified:
                try:
                    mtime = email.utils.parsedate_to_datetime(modified).timestamp()
                except (TypeError, ValueError):
                    pass
        finally:
            response.close()
        return FileInfo(target, -1 if size is None else size, False, mtime)
