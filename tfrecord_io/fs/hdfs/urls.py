"""HDFS URLs: parsing ``hdfs://namenode:port/path``, ``webhdfs://namenode:httpport/path`` and
``hdfs:///path`` (the NameNode of ``fs.defaultFS``) into a :class:`Location`, and the NameNode
addresses they lead to. A bare path is never an HDFS URL: :mod:`tfrecord_io.fs` takes it as
local."""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass

from tfrecord_io.errors import HdfsError
from tfrecord_io.fs.hdfs.config import default_fs, read_site

__all__ = [
    "GLOB_CHARS",
    "Location",
    "host_port",
    "nameservice_http_addresses",
    "resolve",
    "webhdfs_address",
    "webhdfs_address_for_rpc",
]

#: Characters that make a path component a glob pattern.
GLOB_CHARS = re.compile(r"[*?\[]")
_SCHEMES = ("hdfs", "webhdfs")


@dataclass(frozen=True)
class Location:
    """A resolved HDFS URL.

    Attributes:
        scheme: "hdfs" or "webhdfs": the protocol named (hdfs may still go over WebHDFS).
        authority: host:port, or an HA nameservice.
        path: absolute and normalised.
        prefix: what precedes the path in URLs given back: "hdfs://" or "hdfs://nn:8020",
            so that results come back in the form they were asked for.
    """

    scheme: str
    authority: str
    path: str
    prefix: str

    def url(self, path: str | None = None) -> str:
        """This location's URL, or the URL of another *path* on the same file system."""
        return self.prefix + (self.path if path is None else path)


def _normpath(path: str, url: str) -> str:
    if not path.startswith("/"):
        raise HdfsError(f"not an absolute HDFS path: {url!r}")
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def _split_authority(rest: str) -> tuple[str, str]:
    slash = rest.find("/")
    if slash < 0:
        return rest, "/"
    return rest[:slash], rest[slash:]


def resolve(url: str | os.PathLike[str]) -> Location:
    """Parses an HDFS URL; a URL without NameNode (``hdfs:///path``) takes it from
    :func:`~tfrecord_io.fs.hdfs.config.default_fs`.

    Raises:
        HdfsError: not an HDFS URL (a bare path is not one), not an absolute path, or no
            NameNode to be found.
    """
    url = os.fspath(url)
    if not isinstance(url, str) or not url:
        raise HdfsError(f"not an HDFS URL: {url!r}")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()  # schemes are case-insensitive (RFC 3986), results spell it lower
    if not sep or scheme not in _SCHEMES:
        raise HdfsError(
            f"unsupported URL {url!r}: expected hdfs://namenode:port/path, "
            "webhdfs://namenode:httpport/path or hdfs:///path (a bare path is local)"
        )
    authority, path = _split_authority(rest)
    if authority:
        return Location(scheme, authority, _normpath(path, url), f"{scheme}://{authority}")
    fs = default_fs()
    fs_scheme, _, fs_rest = fs.partition("://")
    if fs_scheme != scheme:
        raise HdfsError(
            f"{url!r} has no NameNode and fs.defaultFS ({fs!r}) is not a {scheme}:// URL"
        )
    fs_authority, _ = _split_authority(fs_rest)
    if not fs_authority:
        raise HdfsError(f"fs.defaultFS {fs!r} names no NameNode")
    return Location(scheme, fs_authority, _normpath(path, url), f"{scheme}://")


def host_port(authority: str) -> tuple[str, int | None]:
    """``("host", port)`` of ``host:port`` or ``[ipv6]:port``; port None if not given."""
    if authority.startswith("["):  # [ipv6]:port
        host, _, port = authority[1:].partition("]")
        return host, int(port[1:]) if port.startswith(":") else None
    host, sep, port = authority.rpartition(":")
    if sep and port.isdigit():
        return host, int(port)
    return authority, None


def nameservice_http_addresses(authority: str) -> list[str] | None:
    """The NameNode HTTP addresses of a nameservice of hdfs-site.xml (``hdfs://mycluster``):
    with HA, ``dfs.namenode.http-address.NS.NN`` of each NameNode of ``dfs.ha.namenodes.NS``
    (its RPC host with port 9870 when that is not set), else ``dfs.namenode.http-address.NS``;
    None when *authority* is not a configured nameservice (a ``host[:port]``)."""
    if ":" in authority or authority.startswith("["):
        return None
    site = read_site("hdfs-site.xml")
    namenodes = [n.strip() for n in site.get(f"dfs.ha.namenodes.{authority}", "").split(",")]
    namenodes = [n for n in namenodes if n]
    if namenodes:
        out = []
        for nn in namenodes:
            http = site.get(f"dfs.namenode.http-address.{authority}.{nn}")
            if not http:
                rpc = site.get(f"dfs.namenode.rpc-address.{authority}.{nn}")
                if not rpc:
                    continue
                http = f"{host_port(rpc)[0]}:9870"
            out.append(http)
        if not out:
            raise HdfsError(
                f"nameservice {authority!r}: hdfs-site.xml names its NameNodes "
                f"(dfs.ha.namenodes.{authority}) but no dfs.namenode.http-address."
                f"{authority}.NN or dfs.namenode.rpc-address.{authority}.NN for any of them"
            )
        return out
    http = site.get(f"dfs.namenode.http-address.{authority}")
    return [http] if http else None


def webhdfs_address_for_rpc(authority: str) -> str:
    """The NameNode HTTP address for an RPC authority: ``dfs.namenode.http-address`` of
    hdfs-site.xml for the NameNode configured there (its ``dfs.namenode.rpc-address``, or that
    of ``fs.defaultFS``); for another NameNode, the authority's host with the configured port
    when the configured address is a wildcard (``0.0.0.0:PORT``, the same port on every host),
    else with port 9870. Never another host's address: a URL leads to the NameNode it names.
    An HA nameservice (``hdfs://mycluster``) leads to every NameNode's HTTP address
    (:func:`nameservice_http_addresses`), joined by ``;``: the WebHDFS client fails over
    between them."""
    ha = nameservice_http_addresses(authority)
    if ha:
        return ";".join(ha)
    site = read_site("hdfs-site.xml")
    host, _ = host_port(authority)
    http = site.get("dfs.namenode.http-address")
    if not http:
        return f"{host}:9870"
    http_host, http_port = host_port(http)
    if http_host in ("0.0.0.0", ""):
        return f"{host}:{http_port}"
    rpc = site.get("dfs.namenode.rpc-address")
    core_fs = read_site("core-site.xml").get("fs.defaultFS", "")
    default_authority, _ = _split_authority(core_fs.partition("://")[2])
    if rpc == authority or default_authority == authority:
        return f"{http_host}:{http_port}"
    return f"{host}:9870"


def webhdfs_address(authority: str) -> str:
    """The NameNode HTTP address(es) of a ``webhdfs://`` URL's authority, as Hadoop's
    WebHdfsFileSystem finds them: an HA nameservice's NameNodes joined by ``;``
    (:func:`nameservice_http_addresses`); a host without port with the port of
    ``dfs.namenode.http-address`` (9870 when not set), not HTTP's 80; else the authority."""
    ha = nameservice_http_addresses(authority)
    if ha:
        return ";".join(ha)
    host, port = host_port(authority)
    if port is not None:
        return authority
    http = read_site("hdfs-site.xml").get("dfs.namenode.http-address")
    http_port = host_port(http)[1] if http else None
    return f"{authority}:{http_port or 9870}"
