"""Records for the tests of TensorFlow's file systems, and reading them back with TensorFlow's
own ``TFRecordDataset`` (through tfrecord-io's plugin for remote URLs)."""

from __future__ import annotations

import random

import tensorflow as tf


def some_records(n: int, seed: int) -> list[bytes]:
    """*n* records of 0 to 3,000 bytes, each starting with its seed and index."""
    rnd = random.Random(seed)
    return [f"{seed}-{i}:".encode() + rnd.randbytes(rnd.randrange(0, 3000)) for i in range(n)]


def tf_read(*paths: str, **kwargs) -> list[bytes]:
    """Every record of *paths*, read by ``tf.data.TFRecordDataset(paths, **kwargs)``."""
    ds = tf.data.TFRecordDataset(list(paths), **kwargs)
    return [bytes(r) for batch in ds.batch(1024) for r in batch.numpy().tolist()]
