"""The cluster on an object store: a sync cluster whose input, checkpoints, summaries and saved
model are all ``s3://`` URLs of the test S3 server, configured only in the driver's
environment (the nodes get it through ``tfrecord_io.fs.environment``), and ``ml.predict``
scoring a DataFrame with the Keras file the chief saved there."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from tfrecord_io import cluster, fs, ml

import cluster_programs
from datafiles import write_record_shards

SIZES = [12, 7, 9, 15]  # four files of unequal length for two workers: 43 records


def _basename(url: str) -> str:
    return url.rsplit("/", 1)[1]


@pytest.fixture(scope="module")
def store(s3, s3_bucket):
    """The test S3 server's settings in the driver's environment only (the executors were
    started without them), and a fresh prefix of its bucket."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in s3.environment().items():
            patch.setenv(name, value)
        yield f"s3://{s3_bucket}/cluster/{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def run_on_s3(sc, store, tmp_path_factory):
    expected = write_record_shards(f"{store}/input", SIZES)
    out = tmp_path_factory.mktemp("s3-run")
    model = f"{store}/model/linear.keras"
    c = cluster.run(sc, cluster_programs.object_store_run,
                    {"out": str(out), "paths": f"{store}/input", "model": model},
                    num_workers=2, log_dir=f"{store}/logs", progress=False)
    with c:
        c.wait(timeout=300)
    return {"store": store, "out": out, "expected": expected, "model": model}


def test_workers_read_every_record_of_s3_files_exactly_once(run_on_s3):
    out = run_on_s3["out"]
    shares = [json.loads((out / f"read-{i}.json").read_text()) for i in range(2)]
    assert all(shares)
    assert sorted(shares[0] + shares[1]) == sorted(run_on_s3["expected"])


def test_the_chiefs_checkpoints_are_written_under_log_dir_on_s3(run_on_s3):
    directory = f"{run_on_s3['store']}/logs/checkpoints"
    names = {_basename(url) for url in fs.ls(directory)}
    assert "checkpoint" in names
    assert any(n.startswith("ckpt-1.") and n.endswith(".index") for n in names), names
    with fs.open(f"{directory}/checkpoint") as f:
        assert b'model_checkpoint_path: "ckpt-1"' in f.read()


def test_the_chiefs_summaries_are_event_files_under_log_dir_on_s3(run_on_s3):
    events = [url for url in fs.ls(f"{run_on_s3['store']}/logs/train")
              if _basename(url).startswith("events.out.tfevents.")]
    assert len(events) == 1
    assert fs.stat(events[0]).size > 0


def test_predict_scores_a_dataframe_with_the_keras_file_the_chief_saved_on_s3(spark, run_on_s3):
    weights = json.loads((run_on_s3["out"] / "weights.json").read_text())
    rows = [(i, [float(i), 1.0, -0.5, 2.0]) for i in range(6)]
    df = spark.createDataFrame(rows, "id long, x array<float>").repartition(2)
    scored = {r.id: r.y for r in ml.predict(df, run_on_s3["model"]).collect()}
    kernel, bias = np.array(weights["kernel"]), np.array(weights["bias"])
    for i, x in rows:
        assert scored[i] == pytest.approx(float(np.array(x) @ kernel[:, 0] + bias[0]), rel=1e-5)
