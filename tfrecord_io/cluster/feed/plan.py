"""How what is fed becomes batches: a DataFrame (an RDD of records is made one, a binary column
fed as ``ByteArray``) becomes an RDD of large batches of records (laid out as in
:mod:`~tfrecord_io.cluster.feed.batch_format`), each batch for one worker, made in the
executors' JVMs by ``org.tfrecordio.spark.feed.FeedBatches`` (rows are encoded to
``tf.train.Example`` there by the DataFrame codec), which the feed source
(:mod:`~tfrecord_io.cluster.feed.source`) runs.

The deal (how records are shared among *W* workers) is the one rule of the feed:

* ``equal=True`` (``mode="sync"``): the partitions are counted first (one cheap Spark job;
  cache the data so it is not computed twice), the *N* records get global indices in partition
  order, and the record with index *g* goes to worker ``g % W`` if ``g < W * (N // W)``: every
  worker gets exactly ``N // W`` records and the last ``N % W`` records (fewer than *W*) are
  dropped. A partition whose count changed by the time it is fed fails the feed.
* ``equal=False`` (``mode="ps"``): nothing is counted or dropped; record *i* of partition *p*
  goes to worker ``(p + i) % W``.

Either way every partition deals to every worker, so all workers are fed at the same pace
whatever the order in which Spark runs the feeding tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BATCH_BYTES", "Deal", "deal"]

#: Target bytes of one batch (records plus their lengths table). 1 MiB: on the test machine a
#: buffer of 2 MiB or more costs 30-70 times as much per byte to allocate and fill as a 1 MiB
#: one (fresh pages each time, in the node's copies into TensorFlow), and per-batch overheads
#: are already small at 1,000 records of 1 KB.
BATCH_BYTES = 1024 * 1024
_NO_LIMIT = (1 << 63) - 1


@dataclass(frozen=True)
class Deal:
    """How a feeding job deals records to the workers, as the JVM's ``FeedBatches`` takes it.

    Attributes:
        offsets: comma-separated, the global index of each partition's first record; empty:
            record *i* of partition *p* has the index ``p + i`` (round robin, nothing dropped).
        counts: comma-separated records per partition as counted (checked while batching),
            or empty.
        limit: records whose global index is at or past it are dropped.
        per_worker: records each worker gets (the equal-share rule), else None.
        dropped: records left out by the equal-share rule.
    """

    offsets: str = ""
    counts: str = ""
    limit: int = _NO_LIMIT
    per_worker: int | None = None
    dropped: int = 0


def deal(counts: list[int] | None, workers: int) -> Deal:
    """The deal of records among *workers* workers: with *counts* (records per partition, in
    partition order) the equal-share rule, else round robin with nothing dropped (see the
    module docs)."""
    if counts is None:
        return Deal()
    total = sum(counts)
    per_worker = total // workers
    offsets = [0]
    for n in counts[:-1]:
        offsets.append(offsets[-1] + n)
    return Deal(",".join(map(str, offsets)), ",".join(map(str, counts)), per_worker * workers,
                per_worker, total - per_worker * workers)
