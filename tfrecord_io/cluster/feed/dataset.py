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
    Auto-sharding is off: the records are this worker's share already.

    tf.data's autotuning is off too (``Options.autotune.enabled``), for the whole pipeline built
    on this dataset unless it sets the option again. Its model thread is joined whenever an
    iterator ends, which is every epoch. On the test machine that join took 0.6 to 2 s of the
    epoch. Here it also holds up the next epoch for every worker, because the driver feeds an
    epoch only once all readers asked for it. Without autotuning, ``map(...,
    num_parallel_calls=AUTOTUNE)`` runs at a fixed parallelism (up to 16, at most the cores),
    and ``prefetch(AUTOTUNE)`` still grows its buffer. Re-enable it with ``with_options`` if a
    pipeline needs it."""
    from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415 - the tf layer, in the node process only

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
    options.autotune.enabled = False
    return dataset.with_options(options)
