"""Test helpers for tfrecord-io and its users: real services started on loopback.

:mod:`tfrecord_io.testing.minihdfs` starts a whole HDFS (NameNode with WebHDFS, DataNodes) in one
JVM for tests, and for developers by hand with ``python -m tfrecord_io.testing.minihdfs``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MiniHdfs", "MiniHdfsError", "start_for_tests"]


def __getattr__(name: str) -> Any:
    # Lazy: importing tfrecord_io.testing loads nothing of the mini HDFS until a name is used.
    if name in __all__:
        from tfrecord_io.testing import minihdfs  # noqa: PLC0415

        return getattr(minihdfs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
