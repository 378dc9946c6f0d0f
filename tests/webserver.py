"""A directory served over HTTP on 127.0.0.1 by http.server in a thread, for the tests of
``http://`` URLs: ``/forbidden/*`` answers 403; ``/private/*`` answers 401 unless asked with
Basic authorization as :data:`USER` with :data:`PASSWORD`; under ``/ranged/`` a ``Range``
request gets 206 with the bytes from the offset asked (http.server itself ignores ``Range``
and sends the whole file, as at any other path); under ``/broken/`` too, but every answer
announces the whole rest of the file and breaks off at byte :data:`BROKEN_AT` of it, as a
server that dies mid-read."""

from __future__ import annotations

import base64
import functools
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO

#: Where every answer under ``/broken/`` breaks off (a byte offset of the file).
BROKEN_AT = 5 << 20
#: The user and password that ``/private/`` asks for.
USER, PASSWORD = "reader", "s3cret:pa@ss"


class _BrokenOff:
    """The file *f* read from its position, ending at byte *end* of the file."""

    def __init__(self, f: BinaryIO, end: int) -> None:
        self._f = f
        self._end = end

    def read(self, n: int = -1) -> bytes:
        left = max(0, self._end - self._f.tell())
        return self._f.read(left if n < 0 else min(n, left))

    def close(self) -> None:
        self._f.close()


class _Handler(SimpleHTTPRequestHandler):
    """Serves a directory; ``/forbidden/*`` is 403; under ``/ranged/`` Range requests get 206
    (http.server itself ignores Range and sends the whole file, which is served at ``/plain/``)."""

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def send_head(self):  # type: ignore[override]
        if self.path.startswith("/forbidden/"):
            self.send_error(403, "Forbidden")
            return None
        if self.path.startswith("/private/"):
            pair = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            if self.headers.get("Authorization") != f"Basic {pair}":
                self.send_error(401, "Unauthorized")
                return None
        m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        broken = self.path.startswith("/broken/")
        if not broken and not (self.path.startswith("/ranged/") and m):
            return super().send_head()
        path = self.translate_path(self.path)
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed by copyfile's caller
        except OSError:
            self.send_error(404, "File not found")
            return None
        size = os.fstat(f.fileno()).st_size
        start = int(m.group(1)) if m else 0
        if start >= size:
            f.close()
            self.send_error(416, "Range Not Satisfiable")
            return None
        f.seek(start)
        if broken:
            self.close_connection = True
            self.send_response(206 if m else 200)
            self.send_header("Content-Type", "application/octet-stream")
            if m:
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            self.send_header("Content-Length", str(size - start))
            self.end_headers()
            return _BrokenOff(f, BROKEN_AT)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.send_header("Content-Length", str(size - start))
        self.end_headers()
        return f


@contextmanager
def serving(root: Path) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving *root* until the block ends."""
    httpd = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, directory=str(root))
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
