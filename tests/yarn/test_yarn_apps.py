"""The cluster's other ways of running on YARN: ps-mode training whose workers read HDFS
shards, with TensorBoard answering the driver from the chief's container; Spark data fed to
two workers from a third executor, every record once per epoch; ml.predict with a model on
HDFS in the executors' Python workers."""

from __future__ import annotations

import json
import urllib.request

import numpy as np
import pytest

from tfrecord_io import cluster, ml

import feed_programs
import manager_programs
from datafiles import write_record_shards

SIZES = [30, 20, 25, 35]
# uneven partitions (one empty) of records b"r0".."r399"
FEED_SIZES = [0, 150, 3, 200, 47]
N_FEED = sum(FEED_SIZES)


@pytest.fixture(scope="module")
def ps_trained(yarn, yarn_spark, tmp_path_factory):
    base = f"{yarn.hdfs_url}/apps/input"
    expected = write_record_shards(base, SIZES)
    out = tmp_path_factory.mktemp("yarn-ps")
    flag = out / "go"
    c = cluster.run(yarn_spark.sparkContext, manager_programs.ps_train_read,
                    {"out": str(out), "paths": base, "flag": str(flag)},
                    mode="ps", num_workers=1, num_ps=1, tensorboard=True,
                    log_dir=f"{yarn.hdfs_url}/apps/logs")
    with c:
        url = c.tensorboard_url
        with urllib.request.urlopen(url, timeout=30) as response:
            board = response.status
        flag.write_text("go")
        c.wait(timeout=600)
    result = json.loads((out / "ps-train.json").read_text())
    return {**result, "expected": expected, "board": board, "url": url}


def test_ps_mode_trains_the_variable_on_the_parameter_server(ps_trained):
    assert ps_trained["job_name"] == "chief"
    assert sorted(ps_trained["cluster_spec"]) == ["chief", "ps", "worker"]
    assert ps_trained["w"] == pytest.approx(3.0, abs=1e-3)


def test_ps_mode_workers_read_every_hdfs_record_exactly_once(ps_trained):
    assert sorted(ps_trained["read"]) == sorted(ps_trained["expected"])


def test_tensorboard_answers_the_driver_from_the_chiefs_container(ps_trained):
    assert ps_trained["url"].startswith("http://")
    assert ps_trained["board"] == 200


def uneven_rdd(sc, sizes):
    starts = [sum(sizes[:i]) for i in range(len(sizes))]

    def partition(index, _):
        return [b"r%d" % i for i in range(starts[index], starts[index] + sizes[index])]

    return sc.parallelize(range(len(sizes)), len(sizes)).mapPartitionsWithIndex(partition)


def test_fed_workers_get_every_record_once_per_epoch(yarn_spark, tmp_path):
    sc = yarn_spark.sparkContext
    c = cluster.run(sc, feed_programs.read_epochs,
                    {"out": str(tmp_path), "epochs": 2, "feeds": ["train"]},
                    num_workers=2, input_mode="spark")
    with c:
        report = c.train(uneven_rdd(sc, FEED_SIZES).cache(), num_epochs=2)
        c.wait(timeout=600)
    read = [json.loads((tmp_path / f"worker-{i}-read.json").read_text()) for i in range(2)]
    for epoch in range(2):
        ids = [read[i]["epochs"]["train"][epoch] for i in range(2)]
        both = ids[0] + ids[1]
        assert len(both) == len(set(both))  # no record twice
        assert len(ids[0]) == len(ids[1])  # sync mode: equal shares
        assert len(both) + report.epochs[epoch].dropped == N_FEED
        assert set(both) <= set(range(N_FEED))
        assert report.epochs[epoch].records == {0: len(ids[0]), 1: len(ids[1])}


def test_predict_runs_a_model_from_hdfs_in_the_executors(yarn, yarn_spark):
    import keras

    from tfrecord_io import tf as tfr

    keras.utils.set_random_seed(7)
    model = keras.Sequential([keras.Input(shape=(4,), name="image"),
                              keras.layers.Dense(3, name="scores")])
    url = f"{yarn.hdfs_url}/apps/models/classifier"
    tfr.register_filesystems()
    model.export(url, verbose=False)
    rng = np.random.default_rng(1)
    data = [(i, [float(v) for v in rng.random(4)]) for i in range(200)]
    df = yarn_spark.createDataFrame(data, "id long, image array<float>").repartition(3)
    got = sorted(ml.predict(df, url, output_mapping={"output_0": "scores"}).collect(),
                 key=lambda r: r.id)
    assert [r.id for r in got] == list(range(200))
    want = model.predict_on_batch(np.asarray([image for _, image in data], np.float32))
    np.testing.assert_allclose(np.array([r.scores for r in got]), want, rtol=1e-5, atol=1e-6)
