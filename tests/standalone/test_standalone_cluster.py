"""cluster.run on a Spark standalone cluster whose Workers are separate hosts (network
namespaces): the nodes' servers bind addresses the other hosts reach, training reads every HDFS
record once, and a network partition fails the run, naming the node, without hanging."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from pyspark.sql import functions as F

from tfrecord_io import cluster
from tfrecord_io.cluster.application import application_of
from tfrecord_io.errors import ClusterError

import manager_programs
from datafiles import write_record_shards
from processes import free_slots_again, node_processes, node_processes_after
from waiting import written

SIZES = [30, 20, 25, 35]



@pytest.fixture(scope="module")
def hdfs_input(standalone_hdfs):
    base = f"{standalone_hdfs.url}/cluster/input"
    expected = write_record_shards(base, SIZES)
    return base, expected


@pytest.fixture(scope="module")
def trained(standalone_spark, standalone_hdfs, hdfs_input, tmp_path_factory):
    base, expected = hdfs_input
    out = tmp_path_factory.mktemp("standalone-sync")
    c = cluster.run(standalone_spark.sparkContext, manager_programs.read_train_save,
                    {"out": str(out), "paths": base,
                     "model": f"{standalone_hdfs.url}/cluster/model.keras"},
                    mode="sync", num_workers=2, keras="legacy")
    with c:
        c.wait(timeout=600)
    return {"workers": [json.loads((out / f"worker-{i}.json").read_text()) for i in range(2)],
            "expected": expected, "control": c.control_address, "left": node_processes(c.name)}


def test_the_executors_run_on_every_namespaced_host(standalone_spark, network):
    namespaces = set(standalone_spark.sparkContext.parallelize(range(8), 8).map(
        lambda _: __import__("subprocess").run(["ip", "netns", "identify"], capture_output=True,
                                               text=True).stdout.strip()).collect())
    assert namespaces == {h.namespace for h in network.hosts}


def test_every_hdfs_record_is_read_exactly_once_across_the_hosts(trained):
    read = trained["workers"][0]["read"] + trained["workers"][1]["read"]
    assert sorted(read) == sorted(trained["expected"])


def test_the_node_servers_bind_the_hosts_addresses_not_loopback(trained, network):
    hosts = [a.rsplit(":", 1)[0] for a in trained["workers"][0]["cluster_spec"]["worker"]]
    assert len(set(hosts)) == 2  # one node per host
    assert set(hosts) <= {h.address for h in network.hosts}
    assert trained["control"].rsplit(":", 1)[0] == network.gateway


def test_no_node_process_is_left(trained):
    assert trained["left"] == []


def test_tfrecord_round_trip_through_hdfs(standalone_spark, standalone_hdfs):
    path = f"{standalone_hdfs.url}/source/people"
    df = standalone_spark.range(200).withColumn("bucket", (F.col("id") % 4).cast("int"))
    df.repartition(4).write.format("tfrecord").partitionBy("bucket").save(path)
    back = standalone_spark.read.format("tfrecord").load(path)
    assert back.count() == 200
    assert sorted(r.id for r in back.where("bucket = 3").collect()) == list(range(3, 200, 4))


HEARTBEAT_TIMEOUT = 10.0


def test_a_cut_link_fails_the_run_at_the_heartbeat_timeout_naming_node_host_and_executor(
        standalone_spark, network, tmp_path):
    """worker:1's host has its cable pulled while the nodes train: ClusterError within the
    heartbeat timeout and 5 s (nothing waits for the silent node to confirm a stop it cannot
    send), naming the node, its host's address and executor, and why."""
    c = cluster.run(standalone_spark.sparkContext, manager_programs.train_until_stopped,
                    {"out": str(tmp_path)}, num_workers=2, heartbeat_timeout=HEARTBEAT_TIMEOUT)
    host = None
    try:
        addresses = [written(tmp_path / f"worker-{i}.started", timeout=180) for i in range(2)]
        (host,) = [h for h in network.hosts if h.address == addresses[1]]
        host.set_link(up=False)
        cut = time.monotonic()
        with pytest.raises(ClusterError) as failure:
            c.wait(timeout=120)
        surfaced = time.monotonic() - cut
        text = str(failure.value)
        assert failure.value.node == "worker:1", text
        assert "no heartbeat" in text and "(host unreachable or process frozen)" in text, text
        assert re.search(rf"executor \d+ on host {re.escape(host.address)}\b", text), text
        assert surfaced < HEARTBEAT_TIMEOUT + 5, f"the failure took {surfaced:.1f} s"
    finally:
        if host is not None:
            host.set_link(up=True)
        stopper = threading.Thread(target=c.shutdown, daemon=True)
        stopper.start()
        stopper.join(90)
        assert not stopper.is_alive(), "shutdown hung"
    assert node_processes_after(c.name, 60.0) == []
    # the driver handed the silent node's executor back to Spark, which starts another there
    free_slots_again(application_of(standalone_spark), 3, timeout=180)
