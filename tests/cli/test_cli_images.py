"""``tfrecord-io images`` on the real MNIST test set as PNG folders (mnist_png_tree): what it
prints and writes, its exit status for damaged files under both policies, its usage errors.
tests/datasets/test_images*.py check the records themselves."""

from __future__ import annotations

import shutil

import pytest

from tfrecord_io import cli, records
from tfrecord_io.example import decode_example

from datafiles import MNIST_PNG_LIMIT


def run(capsys, *argv) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def tree(mnist_png_tree, tmp_path):
    copy = tmp_path / "tree"
    shutil.copytree(mnist_png_tree, copy)
    return copy


def test_images_writes_the_sets_and_the_label_map_and_prints_a_summary(
    capsys, mnist_png_tree, tmp_path
):
    out = tmp_path / "out"
    status, stdout, _ = run(capsys, "images", mnist_png_tree, out, "--shards", "2",
                            "--validation-fraction", "0.1", "--first-label", "1")
    assert status == 0
    assert stdout.startswith(f"{MNIST_PNG_LIMIT} images (train ")
    assert "10 classes, 3 shards" in stdout and stdout.rstrip().endswith(f"-> {out}")
    assert (out / "labels.txt").read_text().splitlines()[:2] == ["1:0", "2:1"]
    train = sorted((out / "train").glob("part-r-*.tfrecord"))
    validation = sorted((out / "validation").glob("part-r-*.tfrecord"))
    assert [len(train), len(validation)] == [2, 1]
    labels = {decode_example(r)["image/class/label"][0] for p in train for r in records.read(p)}
    assert labels == set(range(1, 11))


def test_a_damaged_image_exits_1_naming_it_and_writes_nothing(capsys, tree, tmp_path):
    bad = tree / "6" / "00011.png"
    bad.write_bytes(bad.read_bytes()[:100])
    status, stdout, stderr = run(capsys, "images", tree, tmp_path / "out")
    assert status == 1 and stdout == ""
    assert f"error: {bad}: " in stderr and "--on-corrupt skip" in stderr
    assert not (tmp_path / "out").exists()


def test_on_corrupt_skip_converts_the_others_and_warns(capsys, tree, tmp_path):
    (tree / "6" / "notes.txt").write_text("not an image")
    status, stdout, stderr = run(capsys, "images", tree, tmp_path / "out", "--on-corrupt", "skip")
    assert status == 0
    assert f"{MNIST_PNG_LIMIT} images (train {MNIST_PNG_LIMIT})" in stdout
    assert "1 damaged skipped" in stdout
    assert "warning: Skipping" in stderr and "notes.txt: not a JPEG or PNG image" in stderr


def test_an_existing_output_needs_overwrite(capsys, mnist_png_tree, tmp_path):
    assert run(capsys, "images", mnist_png_tree, tmp_path / "out")[0] == 0
    status, _, stderr = run(capsys, "images", mnist_png_tree, tmp_path / "out")
    assert status == 2 and "already exists; remove it or pass --overwrite" in stderr
    assert run(capsys, "images", mnist_png_tree, tmp_path / "out", "--overwrite")[0] == 0


@pytest.mark.parametrize("argv", [
    ["--validation-fraction", "1"], ["--validation-fraction", "-0.5"], ["--shards", "0"],
    ["--on-corrupt", "ignore"],
])
def test_bad_options_are_usage_errors(capsys, mnist_png_tree, tmp_path, argv):
    assert run(capsys, "images", mnist_png_tree, tmp_path / "out", *argv)[0] == 2
    assert not (tmp_path / "out").exists()


def test_a_source_without_class_folders_is_a_usage_error(capsys, tmp_path):
    (tmp_path / "flat").mkdir()
    status, _, stderr = run(capsys, "images", tmp_path / "flat", tmp_path / "out")
    assert status == 2 and "no class folders" in stderr


def test_spark_conversion_matches_the_local_one_byte_for_byte(spark, spark_master, mnist_png_tree,
                                                             tmp_path, capsys):
    local, out = tmp_path / "local", tmp_path / "spark"
    argv = ["--shards", "2", "--validation-fraction", "0.2"]
    assert run(capsys, "images", mnist_png_tree, local, *argv)[0] == 0
    # In-process, main() uses the running session (conftest's local cluster) and leaves it up.
    status, stdout, _ = run(capsys, "images", mnist_png_tree, out, *argv, "--spark", spark_master)
    assert status == 0 and stdout.startswith(f"{MNIST_PNG_LIMIT} images (train ")
    files = sorted(p.relative_to(local) for p in local.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert len([f for f in files if f.name.startswith("part-r-")]) == 3
    for name in files:
        assert (out / name).read_bytes() == (local / name).read_bytes(), name
