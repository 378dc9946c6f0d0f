"""Test helpers for tfrecord-io and its users: real services started for tests.

:mod:`tfrecord_io.testing.minihdfs` starts a whole HDFS (NameNode with WebHDFS, DataNodes) in one
JVM for tests, and for developers by hand with ``python -m tfrecord_io.testing.minihdfs``.
:mod:`tfrecord_io.testing.miniyarn` starts a YARN (ResourceManager, NodeManagers) with its HDFS
in one JVM (``python -m tfrecord_io.testing.miniyarn``); both run through
:mod:`tfrecord_io.testing.childjvm`. :mod:`tfrecord_io.testing.standalone` runs a Spark
standalone cluster whose Workers are hosts on a virtual network (Linux network namespaces; root).
:mod:`tfrecord_io.testing.postgres` runs a PostgreSQL server holding a table of images
(``python -m tfrecord_io.testing.postgres``). :mod:`tfrecord_io.testing.s3` runs an
S3-compatible server (moto's) with authentication (``python -m tfrecord_io.testing.s3``).
:mod:`tfrecord_io.testing.azurite` runs Azure Blob Storage (Azurite's blob service) and
:mod:`tfrecord_io.testing.gcs` Google Cloud Storage (fake-gcs-server), both emulators that
``make setup`` installs into ``.tools/``, in child processes whose life
:mod:`tfrecord_io.testing.emulator` manages. :mod:`tfrecord_io.testing.passes` times the
benchmarks' passes, contenders interleaved round by round.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MiniHdfs", "MiniHdfsError", "start_for_tests"]


def __getattr__(name: str) -> Any:
    # Lazy: importing tfrecord_io.testing loads nothing of the mini HDFS until a name is used.
    if name in __all__:
        from tfrecord_io.testing import minihdfs  # noqa: PLC0415 - lazy, as said above

        return getattr(minihdfs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
