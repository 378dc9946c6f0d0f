"""The programs of ``python/images`` end to end on real images: the MNIST test set written out
as PNG files in ten class folders, converted to shards on the test HDFS (a fifth held out by
``images.convert``'s split), and the same images in the test database (``id % 5 = 0`` held out).
The CNN trained on the cluster from either path reaches 95% accuracy on the held-out images;
``evaluate.py``'s per-class report agrees with a direct computation; the grid search picks the
learning rate that learns and its summary says why.

The programs run in this process with the session's Spark, as their ``__main__`` blocks would
with their own.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest

from tfrecord_io.datasets import images

MNIST = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mnist"
ACCURACY = re.compile(r"accuracy (\d\.\d+) ")
VALIDATION_FRACTION = 0.2


@pytest.fixture(scope="module")
def shards(hdfs, tmp_path_factory):
    """All 10,000 images of the MNIST test set as PNG folders, converted to 4 training shards
    and a validation set (a fifth of the files, by their paths' hash) on HDFS."""
    tree = tmp_path_factory.mktemp("images-png") / "tree"
    assert images.write_png_folders(MNIST, tree) == 10_000
    out = f"{hdfs.url}/images/mnist"
    result = images.convert(tree, out, shards=4, validation_fraction=VALIDATION_FRACTION)
    assert 1800 < result.records["validation"] < 2200
    return out


@pytest.fixture(scope="module")
def shards_model(spark, hdfs, shards, programs):
    """train_shards.py's model (2 sync workers, 4 epochs), the cluster's result, and the
    nodes' output (which arrives in the driver's log, ``[worker:0] ...``)."""
    model = f"{hdfs.url}/images/models/shards"
    # seeded, for the same start every run: unseeded, 4 epochs have ended as low as 0.948
    args = programs.train_shards.parse_args([f"{shards}/train", f"{shards}/validation", model,
                                             "--seed", "1"])
    logger = logging.getLogger("tfrecord_io.cluster")
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        result = programs.train_shards.train(spark, args)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return model, result, "\n".join(lines)


def test_the_cnn_trained_from_shards_on_hdfs_reaches_95_percent_on_the_held_out_images(
    shards_model,
):
    model, result, output = shards_model
    found = ACCURACY.findall(output)
    assert found, f"no accuracy line in the nodes' output:\n{output[-3000:]}"
    assert float(found[-1]) >= 0.95
    losses = [r.values["loss"] for r in result.metrics if r.node == "worker:0"
              and "loss" in r.values]
    assert len(losses) == 4 and losses[-1] < losses[0]  # one report per epoch, falling


def test_evaluate_reports_per_class_accuracy_that_matches_a_direct_computation(
    spark, shards, shards_model, programs
):
    import tensorflow as tf

    from tfrecord_io import tf as tfr

    model, _, _ = shards_model
    args = programs.evaluate.parse_args([model, f"{shards}/validation"])
    report = programs.evaluate.evaluate(programs.evaluate.validation_rows(spark, args), model)

    # The same, directly: every validation record decoded here, the SavedModel called here.
    serving = tf.saved_model.load(model).signatures["serving_default"]
    spec = images.feature_spec(["image/encoded", "image/class/label"])
    labels, predicted = [], []
    for batch in tfr.parse_examples(tfr.dataset(f"{shards}/validation"), spec, batch_size=500):
        labels += batch["image/class/label"].numpy().tolist()
        predicted += serving(image=batch["image/encoded"])["prediction"].numpy().tolist()
    labels, predicted = np.array(labels), np.array(predicted)
    expected = [(k, int((labels == k).sum()), int(((labels == k) & (predicted == k)).sum()))
                for k in range(10)]
    assert [(c.label, c.images, c.correct) for c in report.classes] == expected
    assert report.images == len(labels)
    assert report.accuracy == pytest.approx(float((labels == predicted).mean()))
    assert report.accuracy >= 0.95
    table = report.table().splitlines()
    assert table[0] == "| class | images | correct | accuracy |"
    assert len(table) == 2 + 10 + 1 and table[-1].startswith(f"| all | {len(labels)} |")


def test_the_database_split_holds_out_every_fifth_id_and_trains_on_the_rest(
    spark, jdbc, images_db, programs
):
    read = programs.database.read_rows
    train = {r.id for r in read(spark, jdbc, partitions=2).select("id").collect()}
    held_out = {r.id for r in read(spark, jdbc, held_out=True).select("id").collect()}
    assert held_out == set(range(5, len(images_db) + 1, 5))
    assert train == set(range(1, len(images_db) + 1)) - held_out


def test_the_cnn_fed_from_the_database_reaches_95_percent_on_the_held_out_rows(
    spark, hdfs, jdbc, images_db, programs
):
    model = f"{hdfs.url}/images/models/database"
    args = programs.train_database.parse_args([jdbc["url"], model, "--user", jdbc["user"],
                                               "--seed", "1"])
    result = programs.train_database.train(spark, args)
    losses = [r.values["loss"] for r in result.metrics if r.node == "worker:0"
              and "loss" in r.values]
    assert len(losses) == 4 and losses[-1] < losses[0]
    held_out = programs.database.read_rows(spark, jdbc, held_out=True).select("image", "label")
    report = programs.evaluate.evaluate(held_out, model)
    assert report.images == len(images_db) // 5
    assert report.accuracy >= 0.95, report.table()


def test_grid_search_picks_the_rate_that_learns_and_its_summary_shows_why(
    spark, hdfs, jdbc, images_db, programs
):
    # One worker per fit: CrossValidator makes 2 folds x 2 rates + 1 final fit = 5 clusters.
    grid_search = programs.grid_search
    args = grid_search.parse_args([jdbc["url"], f"{hdfs.url}/images/models/grid",
                                   "--user", jdbc["user"], "--rates", "1e-5", "3e-3",
                                   "--limit", "1500", "--workers", "1"])
    found = grid_search.search(spark, args)
    assert found.rates == [1e-5, 3e-3]
    assert found.best_rate == 3e-3
    assert found.accuracies[1] > found.accuracies[0] + 0.3
    slow, fast = found.point_summaries()
    assert fast.history("loss", node="worker:0")[-1] < slow.history("loss", node="worker:0")[-1]
    best = found.cv_model.bestModel.summary
    assert len(best.history("loss", node="worker:0")) == args.epochs
    assert best.history("accuracy", node="worker:0")[-1] > 0.5
    text = grid_search.report(found)
    assert "winner: learning rate 0.003" in text
