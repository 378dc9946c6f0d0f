"""The client cache: one :class:`~tfrecord_io.fs.hdfs.client.Client` per (kind, NameNode
address, user), made on first use and shared by every thread; :func:`call` runs one client
operation with error translation."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tfrecord_io.errors import HdfsError
from tfrecord_io.fs.hdfs.client import Client
from tfrecord_io.fs.hdfs.config import client_choice, current_user
from tfrecord_io.fs.hdfs.translation import first_line, is_connect_error, translate
from tfrecord_io.fs.hdfs.urls import Location, webhdfs_address, webhdfs_address_for_rpc

__all__ = ["client_for", "call", "cache", "clear_client_cache"]

#: The cached clients, keyed by ``(kind, address, user)`` with kind "native" or "webhdfs".
cache: dict[tuple[str, str, str], Client] = {}
_lock = threading.Lock()


def client_for(loc: Location, op: str) -> Client:
    """The client serving *loc* for the current user (made and connected on first use).

    Raises:
        HdfsError: the client is not installed, or the NameNode cannot be reached.
    """
    user = current_user()
    if loc.scheme == "webhdfs":
        kind, address = "webhdfs", webhdfs_address(loc.authority)
    elif client_choice() == "webhdfs":
        kind, address = "webhdfs", webhdfs_address_for_rpc(loc.authority)
    else:
        kind, address = "native", loc.authority
    key = (kind, address, user)
    with _lock:
        client = cache.get(key)
    if client is not None:
        return client
    try:
        # Each client module (and its library) is loaded when a client of its kind is made.
        if kind == "native":
            from tfrecord_io.fs.hdfs import native  # noqa: PLC0415 - loads hdfs-native

            client = native.NativeClient(address, user)
        else:
            from tfrecord_io.fs.hdfs import webhdfs  # noqa: PLC0415 - loads hdfs, requests

            client = webhdfs.WebHdfsClient(address, user)
    except HdfsError:
        raise
    except ImportError as e:
        raise HdfsError(f"the {kind} HDFS client is not installed: {e}") from e
    except Exception as e:
        if is_connect_error(e) or isinstance(e, OSError):
            raise HdfsError(
                f"cannot reach the NameNode at {address} for {loc.url()}: {first_line(e)}"
            ) from e
        raise translate(e, loc.url(), op, loc) from e
    with _lock:
        return cache.setdefault(key, client)


def clear_client_cache() -> None:
    """Forgets every cached client (they are made again on next use)."""
    with _lock:
        cache.clear()


def call(loc: Location, op: str, fn: Callable[[Client], Any], url: str | None = None) -> Any:
    """``fn(client)`` for *loc*'s client; a client exception becomes an :class:`HdfsError`
    naming *url* (default: *loc*'s URL) and *op*."""
    client = client_for(loc, op)
    try:
        return fn(client)
    except Exception as e:
        raise translate(e, url or loc.url(), op, loc) from e
