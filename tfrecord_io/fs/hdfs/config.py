"""Hadoop client configuration: ``$HADOOP_CONF_DIR`` site files, ``fs.defaultFS``, the HDFS user
and the choice of client for ``hdfs://`` URLs."""

from __future__ import annotations

import getpass
import os
import pwd
import re
import tempfile
import threading
import xml.etree.ElementTree as ET

from tfrecord_io.errors import HdfsError

__all__ = [
    "CLIENT_ENV",
    "DEFAULT_HDFS_CLIENT",
    "client_choice",
    "conf_dir",
    "current_user",
    "default_fs",
    "read_site",
]

#: Environment variable choosing the client for ``hdfs://`` URLs: ``native`` (default) or
#: ``webhdfs``.
CLIENT_ENV = "TFRECORD_IO_HDFS_CLIENT"
#: The default client for hdfs:// URLs. hdfs-native streamed a 200 MB file at ~2x the rate of
#: WebHDFS on the mini cluster, and lists and small reads faster too (see bench/hdfs_clients.py).
DEFAULT_HDFS_CLIENT = "native"

# site file -> (the files read for it with their mtimes, its properties, its final names)
_conf_cache: dict[str, tuple[list[tuple[str, float | None]], dict[str, str], frozenset[str]]] = {}
_conf_lock = threading.Lock()


def current_user() -> str:
    """The HDFS user: ``$HADOOP_USER_NAME``, else the OS user (as Hadoop clients do)."""
    name = os.environ.get("HADOOP_USER_NAME")
    if name:
        return name
    return _os_user()


