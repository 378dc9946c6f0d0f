"""The tfrecord-io command on every remote store the session serves (``hdfs://``,
``webhdfs://``, ``s3://``, ``az://``, ``gs://``; tests/stores.py), each configured the way its
own clients are: ``mnist`` and ``images`` writing to the store, then ``count``, ``head``,
``schema``, ``verify`` and ``index`` reading it, and the command as a process of its own. What
only one store has (its Spark conversions, a missing bucket) is in test_cli_s3.py and
test_cli_object_stores.py."""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import uuid

import numpy as np
import pytest
import stores
from image_trees import png

from tfrecord_io import cli, fs, records
from tfrecord_io.example import decode_example


def _idx(array: np.ndarray) -> bytes:
    return struct.pack(f">I{array.ndim}I", 0x0800 | array.ndim, *array.shape) + array.tobytes()


@pytest.fixture(params=stores.params())
def base(request) -> str:
    """A fresh, existing directory of one store, its settings in the environment."""
    url = f"{stores.root(request, request.param)}/cli/{uuid.uuid4().hex[:8]}"
    fs.makedirs(url)
    return url


@pytest.fixture
def mnist_there(base) -> tuple[str, np.ndarray, np.ndarray]:
    """MNIST's test set in its IDX files (25 random images), in the store."""
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (25, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 25, dtype=np.uint8)
    src = f"{base}/idx"
    stores.put(f"{src}/t10k-images-idx3-ubyte.gz", gzip.compress(_idx(images)))
    stores.put(f"{src}/t10k-labels-idx1-ubyte.gz", gzip.compress(_idx(labels)))
    return src, images, labels


def test_mnist_from_the_store_to_the_store_then_inspect(capsys, base, mnist_there):
    src, images, labels = mnist_there
    out = f"{base}/tfr"
    assert cli.main(["mnist", src, out, "--shards", "2"]) == 0
    assert fs.ls(out) == [f"{out}/test"]  # the staging directory is gone
    names = [s.rsplit("/", 1)[1] for s in fs.ls(f"{out}/test")]
    assert names == ["_SUCCESS", "_part-r-00000.tfrecord.tfindex",
                     "_part-r-00001.tfrecord.tfindex", "part-r-00000.tfrecord",
                     "part-r-00001.tfrecord"]
    decoded = [decode_example(r) for s in (0, 1)
               for r in records.read(f"{out}/test/part-r-0000{s}.tfrecord")]
    assert [d["label"][0] for d in decoded] == labels.tolist()
    assert [d["image"] for d in decoded] == images.reshape(25, -1).tolist()
    capsys.readouterr()

    assert cli.main(["count", f"{out}/test"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "25\ttotal"
    assert cli.main(["verify", f"{out}/test"]) == 0
    assert cli.main(["head", "-n", "1", f"{out}/test"]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["label"] == [int(labels[0])]
    assert cli.main(["schema", "--json", f"{out}/test/part-*"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["records_sampled"] == 25 and "image" in json.dumps(schema)

    assert cli.main(["mnist", src, out, "--shards", "1"]) == 2  # exists: refused
    assert "exists" in capsys.readouterr().err
    assert cli.main(["mnist", src, out, "--shards", "1", "--compression", "gzip",
                     "--overwrite"]) == 0
    assert [s.rsplit("/", 1)[1] for s in fs.ls(f"{out}/test")] == [
        "_SUCCESS", "part-r-00000.tfrecord.gz"]


def test_index_then_count_from_it_and_verify_naming_the_url_and_offset(capsys, base):
    records.write(f"{base}/tf.tfrecord", [bytes([i]) * 50 for i in range(10)], index=False)
    assert cli.main(["index", f"{base}/tf.tfrecord"]) == 0
    assert fs.ls(base) == [f"{base}/_tf.tfrecord.tfindex", f"{base}/tf.tfrecord"]
    assert cli.main(["count", f"{base}/tf.tfrecord"]) == 0  # from the index
    assert capsys.readouterr().out.splitlines()[-1] == f"10\t{base}/tf.tfrecord"

    data = bytearray(stores.get(f"{base}/tf.tfrecord"))
    data[66 * 3 + 20] ^= 0xFF  # inside record 3's data
    stores.put(f"{base}/bad.tfrecord", bytes(data))
    assert cli.main(["verify", f"{base}/bad.tfrecord"]) == 1
    report = capsys.readouterr().out
    assert f"{base}/bad.tfrecord" in report and "byte offset 198" in report


def test_images_from_a_local_tree_to_the_store_then_count_and_verify(tmp_path, capsys, base):
    for label, name in enumerate(("cat", "dog")):
        (tmp_path / "tree" / name).mkdir(parents=True)
        for i in range(3):
            (tmp_path / "tree" / name / f"{i}.png").write_bytes(png(40 * label + i))
    out = f"{base}/images"
    assert cli.main(["images", str(tmp_path / "tree"), out, "--shards", "2"]) == 0
    assert fs.ls(out) == [f"{out}/labels.txt", f"{out}/train"]
    assert stores.get(f"{out}/labels.txt") == b"0:cat\n1:dog\n"
    capsys.readouterr()
    assert cli.main(["count", f"{out}/train"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "6\ttotal"
    assert cli.main(["verify", f"{out}/train"]) == 0


def test_images_from_a_tree_on_the_store_name_each_file_by_its_path_below_it(tmp_path, base):
    for path, seed in (("cat/0.png", 1), ("cat/more/1.png", 2), ("dog/sub_2024/2.png", 3)):
        with fs.open(f"{base}/tree/{path}", "wb") as f:
            f.write(png(seed))
    out = str(tmp_path / "out")
    assert cli.main(["images", f"{base}/tree", out, "--shards", "1",
                     "--validation-fraction", "0"]) == 0
    names = sorted(decode_example(r)["image/filename"][0]
                   for shard in fs.expand(f"{out}/train") for r in records.read(shard))
    assert names == [b"cat/0.png", b"cat/more/1.png", b"dog/sub_2024/2.png"]


def test_a_missing_input_is_a_usage_error_naming_the_url(capsys, base):
    assert cli.main(["count", f"{base}/absent"]) == 2
    assert f"{base}/absent" in capsys.readouterr().err


def test_the_command_reads_the_store_as_a_process_of_its_own(base):
    """The installed entry point, in a fresh process with the store's settings in its
    environment, exits cleanly (the store's client is shut down at exit)."""
    records.write(f"{base}/a.tfrecord", [b"x" * 10] * 7)
    done = subprocess.run([sys.executable, "-m", "tfrecord_io.cli", "count", base],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert (done.returncode, done.stdout, done.stderr) == (0, f"7\t{base}/a.tfrecord\n", "")
