"""Where the tests' real data lives, for ``conftest.py`` and the tests alike (a test module
cannot import ``conftest``: several conftest modules share that name)."""

from __future__ import annotations

from pathlib import Path

#: The real MNIST test set (IDX files; see its README.md), beside the project.
MNIST = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
#: How many MNIST test images the PNG tree fixture ``mnist_png_tree`` holds (a prefix of the
#: set: enough for every class to have about 100, quick to write and convert).
MNIST_PNG_LIMIT = 1000


def write_record_shards(base: str, sizes: list[int]) -> list[str]:
    """Writes shard *i* of records ``file{i}-record{j:03d}`` (``sizes[i]`` of them) to
    ``base/part-{i:05d}.tfrecord`` (any URL ``tfrecord_io.records`` writes: ``hdfs://``...);
    returns every record written, as ``str``, in order."""
    from tfrecord_io import records

    expected = []
    for i, n in enumerate(sizes):
        recs = [f"file{i}-record{j:03d}" for j in range(n)]
        records.write(f"{base}/part-{i:05d}.tfrecord", [r.encode() for r in recs])
        expected += recs
    return expected
