"""``ctx.feed(name)``: a node's feed buffer as a ``tf.data.Dataset`` of serialized records."""

from __future__ import annotations

from typing import Any

from tfrecord_io.cluster.feed.buffer import FeedBuffer

__all__ = ["feed_dataset"]


def feed_dataset(buffer: FeedBuffer) -> Any:
    """A dataset of scalar ``tf.string`` records: each iteration is the next epoch of
    *buffer* (:meth:`FeedBuffer.epoch`). Batches cross from Python to TensorFlow whole (one
    ``tf.string`` vector each, then ``unbatch``), never one record at a time. Auto-sharding is
    off: the records are this worker's share already."""
    from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415

    tf = import_tensorflow()

    def generate() -> Any:
        yield from buffer.epoch()

    dataset = tf.data.Dataset.from_generator(
        generate, output_signature=tf.TensorSpec([None], tf.string)
    ).prefetch(1).unbatch()
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.with_options(options)
