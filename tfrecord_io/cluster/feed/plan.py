"""What is fed, as batches: a DataFrame or an RDD of records becomes an RDD of large batches of
records (laid out as in :mod:`~tfrecord_io.cluster.feed.batch_format`), each batch for one worker,
made in the executors' JVMs by
``org.tfrecordio.spark.feed.FeedBatches`` (rows are encoded to ``tf.train.Example`` there by
the DataFrame codec; records of an RDD cross to the JVM as plain bytes, never pickled).

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
from typing import Any

__all__ = ["BATCH_BYTES", "Deal", "deal", "Plan", "plan_batches"]

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


@dataclass
class Plan:
    """A feeding job's batches and what each worker gets.

    Attributes:
        jrdd: the batches, a ``JavaRDD<byte[]>`` (see ``FeedBatches``): the feeding job sends
            them from the JVM, without their crossing to Python.
        per_worker: records each worker gets (``equal=True``), else None.
        dropped: records left out by the equal-share rule (0 without it).
        partitions: partitions of the data.
    """

    jrdd: Any
    per_worker: int | None
    dropped: int
    partitions: int

    def persist(self, sc: Any, name: str) -> None:
        """Keep the batches in Spark's storage once they are made (``MEMORY_AND_DISK``: in the
        executors' storage memory, spilled to their disks when it is short), so that later
        epochs send them without computing and encoding the data again. Named *name* in the
        Spark UI's Storage tab. Free them with :meth:`unpersist`."""
        from tfrecord_io.spark.jvm import persist_java_rdd  # noqa: PLC0415 - Spark on the driver

        persist_java_rdd(sc, self.jrdd, name)

    def unpersist(self) -> None:
        """Drop the batches kept by :meth:`persist` (without waiting for the executors)."""
        self.jrdd.unpersist(False)


def plan_batches(
    sc: Any,
    data: Any,
    workers: int,
    job: int,
    *,
    equal: bool,
    record_type: str = "Example",
    batch_bytes: int = BATCH_BYTES,
    tasks: int | None = None,
) -> Plan:
    """The batches of *data* (a DataFrame or an RDD of bytes) for *workers* workers.

    Args:
        sc: the SparkContext.
        data: a DataFrame (encoded as *record_type*: ``"Example"``, ``"SequenceExample"``, or
            ``"ByteArray"`` for one binary column) or an RDD of ``bytes`` records.
        workers: workers fed.
        job: the feeding job's number (in each batch, so a worker can tell a retried task's
            batches from new ones).
        equal: the equal-share rule (module docs).
        batch_bytes: target size of a batch.
        tasks: at most this many feeding tasks: partitions are coalesced (each task then
            deals several partitions in turn), so that small partitions do not each pay a
            Spark task's start-up (None: one task per partition).
    """
    from pyspark import RDD  # noqa: PLC0415 - Spark on the driver

    from tfrecord_io.spark.jvm import (  # noqa: PLC0415 - Spark on the driver
        FEED_BATCHES_CLASS,
        call,
        ensure_jar,
        is_dataframe,
        java_class,
        java_dataset,
        java_records,
    )

    ensure_jar(sc)
    jclass = java_class(sc, FEED_BATCHES_CLASS)
    frame = is_dataframe(data)
    if frame:
        source = java_dataset(data)
        partitions = data.rdd.getNumPartitions()
    else:
        if not isinstance(data, RDD):
            raise TypeError(
                f"train() feeds a DataFrame or an RDD of bytes records, not {type(data).__name__}"
            )
        source = java_records(data)
        partitions = data.getNumPartitions()
    counts = None
    if equal:
        count = jclass.countRows if frame else jclass.countRecords
        counts = [int(n) for n in call(count, source)]
        partitions = len(counts)
    rule = deal(counts, workers)
    if frame:
        jbatches = call(jclass.fromRows, source, record_type, rule.offsets, rule.counts,
                        rule.limit, workers, job, batch_bytes)
    else:
        jbatches = call(jclass.fromRecords, source, rule.offsets, rule.counts, rule.limit,
                        workers, job, batch_bytes)
    if tasks is not None and 0 < tasks < partitions:
        jbatches = jbatches.coalesce(tasks)
    return Plan(jbatches, rule.per_worker, rule.dropped, partitions)
