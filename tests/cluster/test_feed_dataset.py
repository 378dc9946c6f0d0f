"""``ctx.feed``'s dataset over a node's feed buffer, with real TensorFlow (no Spark): batches
cross as one string plus offsets and come out as the records, in order, epoch by epoch."""

from __future__ import annotations

import threading

import pytest
import tensorflow as tf

from tfrecord_io.cluster.feed.batch_format import pack
from tfrecord_io.cluster.feed.buffer import FeedBuffer
from tfrecord_io.cluster.feed.dataset import feed_dataset


def _fill(buf: FeedBuffer, epoch: int, batches: list[list[bytes]]) -> None:
    for seq, records in enumerate(batches):
        buf.put(epoch, (0, 0, seq), len(records), pack(records))
    buf.end_epoch(epoch, sum(len(r) for r in batches))


def test_the_dataset_yields_every_record_of_each_batch_in_order_including_empty_ones():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    batches = [[b"first", b"", b"\x00\xff" * 700], [], [bytes([i % 7]) * i for i in range(1, 300)]]
    _fill(buf, 1, batches)
    got = [r.numpy() for r in feed_dataset(buf)]
    assert got == [r for batch in batches for r in batch]


def test_each_iteration_of_the_dataset_is_the_next_epoch():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    dataset = feed_dataset(buf)
    filler = threading.Thread(target=lambda: (_fill(buf, 1, [[b"e1"]]), _fill(buf, 2, [[b"e2"]])))
    filler.start()
    assert [r.numpy() for r in dataset] == [b"e1"]
    assert [r.numpy() for r in dataset] == [b"e2"]
    filler.join(10)


def test_a_malformed_batch_fails_the_iteration_with_the_cluster_error():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    buf.put(1, (0, 0, 0), 2, pack([b"ab", b"cd"])[:-1])  # one byte short
    buf.end_epoch(1, 2)
    with pytest.raises(tf.errors.OpError, match=r"ClusterError.*malformed batch"):
        list(feed_dataset(buf))


def test_the_dataset_turns_off_autotuning_whose_teardown_stalls_every_epoch_end():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    dataset = feed_dataset(buf).map(lambda r: r, num_parallel_calls=tf.data.AUTOTUNE).batch(4)
    assert dataset.options().autotune.enabled is False
    assert feed_dataset(buf).options().experimental_distribute.auto_shard_policy == (
        tf.data.experimental.AutoShardPolicy.OFF)
