"""The tfrecord-io command on hdfs:// paths of the real test HDFS."""

from __future__ import annotations

import gzip
import json
import struct
import uuid

import numpy as np
import pytest

from tfrecord_io import cli, fs, records
from tfrecord_io.example import decode_example


def idx(array: np.ndarray) -> bytes:
    return struct.pack(f">I{array.ndim}I", 0x0800 | array.ndim, *array.shape) + array.tobytes()


@pytest.fixture
def base(hdfs) -> str:
    url = f"{hdfs.url}/cli/{uuid.uuid4().hex[:8]}"
    fs.makedirs(url)
    return url


@pytest.fixture
def mnist_on_hdfs(base, tmp_path) -> tuple[str, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (25, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 25, dtype=np.uint8)
    src = f"{base}/idx"
    fs.makedirs(src)
    with fs.open(f"{src}/t10k-images-idx3-ubyte.gz", "wb") as out:
        out.write(gzip.compress(idx(images)))
    with fs.open(f"{src}/t10k-labels-idx1-ubyte.gz", "wb") as out:
        out.write(gzip.compress(idx(labels)))
    return src, images, labels


def test_mnist_from_hdfs_to_hdfs_then_inspect(capsys, base, mnist_on_hdfs):
    src, images, labels = mnist_on_hdfs
    out = f"{base}/tfr"
    assert cli.main(["mnist", src, out, "--shards", "2"]) == 0
    names = sorted(u.rsplit("/", 1)[1] for u in fs.ls(f"{out}/test"))
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


def test_verify_and_index_on_hdfs(capsys, base):
    good = [bytes([i]) * 50 for i in range(10)]
    records.write(f"{base}/tf.tfrecord", good, index=False)
    assert cli.main(["index", f"{base}/tf.tfrecord"]) == 0
    assert fs.exists(f"{base}/_tf.tfrecord.tfindex")

    data = bytearray(read_bytes(f"{base}/tf.tfrecord"))
    data[66 * 3 + 20] ^= 0xFF  # inside record 3's data
    with fs.open(f"{base}/bad.tfrecord", "wb") as out:
        out.write(bytes(data))
    capsys.readouterr()
    assert cli.main(["verify", f"{base}/bad.tfrecord"]) == 1
    report = capsys.readouterr().out
    assert f"{base}/bad.tfrecord" in report and "byte offset 198" in report


def read_bytes(url: str) -> bytes:
    with fs.open(url, "rb") as f:
        return f.read()
