"""A DataFrame read by Spark's JDBC source feeds a training run on two workers: every row of
the table's subset arrives exactly once per epoch, its PNG decoded to the source's pixels."""

from __future__ import annotations

import json

import pytest

from tfrecord_io import cluster

import image_programs

N = 2000  # the first 2,000 images of the table
EPOCHS = 2


@pytest.fixture(scope="module")
def trained(spark, jdbc, images_db, tmp_path_factory):
    """Two sync workers fed EPOCHS epochs of the JDBC rows id 1..N (4 partitions)."""
    out = tmp_path_factory.mktemp("jdbc-feed")
    rows = (spark.read.format("jdbc").options(**jdbc)
            .option("dbtable", f"(SELECT id, label, image FROM images WHERE id <= {N}) AS subset")
            .option("partitionColumn", "id")
            .option("lowerBound", 1)
            .option("upperBound", N + 1)
            .option("numPartitions", 4)
            .load())
    c = cluster.run(spark.sparkContext, image_programs.train_on_images,
                    {"out": str(out), "epochs": EPOCHS}, num_workers=2, input_mode="spark",
                    progress=False)
    with c:
        report = c.train(rows, num_epochs=EPOCHS, timeout=600)
        c.wait(timeout=600)
    read = [json.loads((out / f"worker-{i}.json").read_text()) for i in range(2)]
    return report, read


def test_every_row_arrives_exactly_once_per_epoch(trained):
    report, read = trained
    assert [e.records for e in report.epochs] == [{0: N // 2, 1: N // 2}] * EPOCHS
    for epoch in range(EPOCHS):
        ids = [row[0] for worker in read for row in worker[epoch]["rows"]]
        assert sorted(ids) == list(range(1, N + 1)), f"epoch {epoch}"


def test_fed_rows_carry_the_source_labels_and_pixels(trained, images_db):
    _, read = trained
    for worker in read:
        for row_id, label, pixel_sum in worker[0]["rows"]:
            k = row_id - 1
            assert label == images_db.labels[k]
            assert pixel_sum == int(images_db.images[k].sum(dtype="int64"))


def test_training_on_the_fed_images_lowers_the_loss(trained):
    _, read = trained
    for worker in read:
        first, last = worker[0]["loss"], worker[-1]["loss"]
        assert last < first < 2.31  # below chance (ln 10) after the first epoch already
