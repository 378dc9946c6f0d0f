"""`tfrecord-io mnist` on the real MNIST test set, read back with TensorFlow: every label and
every pixel. Also the --spark path on real executors, and the inspection commands on the output.

The data set lives outside the repository, in ../shared/data/mnist (see its README.md); these
tests fail, not skip, when it is missing.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfrecord_io import cli

ROOT = Path(__file__).resolve().parents[2]
MNIST = Path(__file__).parents[2] / ".." / "shared" / "data" / "mnist"

# Facts from ../shared/data/mnist/README.md.
LABEL_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
FIRST_LABELS = [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
PIXEL_SUM = 264923200
FIRST_IMAGE_SUM = 18454


@pytest.fixture(scope="module")
def mnist_dir() -> Path:
    files = ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    missing = [f for f in files if not (MNIST / f).is_file()]
    if missing:
        pytest.fail(
            f"the MNIST test set is missing: {', '.join(missing)} not in {MNIST.resolve()}. "
            "These tests need the real data at ../shared/data/mnist next to the project root "
            "(see that directory's README.md); it must not be copied into the repository."
        )
    return MNIST


@pytest.fixture(scope="module")
def expected(mnist_dir) -> tuple[np.ndarray, np.ndarray]:
    """Images and labels parsed here, independently of tfrecord_io, and checked against the
    README's facts."""
    raw = gzip.decompress((mnist_dir / "t10k-images-idx3-ubyte.gz").read_bytes())
    images = np.frombuffer(raw, np.uint8, offset=16).reshape(10000, 28, 28)
    raw = gzip.decompress((mnist_dir / "t10k-labels-idx1-ubyte.gz").read_bytes())
    labels = np.frombuffer(raw, np.uint8, offset=8)
    assert np.bincount(labels).tolist() == LABEL_COUNTS
    assert int(images.sum(dtype=np.int64)) == PIXEL_SUM
    return images, labels


def convert(*argv: str) -> subprocess.CompletedProcess:
    """Run ``python -m tfrecord_io.cli mnist ...`` as a user would."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, "-m", "tfrecord_io.cli", "mnist", *map(str, argv)],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result


def shard_files(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.glob("part-r-*"))


def tf_read(files: list[str], spec: dict, compression: str = "") -> dict[str, np.ndarray]:
    """Parse every record with TensorFlow, in file order."""
    dataset = tf.data.TFRecordDataset(files, compression_type=compression).batch(2500)
    parts = [tf.io.parse_example(batch, spec) for batch in dataset]
    return {name: np.concatenate([p[name].numpy() for p in parts]) for name in spec}


@pytest.fixture(scope="module")
def int64_output(mnist_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mnist") / "tfr"
    result = convert(mnist_dir, out, "--shards", "4")
    assert result.stdout.startswith("10000 records (test 10000), 4 shards, ")
    return out


def test_tensorflow_reads_every_label_and_pixel_of_the_default_int64_format(int64_output, expected):
    images, labels = expected
    assert sorted(p.name for p in int64_output.iterdir()) == ["test"]  # no training set here
    files = shard_files(int64_output / "test")
    assert [Path(f).name for f in files] == [f"part-r-0000{k}.tfrecord" for k in range(4)]
    got = tf_read(files, {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image": tf.io.FixedLenFeature([784], tf.int64),  # what TensorFlowOnSpark parses
        "height": tf.io.FixedLenFeature([], tf.int64),
        "width": tf.io.FixedLenFeature([], tf.int64),
    })
    assert got["label"][:10].tolist() == FIRST_LABELS
    assert np.bincount(got["label"]).tolist() == LABEL_COUNTS
    assert int(got["image"][0].sum()) == FIRST_IMAGE_SUM
    assert int(got["image"].sum()) == PIXEL_SUM
    np.testing.assert_array_equal(got["label"], labels)
    np.testing.assert_array_equal(got["image"], images.reshape(10000, 784))
    assert set(got["height"].tolist()) == {28} and set(got["width"].tolist()) == {28}


def test_bytes_format_with_gzip(mnist_dir, tmp_path, expected):
    images, labels = expected
    convert(
        mnist_dir, tmp_path / "out", "--image-format", "bytes", "--compression", "gzip",
        "--shards", "2",
    )
    files = shard_files(tmp_path / "out" / "test")
    assert [Path(f).name for f in files] == ["part-r-00000.tfrecord.gz", "part-r-00001.tfrecord.gz"]
    got = tf_read(files, {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image": tf.io.FixedLenFeature([], tf.string),
    }, "GZIP")
    pixels = tf.io.decode_raw(got["image"], tf.uint8).numpy()
    np.testing.assert_array_equal(got["label"], labels)
    np.testing.assert_array_equal(pixels.reshape(10000, 28, 28), images)


def test_float_format_with_zlib(mnist_dir, tmp_path, expected):
    images, labels = expected
    convert(mnist_dir, tmp_path / "out", "--image-format", "float", "--compression", "zlib")
    got = tf_read(shard_files(tmp_path / "out" / "test"), {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image": tf.io.FixedLenFeature([784], tf.float32),
    }, "ZLIB")
    np.testing.assert_array_equal(got["label"], labels)
    np.testing.assert_array_equal(got["image"], images.reshape(10000, 784).astype(np.float32) / 255)
    assert got["image"].min() == 0.0 and got["image"].max() == 1.0


def test_spark_conversion_on_executors_matches_the_local_one_byte_for_byte(
    spark, spark_master, mnist_dir, tmp_path, capsys
):
    local, out = tmp_path / "local", tmp_path / "spark"
    assert cli.main(["mnist", str(mnist_dir), str(local), "--shards", "2"]) == 0
    # In-process, main() picks up the running session (conftest's local-cluster: executors in
    # their own JVMs) and leaves it running; from a shell the command starts and stops its own.
    status = cli.main(["mnist", str(mnist_dir), str(out), "--spark", spark_master, "--shards", "2"])
    stdout = capsys.readouterr().out.splitlines()
    assert status == 0
    assert stdout[1].startswith("10000 records (test 10000), 2 shards, ")
    assert not spark.sparkContext._jsc.sc().isStopped()
    names = sorted(p.name for p in (out / "test").iterdir())
    assert names == sorted(p.name for p in (local / "test").iterdir())  # no .crc files either
    assert names == ["_SUCCESS", "_part-r-00000.tfrecord.tfindex", "_part-r-00001.tfrecord.tfindex",
                     "part-r-00000.tfrecord", "part-r-00001.tfrecord"]
    for name in names:
        assert (out / "test" / name).read_bytes() == (local / "test" / name).read_bytes(), name
    assert sorted(p.name for p in out.iterdir()) == ["test"]  # the staging directory is gone


def test_inspection_commands_on_the_converted_set(int64_output, capsys):
    test_dir = int64_output / "test"
    assert cli.main(["count", str(test_dir)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "10000\ttotal"
    assert cli.main(["verify", str(test_dir)]) == 0
    assert capsys.readouterr().out == ""
    assert cli.main(["head", "-n", "10", str(test_dir)]) == 0
    heads = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [h["label"] for h in heads] == [[x] for x in FIRST_LABELS]
    assert sum(heads[0]["image"]) == FIRST_IMAGE_SUM
    assert cli.main(["schema", "--json", str(test_dir)]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["feature_spec"]["image"] == "tf.io.FixedLenFeature([784], tf.int64)"
    assert (
        schema["spark_schema"] == "height BIGINT, image ARRAY<BIGINT>, label BIGINT, width BIGINT"
    )
    assert schema["records_sampled"] == 10000