def _os_user() -> str:
    """The OS user this process runs as (Java's ``user.name``)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return getpass.getuser()


def conf_dir() -> str | None:
    """``$HADOOP_CONF_DIR``, else ``$HADOOP_HOME/etc/hadoop``, else None."""
    d = os.environ.get("HADOOP_CONF_DIR")
    if d:
        return d
    home = os.environ.get("HADOOP_HOME")
    if home:
        return os.path.join(home, "etc", "hadoop")
    return None


_XINCLUDE = "{http://www.w3.org/2001/XInclude}include"
_XFALLBACK = "{http://www.w3.org/2001/XInclude}fallback"
_MAX_INCLUDE_DEPTH = 8


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _property_elements(
    elem: ET.Element, path: str, files: list[tuple[str, float | None]], depth: int = 0
) -> list[ET.Element]:
    """The ``<property>`` elements under *elem* (of the file *path*) in document order, with
    those of the files it ``xi:include``s (relative to *path*'s directory) in their place, or
    of the include's ``xi:fallback`` when the file is missing; adds every file read to
    *files*."""
    out: list[ET.Element] = []
    for child in elem:
        if child.tag == "property":
            out.append(child)
        elif child.tag == _XINCLUDE:
            href = child.get("href", "")
            target = os.path.join(os.path.dirname(path), href)
            files.append((target, _mtime(target)))
            fallback = child.find(_XFALLBACK)
            if depth >= _MAX_INCLUDE_DEPTH:
                raise HdfsError(f"cannot parse Hadoop configuration {path}: includes nest too deep")
            try:
                root = ET.parse(target).getroot()
            except FileNotFoundError as e:
                if fallback is None:
                    raise HdfsError(
                        f"cannot parse Hadoop configuration {path}: its xi:include of "
                        f"{href!r} names no file ({target}) and has no xi:fallback"
                    ) from e
                out += _property_elements(fallback, path, files, depth + 1)
                continue
            except (ET.ParseError, OSError) as e:
                raise HdfsError(
                    f"cannot parse Hadoop configuration {target} (included by {path}): {e}"
                ) from e
            out += (
                [root]
                if root.tag == "property"
                else _property_elements(root, target, files, depth + 1)
            )
        elif child.tag != _XFALLBACK:
            out += _property_elements(child, path, files, depth)
    return out


def _parse_site(path: str) -> tuple[dict[str, str], frozenset[str]]:
    """The raw properties of one site file (with the files it ``xi:include``s) and the names
    marked ``<final>true</final>`` (a later definition of a final property is ignored, as
    Hadoop does); parsed once per modification of the file or of one it includes, ``({}, {})``
    if there is no such file."""
    mtime = _mtime(path)
    if mtime is None:
        return {}, frozenset()
    with _conf_lock:
        cached = _conf_cache.get(path)
    if cached and all(_mtime(f) == m for f, m in cached[0]):
        return cached[1], cached[2]
    files: list[tuple[str, float | None]] = [(path, mtime)]
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise HdfsError(f"cannot parse Hadoop configuration {path}: {e}") from e
    props: dict[str, str] = {}
    final: set[str] = set()
    for prop in _property_elements(root, path, files):
        key, value = prop.findtext("name"), prop.findtext("value")
        if key is None or value is None:
            continue
        key = key.strip()
        if key in final:
            continue
        props[key] = value.strip()
        if (prop.findtext("final") or "").strip().lower() == "true":
            final.add(key)
    with _conf_lock:
        _conf_cache[path] = (files, props, frozenset(final))
    return props, frozenset(final)


#: What Hadoop's ``${var}`` substitution finds besides properties: ``${env.NAME}`` and the few
#: Java system properties that site files use.
_VAR = re.compile(r"\$\{([^}$\s]+)\}")
_MAX_SUBSTITUTIONS = 20  # Hadoop's Configuration.MAX_SUBST


def _system_property(name: str) -> str | None:
    if name.startswith("env."):
        return os.environ.get(name[4:])
    if name == "user.name":
        return _os_user()
    if name == "user.home":
        return os.path.expanduser("~")
    if name == "java.io.tmpdir":
        return tempfile.gettempdir()
    return None


def _substitute(value: str, lookup: dict[str, str]) -> str:
    """*value* with each ``${name}`` replaced as Hadoop's ``Configuration.get`` does: by the
    environment (``env.NAME``), a Java system property, or another property, repeatedly (a
    reference left unresolved stays as written)."""
    for _ in range(_MAX_SUBSTITUTIONS):
        changed = False

        def repl(m: re.Match[str]) -> str:
            nonlocal changed
            name = m.group(1)
            found = _system_property(name)
            if found is None:
                found = lookup.get(name)
            if found is None or found == m.group(0):
                return m.group(0)
            changed = True
            return found

        value = _VAR.sub(repl, value)
        if not changed:
            break
    return value


def read_site(name: str) -> dict[str, str]:
    """Properties of ``$HADOOP_CONF_DIR/name`` (e.g. ``core-site.xml``); empty if there is no
    such file. Parsed once per file modification. As in Hadoop, a property marked final keeps
    its first value, and ``${var}`` in a value is replaced by ``$var`` (``${env.NAME}`` the
    environment variable, ``${user.name}``, or another property of ``core-site.xml`` or
    ``hdfs-site.xml``).

    Raises:
        HdfsError: the file exists but is not a Hadoop configuration XML file.
    """
    d = conf_dir()
    if not d:
        return {}
    props, _ = _parse_site(os.path.join(d, name))
    if not any("${" in v for v in props.values()):
        return props
    # Hadoop substitutes against every resource loaded, later ones overriding (unless final).
    lookup: dict[str, str] = {}
    finals: set[str] = set()
    for site in ("core-site.xml", "hdfs-site.xml"):
        site_props, site_final = _parse_site(os.path.join(d, site))
        for key, value in site_props.items():
            if key not in finals:
                lookup[key] = value
        finals |= site_final
    return {k: _substitute(v, lookup) if "${" in v else v for k, v in props.items()}


def default_fs() -> str:
    """``fs.defaultFS`` of ``$HADOOP_CONF_DIR/core-site.xml``; HdfsError if there is none."""
    core = read_site("core-site.xml")
    value = core.get("fs.defaultFS") or core.get("fs.default.name")
    if not value:
        where = conf_dir()
        raise HdfsError(
            "the URL names no NameNode and there is no fs.defaultFS to use: "
            + (
                f"{where}/core-site.xml does not set it"
                if where
                else "set HADOOP_CONF_DIR to a directory with a core-site.xml"
            )
        )
    return value


def client_choice() -> str:
    """The client for ``hdfs://`` URLs, from ``$TFRECORD_IO_HDFS_CLIENT``: "native" or
    "webhdfs"; HdfsError for anything else."""
    choice = os.environ.get(CLIENT_ENV, DEFAULT_HDFS_CLIENT).strip().lower() or DEFAULT_HDFS_CLIENT
    if choice not in ("native", "webhdfs"):
        raise HdfsError(f"{CLIENT_ENV}={choice!r}: expected 'native' or 'webhdfs'")
    return choice
