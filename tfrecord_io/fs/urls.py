"""Paths and URLs as :mod:`tfrecord_io.fs` understands them: which protocol a location names,
the local path of a ``file:`` URL, joining, display names. Pure string work: no I/O."""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from tfrecord_io.errors import UnsupportedURLError

__all__ = [
    "GLOB_CHARS",
    "as_url",
    "expand_braces",
    "has_magic",
    "is_local",
    "is_location",
    "join",
    "name",
    "redact",
    "split",
    "split_list",
    "split_root",
    "split_url",
]

#: Characters that make a path component a glob pattern: ``*``, ``?`` and ``[``.
GLOB_CHARS = frozenset("*?[")
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
# user:password@ up to the authority's last @ (a password may hold @, as http's clients read it)
_PASSWORD = re.compile(r"^([^/?#]*://[^/?#@:]*):[^/?#]*@")
_QUERY_VALUE = re.compile(r"([?&][^=&#]+)=[^&#]*")


def redact(text: str) -> str:
    """*text* with what URLs in it may hold of credentials hidden: the password of their
    ``user:password@`` and the values of their query parameters (pre-signed URLs and SAS tokens
    sign there), each replaced by ``***``. For messages and logs."""

    def hide(match: re.Match[str]) -> str:
        url = _PASSWORD.sub(r"\1:***@", match.group(0))
        return _QUERY_VALUE.sub(r"\1=***", url)

    return _URL_IN_TEXT.sub(hide, text)


def _text(location: str | bytes | os.PathLike[Any]) -> str:
    name = os.fspath(location)
    return os.fsdecode(name) if isinstance(name, bytes) else name


def split_url(location: str | bytes | os.PathLike[Any]) -> tuple[str, str]:
    """``(protocol, target)`` of a path or URL.

    A local path, a ``file://`` URL or Hadoop's ``file:/path`` spelling gives ``("file", path)``
    with the local path (percent-decoded from a URL); any other ``scheme://...`` gives the
    lower-cased scheme and the URL unchanged, whether or not a file system is registered for it
    (:func:`tfrecord_io.fs.open` and the others check that). Bare paths are always local, also
    ``/path``, whatever ``fs.defaultFS`` says; ``hdfs:///path`` names HDFS's default file
    system.

    Raises:
        UnsupportedURLError: a ``file:`` URL that names a remote host or no path.
    """
    text = _text(location)
    match = _SCHEME_RE.match(text)
    if match:
        scheme = match.group(1).lower()
        if scheme == "file":
            return "file", _file_url_to_path(text)
        return scheme, text
    if text[:6].lower() == "file:/":  # Hadoop's file:/tmp/x spelling
        return "file", _file_url_to_path(text)
    return "file", text


def _file_url_to_path(url: str) -> str:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise UnsupportedURLError(
            f"file URL {url!r} names a remote host; only local files are supported"
        )
    path = unquote(parts.path)
    if not path:
        raise UnsupportedURLError(f"file URL {url!r} has no path")
    return path


def is_location(source: Any) -> bool:
    """Whether *source* is a path or URL (``str``, ``bytes``, ``os.PathLike``), as opposed to a
    file object."""
    return isinstance(source, (str, bytes, os.PathLike))


def is_local(location: str | bytes | os.PathLike[Any]) -> bool:
    """Whether a path or URL names a local file (a path or a ``file:`` URL)."""
    return split_url(location)[0] == "file"


def split_root(target: str) -> tuple[str, str]:
    """``(root, path)``: ``("scheme://authority", "/path")`` for a URL, ``("", path)`` for a
    local path, so that ``root + path == target``."""
    if "://" not in target:
        return "", target
    scheme, _, rest = target.partition("://")
    slash = rest.find("/")
    if slash < 0:
        return target, ""
    return f"{scheme}://{rest[:slash]}", rest[slash:]


def join(base: str | os.PathLike[str], *names: str) -> str:
    """*base* extended by *names*: ``os.path.join`` for local paths, ``/``-joined for URLs
    (``join("hdfs://nn:8020", "d", "f")`` is ``"hdfs://nn:8020/d/f"``)."""
    text = _text(base)
    if "://" not in text:
        return os.path.join(text, *names)
    root, path = split_root(text)
    return root + posixpath.join(path or "/", *names)


def split(location: str | os.PathLike[str]) -> tuple[str, str]:
    """``(parent, last component)``: ``os.path.split`` for local paths; for URLs the parent
    keeps the scheme and authority (``split("hdfs://nn:8020/d/f")`` is
    ``("hdfs://nn:8020/d", "f")``). A trailing ``/`` gives an empty last component."""
    text = _text(location)
    if "://" not in text:
        return os.path.split(text)
    root, path = split_root(text)
    parent, last = posixpath.split(path)
    return root + parent, last


def as_url(location: str | os.PathLike[str]) -> str:
    """A URL for a location: local paths become ``file://`` URLs of their absolute path (not
    percent-encoded, as Hadoop's ``Path`` reads them); URLs are returned unchanged."""
    protocol, target = split_url(location)
    if protocol != "file":
        return target
    return "file://" + os.path.abspath(target)


def has_magic(target: str) -> bool:
    """Whether the path part of a path or URL holds glob characters (``*``, ``?``, ``[``) or
    Hadoop's alternatives (``{a,b}``)."""
    path = split_root(target)[1]
    return bool(GLOB_CHARS.intersection(path)) or len(expand_braces(path)) > 1


def expand_braces(pattern: str) -> list[str]:
    """The patterns that Hadoop's ``{a,b}`` alternatives in *pattern* stand for, in order
    (nested braces too): ``"d/{2023,2024/0[1-3]}"`` gives ``["d/2023", "d/2024/0[1-3]"]``. A
    pattern without a ``{...}`` holding a comma at its own level is itself alone."""
    depth, start = 0, -1
    for i, c in enumerate(pattern):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                options = split_list(pattern[start + 1:i])
                if len(options) > 1:
                    head, tail = pattern[:start], pattern[i + 1:]
                    return [expanded for option in options
                            for expanded in expand_braces(head + option + tail)]
                inner = expand_braces(options[0])
                if len(inner) > 1:
                    head, tail = pattern[:start], pattern[i + 1:]
                    return [x for option in inner for x in expand_braces(head + option + tail)]
    return [pattern]


def split_list(text: str) -> list[str]:
    """*text* cut at its commas outside braces: a comma-separated list of paths as Hadoop's
    ``FileInputFormat`` reads one, where ``{a,b}`` alternatives hold commas of their own
    (``"/a,/b/{x,y}"`` gives ``["/a", "/b/{x,y}"]``)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def name(source: Any) -> str:
    """How to name a source or target in messages: the path or URL as given, else a file
    object's ``name``, else ``<TYPE object>``."""
    if is_location(source):
        return _text(source)
    attr = getattr(source, "name", None)
    if isinstance(attr, str):
        return attr
    if isinstance(attr, bytes):
        return os.fsdecode(attr)
    return f"<{type(source).__name__} object>"
