"""cluster.run on YARN: TensorFlow nodes in NodeManager containers train in sync on HDFS shards,
save the model to HDFS, and leave nothing behind; a failing node is named."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tfrecord_io import cluster
from tfrecord_io.errors import ClusterError

import manager_programs
from datafiles import write_record_shards
from processes import node_processes
from waiting import written

# four files of unequal length: 110 records
SIZES = [30, 20, 25, 35]



@pytest.fixture(scope="module")
def hdfs_input(yarn):
    base = f"{yarn.hdfs_url}/cluster/input"
    expected = write_record_shards(base, SIZES)
    return base, expected


@pytest.fixture(scope="module")
def trained(yarn, yarn_spark, hdfs_input, tmp_path_factory):
    base, expected = hdfs_input
    out = tmp_path_factory.mktemp("yarn-sync")
    model = f"{yarn.hdfs_url}/cluster/model.keras"
    c = cluster.run(yarn_spark.sparkContext, manager_programs.read_train_save,
                    {"out": str(out), "paths": base, "model": model},
                    mode="sync", num_workers=2, keras="legacy")
    with c:
        c.wait(timeout=600)
    workers = [json.loads((out / f"worker-{i}.json").read_text()) for i in range(2)]
    return {"workers": workers, "expected": expected, "model": model,
            "left": node_processes(c.name)}


def test_every_hdfs_record_is_read_exactly_once_across_the_workers(trained):
    read = trained["workers"][0]["read"] + trained["workers"][1]["read"]
    assert sorted(read) == sorted(trained["expected"])
    assert trained["workers"][0]["read"] and trained["workers"][1]["read"]


def test_the_nodes_run_in_two_yarn_containers(trained):
    containers = [worker["container"] for worker in trained["workers"]]
    assert all(c and c.startswith("container_") for c in containers)
    assert len(set(containers)) == 2


def test_the_chief_saves_the_model_to_hdfs(trained):
    import tensorflow as tf
    import tf_keras  # the nodes ran with keras="legacy"

    import tfrecord_io.tf as tfr

    tfr.register_filesystems()
    assert tf.io.gfile.exists(trained["model"])
    loaded = tf_keras.models.load_model(trained["model"])
    assert loaded.predict(tf.constant([[1.0]]), verbose=0).shape == (1, 1)


def test_no_node_process_of_the_run_is_left(trained):
    assert trained["left"] == []


def test_an_exception_in_main_fun_is_a_cluster_error_naming_the_node(yarn_spark, tmp_path):
    c = cluster.run(yarn_spark.sparkContext, manager_programs.raise_on,
                    {"out": str(tmp_path), "node": "worker:1", "delay": 1.0}, num_workers=2)
    with pytest.raises(ClusterError, match=r"worker:1") as failure:
        with c:
            c.wait(timeout=300)
    assert "planned failure on worker:1" in str(failure.value)
    assert node_processes(c.name) == []


def test_a_killed_node_process_is_a_cluster_error_naming_the_node_within_seconds(
        yarn_spark, tmp_path):
    c = cluster.run(yarn_spark.sparkContext, manager_programs.hold_memory_on,
                    {"out": str(tmp_path), "node": "none"}, num_workers=2)
    with c:
        started = tmp_path / "worker-1.json"
        os.kill(json.loads(written(started, timeout=300))["pid"], signal.SIGKILL)
        killed = time.monotonic()
        with pytest.raises(ClusterError, match=r"^worker:1 failed: .*was killed by SIGKILL"):
            c.wait(timeout=120)
        surfaced = time.monotonic() - killed
    assert surfaced < 15.0, f"the failure took {surfaced:.1f} s to surface"
    assert node_processes(c.name) == []
