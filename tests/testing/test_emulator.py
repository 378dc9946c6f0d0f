"""tfrecord_io.testing.emulator: the life of every object-store emulator the tests start (moto's
S3 server, Azurite, fake-gcs-server) is the same: a taken port, kill, stop. What each one serves
is tested beside its store (tests/fs/test_fs_s3.py, test_azurite_server.py,
test_gcs_server.py)."""

from __future__ import annotations

import importlib
import logging
import os
import socket

import pytest

from tfrecord_io.testing import emulator

# Each emulator: its class, and how it is asked to make a bucket (which only it can answer).
_EMULATORS = {
    "s3": ("tfrecord_io.testing.s3.server", "S3Server", "create_bucket"),
    "azure": ("tfrecord_io.testing.azurite.server", "AzuriteServer", "create_container"),
    "gcs": ("tfrecord_io.testing.gcs.server", "GcsServer", "create_bucket"),
}


@pytest.fixture(params=[pytest.param(name, marks=getattr(pytest.mark, name))
                        for name in _EMULATORS])
def emulator_kind(request):
    """``(server class, name of its method that makes a bucket)`` of one emulator."""
    module, cls, make_bucket = _EMULATORS[request.param]
    return getattr(importlib.import_module(module), cls), make_bucket


def _taken_port() -> socket.socket:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    return taken


def test_a_taken_port_is_retried_and_stop_leaves_no_process_and_no_directory(
        emulator_kind, monkeypatch, caplog):
    server_class, make_bucket = emulator_kind
    with _taken_port() as taken:
        ports = iter([taken.getsockname()[1]])
        free_port = emulator._free_port
        monkeypatch.setattr(emulator, "_free_port", lambda: next(ports, None) or free_port())
        server = server_class()
        with caplog.at_level(logging.INFO, logger=emulator.__name__):
            server.start()
        try:
            assert f"port {taken.getsockname()[1]} was taken" in caplog.text
            assert server.port != taken.getsockname()[1] and server.running
            base_dir, pid = server.base_dir, server.pid
            assert getattr(server, make_bucket)("retried").endswith("://retried")
        finally:
            server.stop()
    assert not server.running and server.base_dir is None and not base_dir.exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # nothing left of its process group
    server.stop()  # twice is fine


def test_a_given_taken_port_fails_with_its_log_and_leaves_nothing(emulator_kind):
    server_class, _ = emulator_kind
    with _taken_port() as taken:
        server = server_class(taken.getsockname()[1], startup_timeout=30)
        with pytest.raises(server_class.error,
                           match=r"(?is)exited at start.*(address already in use|EADDRINUSE)"):
            server.start()
    assert server.base_dir is None and not server.running and server.pid is None


def test_kill_ends_it_at_once_and_stop_then_cleans_up(emulator_kind):
    server_class, _ = emulator_kind
    server = server_class().start()
    try:
        base_dir = server.base_dir
        server.kill()
        assert not server.running and base_dir.exists()
    finally:
        server.stop()
    assert not base_dir.exists()
