"""A train() call of several epochs makes its batches once and sends the later epochs from
Spark's storage (Cluster.train(cache=True), the default), or makes them again every epoch
(cache=False); the kept batches are freed when the call returns. On a real local-cluster."""

from __future__ import annotations

import json

import feed_programs
from tfrecord_io import cluster

N = 300
EPOCHS = 3


def _feed(sc, tmp_path, **train_options):
    """Feed N records (not cached by the caller) for EPOCHS epochs; how often the records were
    computed, what each worker read per epoch, the report and the persistent RDDs' names."""
    computed = sc.accumulator(0)

    def counted(i):
        computed.add(1)
        return b"r%d" % i

    data = sc.parallelize(range(N), 4).map(counted)
    args = {"out": str(tmp_path), "epochs": EPOCHS, "feeds": ["train"]}
    with cluster.run(sc, feed_programs.read_epochs, args, num_workers=2,
                     input_mode="spark") as c:
        report = c.train(data, num_epochs=EPOCHS, **train_options)
        kept = [str(rdd.name()) for rdd in sc._jsc.getPersistentRDDs().values()]
        c.wait(timeout=300)
    read = [json.loads((tmp_path / f"worker-{w}-read.json").read_text())["epochs"]["train"]
            for w in range(2)]
    return computed.value, read, report, kept


def _every_epoch_has_every_record_once(read):
    for epoch in range(EPOCHS):
        assert sorted(read[0][epoch] + read[1][epoch]) == list(range(N))


def test_the_later_epochs_are_sent_from_the_batches_kept_after_the_first(sc, tmp_path):
    computed, read, report, _ = _feed(sc, tmp_path)
    # Once to count (sync mode), once to make the batches; epochs 2 and 3 compute nothing.
    assert computed == 2 * N
    _every_epoch_has_every_record_once(read)
    assert [e.records for e in report.epochs] == [{0: N // 2, 1: N // 2}] * EPOCHS


def test_without_cache_every_epoch_computes_the_data_again(sc, tmp_path):
    computed, read, _, _ = _feed(sc, tmp_path, cache=False)
    assert computed == N * (1 + EPOCHS)
    _every_epoch_has_every_record_once(read)


def test_the_kept_batches_are_freed_when_train_returns(sc, tmp_path):
    _, _, _, kept = _feed(sc, tmp_path)
    assert not [name for name in kept if name.startswith("tfrecord-io feed")]
