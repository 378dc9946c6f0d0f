"""Fixtures of the file-system tests."""

from __future__ import annotations

import pytest

from tfrecord_io.fs import hdfs as fs_hdfs


@pytest.fixture
def no_hadoop_settings(monkeypatch):
    """The test runs as the OS user, with no HADOOP_CONF_DIR or HADOOP_HOME, the default HDFS
    client and fresh clients (none kept from another test's settings)."""
    for var in ("HADOOP_USER_NAME", "HADOOP_CONF_DIR", "HADOOP_HOME", fs_hdfs.CLIENT_ENV):
        monkeypatch.delenv(var, raising=False)
    fs_hdfs.clear_client_cache()
    yield
    fs_hdfs.clear_client_cache()
