"""The test PostgreSQL server: on loopback only, as a non-root user, gone after stop(); and the
images table it is loaded with holds PNG files of the MNIST test set, pixel for pixel."""

from __future__ import annotations

import io

import numpy as np
import psutil
from PIL import Image

from tfrecord_io.testing import postgres as pg


def test_the_server_listens_only_on_loopback_and_not_as_root(postgres):
    (process,) = [p for p in psutil.process_iter(["cmdline"])
                  if "postgres" in (p.info["cmdline"] or [""])[0]
                  and str(postgres.base_dir) in " ".join(p.info["cmdline"] or [])]
    assert process.uids().real != 0  # PostgreSQL refuses root: the postgres OS user, as root
    listening = {c.laddr for c in process.net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN}
    assert listening == {("127.0.0.1", postgres.port)}


def test_a_taken_port_is_retried_with_another_free_port(postgres, monkeypatch):
    from tfrecord_io.testing.postgres import server as module

    ports = iter([postgres.port])  # the first "free" port is the session server's
    real = module._free_port
    monkeypatch.setattr(module, "_free_port", lambda: next(ports, None) or real())
    with pg.Postgres() as second:
        assert second.port != postgres.port
        with second.connect() as conn:
            assert conn.execute("select 1").fetchone() == (1,)


def test_a_stopped_server_leaves_no_process_and_no_directory():
    server = pg.Postgres().start()
    base, pid = server.base_dir, server._process.pid
    with server.connect() as conn:
        assert conn.execute("select 1 + 1").fetchone() == (2,)
    server.stop()
    assert not base.exists()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    server.stop()  # twice is harmless


def test_the_images_table_holds_the_mnist_test_set_as_png_files(images_db):
    with images_db.server.connect() as conn:
        rows = conn.execute(
            "select id, filename, label, class, image from images where id in (1, 2, 10000) "
            "order by id").fetchall()
        (count,) = conn.execute("select count(*) from images").fetchone()
    assert count == len(images_db) == 10_000
    for row_id, filename, label, text, png in rows:
        k = row_id - 1
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert label == images_db.labels[k] and text == str(label)
        assert filename == f"{label}/test-{k:05d}.png"
        pixels = np.asarray(Image.open(io.BytesIO(png)))
        assert pixels.dtype == np.uint8 and np.array_equal(pixels, images_db.images[k])
    assert [r[2] for r in rows[:2]] == [7, 2]  # the test set's first two digits
