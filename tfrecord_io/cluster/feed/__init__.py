"""Feeding Spark data to the cluster's workers (``cluster.run(..., input_mode="spark")``).

::

    def main_fun(args, ctx):
        train = ctx.feed("train", features=spec)        # a tf.data.Dataset, epoch after epoch
        model.fit(train.batch(64), epochs=3)            # three fed epochs
        for batch in ctx.feed("validation").batch(256): # the next epoch of another feed
            ...

    c = cluster.run(sc, main_fun, args, num_workers=2, input_mode="spark")
    c.train(df.cache(), num_epochs=3)                   # blocks until the 3 epochs are fed
    c.train(val_df, feed="validation")
    c.wait()                                            # ends every feed, waits for main_fun

**The path.** A DataFrame's rows are encoded to ``tf.train.Example`` in the executors' JVMs by
the DataFrame codec (``record_type`` as in :func:`tfrecord_io.spark.save_dataframe`); an RDD's
``bytes`` records pass as they are (a one-column DataFrame fed as ``ByteArray``). Either way the
JVM cuts them into batches of about :data:`~tfrecord_io.cluster.feed.plan.BATCH_BYTES` (1 MiB)
of records, each for one worker (:mod:`~tfrecord_io.cluster.feed.plan`), laid out as a table of
the records' lengths and then the records (:mod:`~tfrecord_io.cluster.feed.batch_format`). A
feeding task (any executor, any free task slot) streams whole batches from its JVM to the
workers' feed servers over encrypted TCP (the jar's ``org.tfrecordio.spark.feed.FeedSender``;
the protocol is :mod:`~tfrecord_io.cluster.protocol`'s): no batch crosses to a Python worker.
The node process buffers at most :data:`~tfrecord_io.cluster.feed.buffer.DEFAULT_CAPACITY`
batches per feed of the epoch being read and as many of later ones
(:mod:`~tfrecord_io.cluster.feed.buffer`, :mod:`~tfrecord_io.cluster.feed.server`), and a full
buffer holds the sender back through TCP. TensorFlow receives each batch as one string and its
records' offsets, and cuts the records itself. No row is pickled, nothing is queued or copied in
Python per record. The driver reaches all of this through the DataFrame API alone, by reading
the jar's feed source (:mod:`~tfrecord_io.cluster.feed.source`), so a classic session and a
Spark Connect client (no JVM in the driver's process: the source runs on the Connect server)
feed by one path.

**Who is fed.** The nodes that run ``main_fun`` in the training cluster: every worker in
``mode="sync"``, the chief (the coordinator) in ``mode="ps"``. The evaluator is not fed.

**Sharing (exactly once).** Each record of an epoch reaches one worker at most. In
``mode="sync"`` every worker gets the same number of records per epoch: the data is counted
first and the last ``N % W`` records are dropped (fewer than the number of workers), so uneven
partitions never leave MultiWorkerMirroredStrategy waiting for a worker that ran dry. A
streaming DataFrame's epoch is its micro-batches, and the rule applies to each micro-batch on
its own: up to ``W - 1`` records of every micro-batch are dropped, so an epoch of ``k``
micro-batches may drop up to ``k * (W - 1)`` (its report's ``dropped`` adds them up). In
``mode="ps"`` nothing is dropped. Records are dealt round robin from every partition, so all
workers are fed at the same pace. Cache the data: it is read once to count and once to make
the batches, which are kept (Spark storage, memory then disk) for the call's later epochs
(``Cluster.train(..., cache=False)``: made again every epoch).
A worker's buffer drops a batch that arrives twice (a retried Spark task), and at the end of
each epoch checks that it received exactly what the driver sent it.

**Epochs.** Each iteration over ``ctx.feed(name)`` is the next epoch: it asks the driver for
that epoch and ends at the epoch's end marker. The driver feeds the first epoch of a
``train`` call when every node still reading the feed has asked for it, and each next one
ahead, unless a node waits for another feed's epoch; so feeds do not wait on each other:
training one feed, then reading another (validation) never deadlocks, and with
``train(..., block=False)`` two feeds can be fed in turns (``model.fit(train,
validation_data=val, epochs=k)`` with ``k`` epochs of each). These rules are one state machine on
the driver (:mod:`~tfrecord_io.cluster.feed.schedule`). An iteration left early skips
the rest of its epoch. ``train`` does not end its feed (call it again to feed more epochs);
``Cluster.wait`` and ``shutdown`` end every feed, after which an iteration is empty. A
streaming DataFrame is one open epoch made of its micro-batches, ended when the query stops.

**Stopping early.** ``ctx.stop_feed(name)`` (or ``main_fun`` returning) makes the node drop
whatever is still fed to it and tells the feeding tasks, which drop the rest of their data for
that node: feeding ends promptly and ``train`` returns. A node that fails makes ``train``
cancel its feeding job and raise the node's :class:`~tfrecord_io.errors.ClusterError`.

**Security.** Every feed connection speaks the cluster's protocol
(:mod:`tfrecord_io.cluster.protocol`, specified in ``docs/protocol.md``): keys derived from the
feed's key (itself derived from the cluster's secret, which stays on the driver; it opens no
control connection) for that connection, direction and node, every message -- headers and
training data alike -- encrypted and authenticated with AES-256-GCM, so a peer without the key
is refused and a replayed, reordered, reflected or altered message ends its connection; a
hello of another attempt is refused. Servers listen on the node's own address.

**Nothing lost silently.** A worker that a feeding task cannot reach fails the epoch with a
:class:`~tfrecord_io.errors.ClusterError` naming it (unless its ``main_fun`` had ended); a
record too large for one message fails the feeding job where its batch is built.
"""
