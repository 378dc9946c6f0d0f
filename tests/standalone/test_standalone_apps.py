"""Feeding and TensorBoard across the virtual network: a feeding task on one host sends Spark
data to the worker on the other, every record once per epoch, while the driver reads the
chief's TensorBoard on its host's address."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import feed_programs
import pytest

from tfrecord_io import cluster

# uneven partitions (one empty) of records b"r0".."r299"
SIZES = [0, 120, 3, 177]
N = sum(SIZES)


def namespace_of(pid: int) -> str:
    """The network namespace (a host of the virtual network) of a process."""
    return subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True,
                          text=True, check=True).stdout.strip()


def uneven_rdd(sc, sizes):
    starts = [sum(sizes[:i]) for i in range(len(sizes))]

    def partition(index, _):
        return [b"r%d" % i for i in range(starts[index], starts[index] + sizes[index])]

    return sc.parallelize(range(len(sizes)), len(sizes)).mapPartitionsWithIndex(partition)


@pytest.fixture(scope="module")
def fed(standalone_spark, tmp_path_factory):
    sc = standalone_spark.sparkContext
    out = tmp_path_factory.mktemp("standalone-feed")
    logs = out / "logs"
    logs.mkdir()
    c = cluster.run(sc, feed_programs.read_epochs,
                    {"out": str(out), "epochs": 2, "feeds": ["train"]},
                    num_workers=1, input_mode="spark", tensorboard=True, log_dir=str(logs))
    with c:
        url = c.tensorboard_url
        with urllib.request.urlopen(url, timeout=30) as response:
            board = response.status
        report = c.train(uneven_rdd(sc, SIZES).cache(), num_epochs=2)
        c.wait(timeout=600)
    read = json.loads((out / "worker-0-read.json").read_text())
    return {"read": read, "report": report, "url": url, "board": board}


def test_the_fed_worker_gets_every_record_once_per_epoch(fed):
    for epoch in range(2):
        assert sorted(fed["read"]["epochs"]["train"][epoch]) == list(range(N))
        assert fed["report"].epochs[epoch].records == {0: N}
        assert fed["report"].epochs[epoch].dropped == 0


def test_the_feeding_tasks_run_on_the_other_host(fed, network):
    fed_host = fed["url"].split("//", 1)[1].rsplit(":", 1)[0]  # the chief's: the worker's host
    address = {h.namespace: h.address for h in network.hosts}
    assert fed_host in address.values()
    senders = {address.get(namespace_of(task["pid"]))
               for epoch in fed["report"].epochs for task in epoch.tasks}
    assert senders == set(address.values()) - {fed_host}


def test_tensorboard_answers_the_driver_from_the_chiefs_host(fed, network):
    assert fed["board"] == 200
    assert fed["url"].startswith("http://198.18.")
