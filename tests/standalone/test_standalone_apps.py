"""The cluster's other ways of running across the virtual network: feeding tasks on other hosts
send Spark data to the worker, every record once per epoch, while the driver reads the chief's
TensorBoard on its host's address; ps-mode training with its three nodes on three hosts, the
workers reading HDFS shards; ml.predict with a model on HDFS in the hosts' Python workers."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import numpy as np
import pytest
from pyspark.sql import functions as F

from tfrecord_io import cluster, ml

import feed_programs
import manager_programs
from datafiles import write_record_shards

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


def test_the_feeding_tasks_run_on_other_hosts_than_the_workers(fed, network):
    fed_host = fed["url"].split("//", 1)[1].rsplit(":", 1)[0]  # the chief's: the worker's host
    address = {h.namespace: h.address for h in network.hosts}
    assert fed_host in address.values()
    senders = {address.get(namespace_of(task["pid"]))
               for epoch in fed["report"].epochs for task in epoch.tasks}
    assert senders and senders <= set(address.values()) - {fed_host}


def test_tensorboard_answers_the_driver_from_the_chiefs_host(fed, network):
    assert fed["board"] == 200
    assert fed["url"].startswith("http://198.18.")


PS_SIZES = [30, 20, 25, 35]


@pytest.fixture(scope="module")
def ps_trained(standalone_spark, standalone_hdfs, tmp_path_factory):
    base = f"{standalone_hdfs.url}/apps/input"
    expected = write_record_shards(base, PS_SIZES)
    out = tmp_path_factory.mktemp("standalone-ps")
    c = cluster.run(standalone_spark.sparkContext, manager_programs.ps_train_read,
                    {"out": str(out), "paths": base}, mode="ps", num_workers=1, num_ps=1)
    with c:
        c.wait(timeout=600)
    return {**json.loads((out / "ps-train.json").read_text()), "expected": expected}


def test_ps_mode_puts_its_three_nodes_on_three_hosts(ps_trained, network):
    spec = ps_trained["cluster_spec"]
    assert sorted(spec) == ["chief", "ps", "worker"]
    hosts = [a.rsplit(":", 1)[0] for addresses in spec.values() for a in addresses]
    assert sorted(hosts) == sorted(h.address for h in network.hosts)


def test_ps_mode_trains_the_variable_on_the_parameter_server_across_hosts(ps_trained):
    assert ps_trained["job_name"] == "chief"
    assert ps_trained["w"] == pytest.approx(3.0, abs=1e-3)


def test_ps_mode_workers_read_every_hdfs_record_exactly_once_across_hosts(ps_trained):
    assert sorted(ps_trained["read"]) == sorted(ps_trained["expected"])


def test_predict_runs_a_model_from_hdfs_on_every_host(standalone_spark, standalone_hdfs, network):
    import keras

    from tfrecord_io import tf as tfr

    keras.utils.set_random_seed(7)
    model = keras.Sequential([keras.Input(shape=(4,), name="image"),
                              keras.layers.Dense(3, name="scores")])
    url = f"{standalone_hdfs.url}/apps/models/classifier"
    tfr.register_filesystems()
    model.export(url, verbose=False)
    rng = np.random.default_rng(1)
    data = [(i, [float(v) for v in rng.random(4)]) for i in range(300)]
    df = standalone_spark.createDataFrame(data, "id long, image array<float>").repartition(6)
    host = F.udf(lambda: __import__("os").environ.get("SPARK_LOCAL_IP"))
    scored = ml.predict(df, url, output_mapping={"output_0": "scores"}).select(
        "id", "scores", host().alias("host"))
    got = sorted(scored.collect(), key=lambda r: r.id)
    assert [r.id for r in got] == list(range(300))
    assert {r.host for r in got} == {h.address for h in network.hosts}
    want = model.predict_on_batch(np.asarray([image for _, image in data], np.float32))
    np.testing.assert_allclose(np.array([r.scores for r in got]), want, rtol=1e-5, atol=1e-6)
