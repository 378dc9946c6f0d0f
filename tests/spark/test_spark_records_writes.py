"""Edge cases of the Hadoop write path through real Spark executors: what TensorFlow and this
library's readers make of the files that save_records writes."""

from __future__ import annotations

import pytest
import tensorflow as tf

from tfrecord_io import records
from tfrecord_io import spark as tfs


def tf_read(path: str, compression: str) -> list[bytes]:
    return [r.numpy() for r in tf.data.TFRecordDataset([path], compression_type=compression)]


@pytest.mark.parametrize("compression,tf_type", [("gzip", "GZIP"), ("zlib", "ZLIB")])
def test_compressed_files_of_empty_partitions_read_as_no_records(sc, tmp_path, compression,
                                                                 tf_type):
    out = tmp_path / "out"
    tfs.save_records(sc.parallelize([b"a", b"b"], 4), str(out), compression=compression)
    files = sorted(p for p in out.iterdir() if p.name.startswith("part-"))
    assert len(files) == 4
    by_tf = {p.name: tf_read(str(p), tf_type) for p in files}
    by_python = {p.name: list(records.read(str(p))) for p in files}
    assert by_tf == by_python
    assert sorted(r for rs in by_tf.values() for r in rs) == [b"a", b"b"]
    assert sorted(len(rs) for rs in by_tf.values()) == [0, 0, 1, 1]
    assert sorted(tfs.load_records(sc, str(out)).collect()) == [b"a", b"b"]
