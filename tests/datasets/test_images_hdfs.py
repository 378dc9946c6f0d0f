"""tfrecord_io.datasets.images with the tree and the output on the test HDFS: the same records
as from the local tree, and the same damage handling."""

from __future__ import annotations

import uuid

import pytest

from tfrecord_io import fs, records
from tfrecord_io.datasets import images
from tfrecord_io.errors import DamagedImageError


@pytest.fixture(scope="module")
def hdfs_tree(hdfs, mnist_png_tree):
    """The first 20 files of each class of the MNIST PNG tree, uploaded to the test HDFS; the
    URL of the directory holding them as ``tree``."""
    base = f"{hdfs.url}/images/{uuid.uuid4().hex[:8]}"
    for path in [p for d in range(10) for p in sorted((mnist_png_tree / str(d)).iterdir())[:20]]:
        with fs.open(f"{base}/tree/{path.parent.name}/{path.name}", "wb") as f:
            f.write(path.read_bytes())
    return base


def test_a_tree_on_hdfs_converts_to_hdfs_as_the_same_tree_does_locally(hdfs_tree, tmp_path):
    local_tree = tmp_path / "tree"
    for directory, _, names in fs.walk(f"{hdfs_tree}/tree"):
        for name in names:
            target = local_tree / directory.rstrip("/").rsplit("/", 1)[1] / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(fs.open(f"{directory}/{name}").read())
    options = {"shards": 2, "validation_fraction": 0.3}
    remote = images.convert(f"{hdfs_tree}/tree", f"{hdfs_tree}/out", **options)
    local = images.convert(local_tree, tmp_path / "out", **options)
    assert remote.records == local.records and sum(remote.records.values()) == 200
    for name in local.shards:
        assert [list(records.read(p)) for p in remote.shards[name]] == [
            list(records.read(p)) for p in local.shards[name]]
    assert images.read_label_file(f"{hdfs_tree}/out") == {d: str(d) for d in range(10)}
    assert not [u for u in fs.ls(f"{hdfs_tree}/out") if "tmp" in u]


def test_a_damaged_file_on_hdfs_is_named_by_its_url(hdfs_tree):
    bad = f"{hdfs_tree}/tree/3/zz-cut.png"
    with fs.open(f"{hdfs_tree}/tree/3/{fs.ls(f'{hdfs_tree}/tree/3')[0].rsplit('/', 1)[1]}") as f:
        data = f.read()
    with fs.open(bad, "wb") as f:
        f.write(data[:50])
    try:
        with pytest.raises(DamagedImageError, match=f"^{bad}: "):
            images.convert(f"{hdfs_tree}/tree", f"{hdfs_tree}/failed")
        assert not fs.exists(f"{hdfs_tree}/failed")
        skipped = images.convert(f"{hdfs_tree}/tree", f"{hdfs_tree}/skipped", on_corrupt="skip")
        assert [p for p, _ in skipped.skipped] == ["3/zz-cut.png"]
    finally:
        fs.delete(bad)
