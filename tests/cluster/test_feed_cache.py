"""A train() call of several epochs makes its batches once and sends the later epochs from
Spark's storage (Cluster.train(cache=True), the default), or makes them again every epoch
(cache=False); the kept batches are freed when the call returns. On a real local-cluster."""

from __future__ import annotations

import json
from typing import NamedTuple

from tfrecord_io import cluster

import feed_programs

N = 300
EPOCHS = 3


class Fed(NamedTuple):
    computed: int  # records computed from the data
    read: list  # per worker, the ids it read in each epoch
    report: object
    kept: list  # names of the persistent RDDs once train() returned
    cluster: str


def _feed(sc, tmp_path, pad=0, **train_options) -> Fed:
    """Feed N records (not cached by the caller; each *pad* bytes longer) for EPOCHS epochs."""
    computed = sc.accumulator(0)

    def counted(i):
        computed.add(1)
        return b"r%d " % i + b" " * pad

    data = sc.parallelize(range(N), 4).map(counted)
    args = {"out": str(tmp_path), "epochs": EPOCHS, "feeds": ["train"]}
    with cluster.run(sc, feed_programs.read_epochs, args, num_workers=2,
                     input_mode="spark") as c:
        report = c.train(data, num_epochs=EPOCHS, **train_options)
        kept = [str(rdd.name()) for rdd in sc._jsc.getPersistentRDDs().values()]
        c.wait(timeout=300)
    read = [json.loads((tmp_path / f"worker-{w}-read.json").read_text())["epochs"]["train"]
            for w in range(2)]
    return Fed(computed.value, read, report, kept, c.name)


def _every_epoch_has_every_record_once(read):
    for epoch in range(EPOCHS):
        assert sorted(read[0][epoch] + read[1][epoch]) == list(range(N))


def test_the_later_epochs_are_sent_from_the_batches_kept_after_the_first(sc, tmp_path):
    fed = _feed(sc, tmp_path)
    # Once to count (sync mode), once to make the batches; epochs 2 and 3 compute nothing.
    assert fed.computed == 2 * N
    _every_epoch_has_every_record_once(fed.read)
    assert [e.records for e in fed.report.epochs] == [{0: N // 2, 1: N // 2}] * EPOCHS


def test_without_cache_every_epoch_computes_the_data_again(sc, tmp_path):
    fed = _feed(sc, tmp_path, cache=False)
    assert fed.computed == N * (1 + EPOCHS)
    _every_epoch_has_every_record_once(fed.read)


def test_the_kept_batches_are_freed_when_train_returns(sc, tmp_path):
    kept = _feed(sc, tmp_path).kept
    assert not [name for name in kept if name.startswith("tfrecord-io feed")]


def _feeding_jobs(sc, cluster):
    """Epoch -> (submitted, completed) in ms, of the feeding jobs Spark ran for *cluster* (from
    its status store)."""
    jobs = sc._jsc.sc().statusStore().jobsList(None)
    times = {}
    for i in range(jobs.size()):
        job = jobs.apply(i)
        group = job.jobGroup()
        if group.isDefined() and group.get().startswith(cluster + "-"):
            epoch = int(job.description().get().rsplit(" ", 1)[1])
            times[epoch] = (job.submissionTime().get().getTime(),
                            job.completionTime().get().getTime())
    return times


def test_with_kept_batches_the_next_epochs_job_waits_in_sparks_queue_before_this_one_ends(
        sc, tmp_path):
    # 400 KB records, 60 MB per worker and epoch, more than a node buffers (32 batches of 1 MiB
    # per epoch): a job lasts until its readers have read part of the epoch.
    fed = _feed(sc, tmp_path, pad=400_000)
    _every_epoch_has_every_record_once(fed.read)
    jobs = _feeding_jobs(sc, fed.cluster)
    # Epoch 2 is fed once epoch 1 is (its batches are made then); epoch 3's job is submitted
    # while epoch 2's runs, so its tasks start as soon as epoch 2's end.
    assert jobs[3][0] < jobs[2][1]
    assert jobs[2][0] >= jobs[1][1]
    assert [e.jobs for e in fed.report.epochs] == [1] * EPOCHS
