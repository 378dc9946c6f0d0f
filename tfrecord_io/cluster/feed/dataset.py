"""``ctx.feed(name)``: a node's feed buffer as a ``tf.data.Dataset`` of serialized records."""

from __future__ import annotations

from typing import Any

from tfrecord_io.cluster.feed.buffer import FeedBuffer

__all__ = ["feed_dataset"]


def feed_dataset(buffer: FeedBuffer) -> Any:
    """A dataset of scalar ``tf.string`` records: each iteration is the next epoch of
    *buffer* (:meth:`FeedBuffer.epoch`). A batch crosses from Python to TensorFlow as one
    scalar string plus its records' offsets and lengths; TensorFlow cuts the records
    (``tf.strings.substr``) and ``unbatch``es them: nothing is done in Python per record.
    Auto-sharding is off: the records are this worker's share already."""
    from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415

    tf = import_tensorflow()

    def generate() -> Any:
        for batch in buffer.epoch():
            yield batch.payload, batch.starts, batch.lengths

    signature = (tf.TensorSpec([], tf.string), tf.TensorSpec([None], tf.int64),
                 tf.TensorSpec([None], tf.int64))
    dataset = (
        tf.data.Dataset.from_generator(generate, output_signature=signature)
        .map(lambda payload, starts, lengths: tf.strings.substr(payload, starts, lengths))
        .prefetch(1)
        .unbatch()
    )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.with_options(options)
