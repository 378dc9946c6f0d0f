"""tfrecord_io.fs reading http:// URLs from a real server (http.server on 127.0.0.1, in a
thread)."""

from __future__ import annotations

import os
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest

from tfrecord_io import fs, index, records
from tfrecord_io.errors import (
    FileChangedError,
    HttpError,
    HttpFileNotFoundError,
    HttpPermissionError,
    TFRecordError,
    UnsupportedOperationError,
)

from webserver import BROKEN_AT, PASSWORD, USER, serving

DATA = bytes(range(256)) * 4000  # 1,024,000 bytes


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving a directory with plain/, ranged/ and forbidden/."""
    root = tmp_path_factory.mktemp("www")
    for sub in ("plain", "ranged", "forbidden", "private"):
        (root / sub).mkdir()
        (root / sub / "data.bin").write_bytes(DATA)
    records.write(root / "plain" / "part-0.tfrecord", [b"a", b"bc", b"def" * 1000])
    with serving(root) as url:
        yield url


def test_open_reads_the_whole_file(server):
    with fs.open(f"{server}/plain/data.bin") as f:
        assert f.name == f"{server}/plain/data.bin"
        assert f.read() == DATA


def test_stat_and_exists(server, tmp_path):
    info = fs.stat(f"{server}/plain/data.bin")
    assert (info.size, info.is_dir) == (len(DATA), False) and info.mtime > 0
    assert fs.exists(f"{server}/plain/data.bin")
    assert not fs.exists(f"{server}/plain/missing.bin")


@pytest.mark.parametrize("where", ["ranged", "plain"])
def test_seeks_read_the_right_bytes_with_or_without_range_support(server, where):
    with fs.open(f"{server}/{where}/data.bin") as f:
        for offset in (500_000, 10, 1_023_990, 123_456):
            f.seek(offset)
            assert f.read(1000) == DATA[offset : offset + 1000], offset
        f.seek(-5, os.SEEK_END)
        assert f.read() == DATA[-5:]
        f.seek(len(DATA) + 10)
        assert f.read() == b""


def test_an_answer_broken_off_mid_file_is_an_error_naming_the_url_and_byte(tmp_path):
    (tmp_path / "broken").mkdir()
    data = bytes(range(256)) * (2 * BROKEN_AT // 256)
    (tmp_path / "broken" / "data.bin").write_bytes(data)
    with serving(tmp_path) as url, fs.open(f"{url}/broken/data.bin") as f:
        with pytest.raises(HttpError, match=rf"{url}/broken/data.bin failed at byte {BROKEN_AT}"):
            f.read()
        f.seek(BROKEN_AT - 10)  # a new request, broken off at the same byte
        assert f.read(10) == data[BROKEN_AT - 10:BROKEN_AT]
        with pytest.raises(HttpError, match="ended the answer before"):
            f.read(10)


def test_a_file_that_shrank_since_it_was_opened_is_an_error_not_its_end(tmp_path):
    (tmp_path / "ranged").mkdir()
    (tmp_path / "ranged" / "data.bin").write_bytes(DATA)
    with serving(tmp_path) as url, fs.open(f"{url}/ranged/data.bin") as f:
        assert f.read(10) == DATA[:10]
        (tmp_path / "ranged" / "data.bin").write_bytes(DATA[:1000])
        f.seek(500_000)
        with pytest.raises(FileChangedError, match=rf"{url}/ranged/data.bin failed at byte "
                                                   r"500000: .* had 1024000 bytes when opened"):
            f.read(10)


def test_missing_and_forbidden_urls_are_the_os_error_family(server):
    with pytest.raises(HttpFileNotFoundError, match="HTTP 404") as err:
        fs.open(f"{server}/plain/missing.bin")
    assert f"{server}/plain/missing.bin" in str(err.value)
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, TFRecordError)
    with pytest.raises(HttpPermissionError, match="HTTP 403") as err:
        fs.open(f"{server}/forbidden/data.bin")
    assert isinstance(err.value, PermissionError)


def test_a_user_and_password_in_the_url_are_sent_as_basic_authorization(server):
    password = quote(PASSWORD, safe="")
    url = server.replace("http://", f"http://{USER}:{password}@") + "/private/data.bin"
    with fs.open(url) as f:
        assert f.read() == DATA
    assert fs.stat(url).size == len(DATA)
    with pytest.raises(HttpPermissionError, match="HTTP 401"):
        fs.open(f"{server}/private/data.bin")


def test_messages_hide_the_password_and_the_query_values_of_a_url():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    url = f"http://reader:TOPSECRET@127.0.0.1:{port}/x?X-Amz-Signature=SIGNED&part=1"
    with pytest.raises(HttpError) as err:
        fs.open(url)
    message = str(err.value)
    assert "TOPSECRET" not in message and "SIGNED" not in message
    assert f"http://reader:***@127.0.0.1:{port}/x?X-Amz-Signature=***&part=***" in message


def test_records_and_indexes_read_over_http(server):
    assert list(records.read(f"{server}/plain/part-0.tfrecord")) == [b"a", b"bc", b"def" * 1000]
    assert index.load_index(f"{server}/plain/part-0.tfrecord") == [(0, 17), (17, 18), (35, 3016)]
    # a byte range of the file, as sharded readers ask for (a seek, over HTTP)
    assert list(records.read(f"{server}/plain/part-0.tfrecord", start=17)) == [b"bc", b"def" * 1000]


def test_expand_takes_an_http_file_as_given(server):
    url = f"{server}/plain/data.bin?token=a*b"
    assert fs.expand(url) == [url]  # no listing over HTTP: ? and * are not wildcards here
    with pytest.raises(HttpFileNotFoundError):
        fs.expand(f"{server}/plain/nothing-here")


def test_http_is_read_only_and_cannot_list(server):
    with pytest.raises(UnsupportedOperationError, match="cannot write"):
        fs.open(f"{server}/plain/new.bin", "wb")
    with pytest.raises(UnsupportedOperationError, match="cannot list"):
        fs.ls(f"{server}/plain/")
    with pytest.raises(UnsupportedOperationError, match="cannot list"):
        fs.glob(f"{server}/plain/*.bin")
    with pytest.raises(UnsupportedOperationError):
        fs.delete(f"{server}/plain/data.bin")


def test_a_server_that_never_answers_times_out():
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # connections complete, but nothing is ever read or sent
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/x"
        with pytest.raises(HttpError, match="timed out|no answer") as err:
            fs.open(url, timeout=0.5)
        assert url in str(err.value) and isinstance(err.value, OSError)
    finally:
        silent.close()


def test_an_unreachable_server_is_named():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(HttpError, match=f"cannot reach http://127.0.0.1:{port}/x"):
        fs.stat(f"http://127.0.0.1:{port}/x")


class _NoHeadHandler(BaseHTTPRequestHandler):
    """Serves :data:`DATA` at every path to GET (a ``Range: bytes=A-B`` gets 206), as a presigned
    URL does, and refuses HEAD: 405 under ``/no-head-405/``, else 403 (the signature covers the
    method); under ``/denied/`` GET is refused too (403). Each request is added to the server's
    ``seen`` as ``(method, Range header)``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _refuse(self, code: int) -> None:
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self.server.seen.append(("HEAD", self.headers.get("Range")))  # type: ignore[attr-defined]
        self._refuse(405 if self.path.startswith("/no-head-405/") else 403)

    def do_GET(self) -> None:
        self.server.seen.append(("GET", self.headers.get("Range")))  # type: ignore[attr-defined]
        if self.path.startswith("/denied/"):
            self._refuse(403)
            return
        asked = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        start, end = (int(asked.group(1)), int(asked.group(2))) if asked else (0, len(DATA) - 1)
        self.send_response(206 if asked else 200)
        if asked:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(DATA)}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self.wfile.write(DATA[start:end + 1])


