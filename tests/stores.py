"""The remote stores the test session serves, for tests that hold for each of them: their
parameters (marked, so that ``-m "not s3"`` and the like leave that store out) and the root URL of
one, with its settings in ``os.environ`` for the test. Only the store a test asks for is started
(conftest.py's session fixtures)."""

from __future__ import annotations

import pytest

from tfrecord_io import fs

#: Every remote store: HDFS through its RPC and through WebHDFS, S3, Azure Blob, GCS.
ALL = {
    "hdfs": pytest.mark.hdfs,
    "webhdfs": pytest.mark.hdfs,
    "s3": pytest.mark.s3,
    "az": pytest.mark.azure,
    "gs": pytest.mark.gcs,
}


def params(*names: str) -> list:
    """``pytest.param`` of each named store (all of them when none is named), marked."""
    return [pytest.param(name, marks=ALL[name]) for name in names or ALL]


def root(request: pytest.FixtureRequest, store: str) -> str:
    """The root URL of *store* (``hdfs://127.0.0.1:PORT``, ``s3://BUCKET``...), its server
    started and its settings in the environment for the requesting test."""
    if store in ("hdfs", "webhdfs"):
        hdfs = request.getfixturevalue("hdfs")
        return hdfs.url if store == "hdfs" else hdfs.webhdfs_url
    if store == "s3":
        request.getfixturevalue("s3_env")
        return f"s3://{request.getfixturevalue('s3_bucket')}"
    if store == "az":
        request.getfixturevalue("azure_env")
        return f"az://{request.getfixturevalue('azure_container')}"
    if store == "gs":
        request.getfixturevalue("gcs_env")
        return f"gs://{request.getfixturevalue('gcs_bucket')}"
    raise ValueError(f"no test store {store!r}: one of {', '.join(ALL)}")


def put(url: str, data: bytes = b"") -> None:
    """Writes *data* to *url* through ``tfrecord_io.fs``."""
    with fs.open(url, "wb") as f:
        f.write(data)


def get(url: str) -> bytes:
    """The bytes at *url*, read through ``tfrecord_io.fs``."""
    with fs.open(url) as f:
        return f.read()
