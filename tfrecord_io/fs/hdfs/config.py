"""Hadoop client configuration: ``$HADOOP_CONF_DIR`` site files, ``fs.defaultFS``, the HDFS user
and the choice of client for ``hdfs://`` URLs."""

from __future__ import annotations

import getpass
import os
import pwd
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

_conf_cache: dict[str, tuple[float, dict[str, str]]] = {}
_conf_lock = threading.Lock()


def current_user() -> str:
    """The HDFS user: ``$HADOOP_USER_NAME``, else the OS user (as Hadoop clients do)."""
    name = os.environ.get("HADOOP_USER_NAME")
    if name:
        return name
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


def read_site(name: str) -> dict[str, str]:
    """Properties of ``$HADOOP_CONF_DIR/name`` (e.g. ``core-site.xml``); empty if there is no
    such file. Parsed once per file modification.

    Raises:
        HdfsError: the file exists but is not a Hadoop configuration XML file.
    """
    d = conf_dir()
    if not d:
        return {}
    path = os.path.join(d, name)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return {}
    with _conf_lock:
        cached = _conf_cache.get(path)
        if cached and cached[0] == mtime:
            return cached[1]
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise HdfsError(f"cannot parse Hadoop configuration {path}: {e}") from e
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        key, value = prop.findtext("name"), prop.findtext("value")
        if key is not None and value is not None:
            props[key.strip()] = value.strip()
    with _conf_lock:
        _conf_cache[path] = (mtime, props)
    return props


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
