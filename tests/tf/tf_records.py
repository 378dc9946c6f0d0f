"""Records for the tests of TensorFlow's file systems, reading them back with TensorFlow's own
``TFRecordDataset`` (through tfrecord-io's plugin for remote URLs), and watching which thread
opens each file."""

from __future__ import annotations

import random
import threading

import tensorflow as tf

from tfrecord_io import fs, records
from tfrecord_io import tf as tfr


def some_records(n: int, seed: int) -> list[bytes]:
    """*n* records of 0 to 3,000 bytes, each starting with its seed and index."""
    rnd = random.Random(seed)
    return [f"{seed}-{i}:".encode() + rnd.randbytes(rnd.randrange(0, 3000)) for i in range(n)]


def tf_read(*paths: str, **kwargs) -> list[bytes]:
    """Every record of *paths*, read by ``tf.data.TFRecordDataset(paths, **kwargs)``."""
    ds = tf.data.TFRecordDataset(list(paths), **kwargs)
    return [bytes(r) for batch in ds.batch(1024) for r in batch.numpy().tolist()]


def spy_opens(monkeypatch) -> list[tuple[str, str, object]]:
    """Every ``fs.open`` for reading from now on, as (url, opening thread's name, file)."""
    opened = []
    real_open = fs.open

    def spy(url, mode="rb", *args, **kwargs):
        f = real_open(url, mode, *args, **kwargs)
        if mode == "rb":
            opened.append((url, threading.current_thread().name, f))
        return f

    monkeypatch.setattr(fs, "open", spy)
    return opened


def assert_next_files_opened_ahead(base: str, monkeypatch) -> None:
    """``tfr.dataset`` of four files under *base* reads every record in order, and every file
    after the first is opened by the plugin's open-ahead thread, before TensorFlow opens it."""
    recs = some_records(800, 5)
    for k in range(4):
        records.write(f"{base}/part-{k}.tfrecord", recs[200 * k:200 * (k + 1)])
    opened = spy_opens(monkeypatch)
    assert [bytes(r) for r in tfr.dataset(base).as_numpy_iterator()] == recs
    data_opens = [(u.rsplit("/", 1)[1], thread) for u, thread, _ in opened
                  if u.endswith(".tfrecord")]
    assert [name for name, _ in data_opens] == [f"part-{k}.tfrecord" for k in range(4)]
    assert all(t.startswith("tfrecord-io-open-ahead") for _, t in data_opens[1:])
