"""tfrecord_io.datasets.images with ``spark=``: one task per shard on the session's local cluster
writes the same records, in the same shards, as the conversion without Spark; damaged files
follow the same policy."""

from __future__ import annotations

import shutil

import pytest

from tfrecord_io import records
from tfrecord_io.datasets import images
from tfrecord_io.errors import DamagedImageError


def shard_records(result: images.ImageConversion) -> dict[str, list[list[bytes]]]:
    return {name: [list(records.read(p)) for p in paths] for name, paths in result.shards.items()}


@pytest.fixture
def tree(mnist_png_tree, tmp_path):
    copy = tmp_path / "tree"
    shutil.copytree(mnist_png_tree, copy)
    return copy


def test_spark_and_local_write_the_same_records_in_the_same_shards(spark, mnist_png_tree, tmp_path):
    options = {"shards": 3, "validation_fraction": 0.25, "validation_shards": 2}
    local = images.convert(mnist_png_tree, tmp_path / "local", **options)
    distributed = images.convert(mnist_png_tree, tmp_path / "spark", spark=spark, **options)
    assert shard_records(distributed) == shard_records(local)
    assert (distributed.records, distributed.per_class) == (local.records, local.per_class)
    assert sorted(p.name for p in (tmp_path / "spark").iterdir()) == ["labels.txt", "train",
                                                                     "validation"]
    assert (tmp_path / "spark" / "labels.txt").read_bytes() == (
        tmp_path / "local" / "labels.txt").read_bytes()
    assert (tmp_path / "spark" / "train" / "_SUCCESS").exists()


def test_gzip_shards_are_named_and_filled_alike(spark, mnist_png_tree, tmp_path):
    local = images.convert(mnist_png_tree, tmp_path / "local", shards=2, compression="gzip")
    distributed = images.convert(mnist_png_tree, tmp_path / "spark", shards=2,
                                 compression="gzip", spark=spark)
    assert [p.rsplit("/", 1)[1] for p in distributed.shards["train"]] == [
        "part-r-00000.tfrecord.gz", "part-r-00001.tfrecord.gz"]
    assert shard_records(distributed) == shard_records(local)


def test_more_shards_than_images_gives_empty_shards_with_spark_too(spark, tmp_path, mnist_png_tree):
    src = tmp_path / "src" / "7"
    src.mkdir(parents=True)
    shutil.copy(mnist_png_tree / "7" / "00000.png", src)
    local = images.convert(tmp_path / "src", tmp_path / "local", shards=3)
    distributed = images.convert(tmp_path / "src", tmp_path / "spark", shards=3, spark=spark)
    assert shard_records(distributed) == shard_records(local)
    assert sum(len(s) for s in shard_records(distributed)["train"]) == 1


def test_under_skip_spark_lists_the_same_damaged_files(spark, tree, tmp_path):
    (tree / "4" / "empty.png").write_bytes(b"")
    cut = tree / "9" / "00007.png"
    cut.write_bytes(cut.read_bytes()[:40])
    local = images.convert(tree, tmp_path / "local", shards=2, on_corrupt="skip")
    distributed = images.convert(tree, tmp_path / "spark", shards=2, on_corrupt="skip",
                                 spark=spark)
    assert [p for p, _ in distributed.skipped] == ["4/empty.png", "9/00007.png"]
    assert distributed.skipped == local.skipped
    assert shard_records(distributed) == shard_records(local)


def test_under_fail_a_damaged_file_fails_the_job_naming_it_and_nothing_is_written(
    spark, tree, tmp_path
):
    bad = tree / "2" / "bad.png"
    bad.write_text("not an image")
    with pytest.raises(DamagedImageError, match=f"{bad}: not a JPEG or PNG image"):
        images.convert(tree, tmp_path / "out", shards=2, spark=spark)
    assert not (tmp_path / "out").exists()


def test_the_spark_progress_bar_counts_the_shards_written(spark, mnist_png_tree, tmp_path, capsys,
                                                         monkeypatch):
    # Spark's own console bar is off in the tests' session; the test does not rely on it.
    conf = spark.sparkContext.getConf().set("spark.ui.showConsoleProgress", "false")
    monkeypatch.setattr(type(spark.sparkContext), "getConf", lambda self: conf)
    group = spark.sparkContext.getLocalProperty("spark.jobGroup.id")  # earlier tests' leftover
    images.convert(mnist_png_tree, tmp_path / "out", shards=3, validation_fraction=0.25,
                   validation_shards=1, spark=spark, progress=True)
    assert "images (Spark): 100%" in capsys.readouterr().err
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") == group  # restored


def test_no_second_bar_when_spark_shows_its_own(spark, mnist_png_tree, tmp_path, capsys,
                                                monkeypatch):
    # The tests' session turns Spark's own console bar off (it redraws five times a second):
    # pretend it is on, as in an application started from Python with Spark's defaults.
    conf = spark.sparkContext.getConf().set("spark.ui.showConsoleProgress", "true")
    monkeypatch.setattr(type(spark.sparkContext), "getConf", lambda self: conf)
    images.convert(mnist_png_tree, tmp_path / "out", shards=2, spark=spark, progress=True)
    assert "images (Spark)" not in capsys.readouterr().err