@pytest.fixture
def no_head_server() -> Iterator[ThreadingHTTPServer]:
    """A server of :class:`_NoHeadHandler` on 127.0.0.1, in a thread."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _NoHeadHandler)
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.mark.parametrize("where", ["presigned", "no-head-405"])
def test_stat_of_a_url_that_refuses_head_reads_the_size_from_a_get_of_its_first_byte(
        no_head_server, where):
    port = no_head_server.server_address[1]
    url = f"http://127.0.0.1:{port}/{where}/x.tfrecord?X-Amz-Signature=s"
    assert fs.stat(url).size == len(DATA)
    assert no_head_server.seen == [("HEAD", None), ("GET", "bytes=0-0")]
    assert fs.expand(url) == [url]


def test_a_url_refused_to_head_and_to_get_is_the_gets_permission_error(no_head_server):
    url = f"http://127.0.0.1:{no_head_server.server_address[1]}/denied/x.tfrecord"
    with pytest.raises(HttpPermissionError, match=f"access denied to {url} \\(HTTP 403"):
        fs.stat(url)
    assert no_head_server.seen == [("HEAD", None), ("GET", "bytes=0-0")]  # the error is GET's


class _RedirectingHandler(BaseHTTPRequestHandler):
    """Answers every request with a redirect to ``server.target`` (a URL of another host)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", self.server.target + self.path)  # type: ignore[attr-defined]
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self.do_GET()


class _RecordingHandler(BaseHTTPRequestHandler):
    """Serves :data:`DATA` at every path (``Range`` requests included, with 206), recording the
    ``Authorization`` header of each request in ``server.seen``."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append(self.headers.get("Authorization"))  # type: ignore[attr-defined]
        m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        start = int(m.group(1)) if m else 0
        self.send_response(206 if m else 200)
        if m:
            self.send_header("Content-Range", f"bytes {start}-{len(DATA) - 1}/{len(DATA)}")
        self.send_header("Content-Length", str(len(DATA) - start))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(DATA[start:])

    def do_HEAD(self) -> None:
        self.do_GET()


def _serve(handler: type, **attributes: object) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    for name, value in attributes.items():
        setattr(httpd, name, value)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_credentials_of_the_url_are_not_sent_on_to_another_host_it_redirects_to():
    """A file server that redirects to a CDN or a presigned S3 URL: the user and password are
    the first host's, not the other's (which a presigned URL also refuses beside its own
    signature)."""
    other = _serve(_RecordingHandler, seen=[])
    first = _serve(_RedirectingHandler,
                   target=f"http://localhost:{other.server_address[1]}")
    try:
        url = f"http://{USER}:{quote(PASSWORD, safe='')}@127.0.0.1:{first.server_address[1]}/d"
        with fs.open(url) as f:
            f.seek(1000)
            assert f.read(10) == DATA[1000:1010]
        assert fs.stat(url).size == len(DATA)
        assert len(other.seen) == 3 and other.seen == [None, None, None]
    finally:
        for httpd in (first, other):
            httpd.shutdown()
            httpd.server_close()
