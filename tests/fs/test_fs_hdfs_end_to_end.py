"""End to end on a real HDFS: Spark writes TFRecords to ``hdfs://``, TensorFlow reads them back
through tfrecord_io.tf (sharded N ways, compressed or not), Keras trains from them, reads survive
a dead DataNode, and Spark reads them back in exact index-based splits.

The cluster is the session ``hdfs`` fixture (2 DataNodes, replication 2, 1 MiB blocks); Spark
runs on two executor JVMs (``spark`` fixture) that write to it over Hadoop RPC.
"""

from __future__ import annotations

import collections
import os
import random
import uuid
from itertools import pairwise

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest
import tensorflow as tf

from tfrecord_io import fs, index, records
from tfrecord_io import spark as tfs
from tfrecord_io import tf as tfr
from tfrecord_io.fs.hdfs import HdfsReader
from tfrecord_io.fs.urls import split_root
from tfrecord_io.tf import chunks as tf_chunks
from tfrecord_io.tf import datasets as tf_datasets


@pytest.fixture(scope="module")
def sc(spark, hdfs):
    """The SparkContext, writing HDFS files with the cluster's replication (2, not 3)."""
    context = spark.sparkContext
    context._jsc.hadoopConfiguration().set("dfs.replication", "2")
    return context


def replication(hdfs, url: str) -> int:
    """The replication of an hdfs:// or webhdfs:// file of the test HDFS, as HDFS says."""
    import hdfs_native

    return hdfs_native.Client(hdfs.url).get_file_info(split_root(url)[1]).replication


def new_dir(hdfs, name: str) -> str:
    return f"{hdfs.url}/e2e/{name}-{uuid.uuid4().hex[:8]}"


def unique_records(n: int, seed: int, size: tuple[int, int] = (0, 2000)) -> list[bytes]:
    rnd = random.Random(seed)
    return [f"{seed}-{i}:".encode() + rnd.randbytes(rnd.randrange(*size)) for i in range(n)]


def read_all(ds: tf.data.Dataset) -> list[bytes]:
    return [bytes(r) for batch in ds.batch(2048) for r in batch.numpy().tolist()]


def read_shards(url: str, num_shards: int, **kwargs) -> list[list[bytes]]:
    return [
        read_all(tfr.dataset(url, num_shards=num_shards, shard_index=k, **kwargs))
        for k in range(num_shards)
    ]


def assert_each_record_once(shards: list[list[bytes]], written: list[bytes]) -> None:
    combined = [r for shard in shards for r in shard]
    assert len(combined) == len(written)
    assert collections.Counter(combined) == collections.Counter(written)
    seen: set[bytes] = set()
    for k, shard in enumerate(shards):
        assert not seen & set(shard), f"shard {k} repeats records of an earlier shard"
        seen |= set(shard)


@pytest.fixture(scope="module")
def spark_output(sc, hdfs):
    """Spark's output on HDFS: {"none": (url, records), "gzip": (url, records)}."""
    out = {}
    for seed, compression, parts in ((1, None, 5), (2, "gzip", 4)):
        recs = unique_records(4000, seed)
        url = new_dir(hdfs, f"spark-{compression or 'none'}")
        tfs.save_records(sc.parallelize(recs, parts), url, compression=compression)
        out[compression or "none"] = (url, recs)
    return out


# -- Spark -> HDFS -> tf.data ----------------------------------------------------------------


def test_spark_wrote_indexed_and_compressed_part_files(spark_output, hdfs):
    url, _ = spark_output["none"]
    names = sorted(u.rsplit("/", 1)[1] for u in fs.ls(url))
    assert names == sorted(
        ["_SUCCESS"]
        + [f"part-r-{i:05d}.tfrecord" for i in range(5)]
        + [f"_part-r-{i:05d}.tfrecord.tfindex" for i in range(5)]
    )
    assert tfr.list_files(url) == [f"{url}/part-r-{i:05d}.tfrecord" for i in range(5)]
    for f in tfr.list_files(url):
        assert index.load_index(f) is not None
        assert replication(hdfs, f) == 2
    gz_url, _ = spark_output["gzip"]
    assert tfr.list_files(gz_url) == [f"{gz_url}/part-r-{i:05d}.tfrecord.gz" for i in range(4)]


@pytest.mark.parametrize("compression", ["none", "gzip"])
@pytest.mark.parametrize("num_shards", [1, 2, 3])
def test_every_record_is_read_exactly_once(spark_output, compression, num_shards):
    url, written = spark_output[compression]
    shards = read_shards(url, num_shards)
    assert_each_record_once(shards, written)
    assert all(shards)
    if num_shards == 1:  # one reader sees the part files in order, each in its write order
        per_file = [list(records.read(f)) for f in tfr.list_files(url)]
        assert shards[0] == [r for f in per_file for r in f]


@pytest.mark.parametrize("num_shards", [2, 3])
def test_parallel_reads_and_webhdfs_urls(spark_output, hdfs, num_shards):
    url, written = spark_output["none"]
    web = url.replace(hdfs.url, hdfs.webhdfs_url)
    assert_each_record_once(read_shards(web, num_shards, num_parallel_reads=2), written)


@pytest.fixture(scope="module")
def big_file(sc, hdfs):
    """One indexed ~4 MB part file (4 HDFS blocks) of ~1 KB records, written by Spark."""
    recs = unique_records(4000, 3, size=(900, 1100))
    url = new_dir(hdfs, "big")
    tfs.save_records(sc.parallelize(recs, 1), url)
    return f"{url}/part-r-00000.tfrecord", recs


@pytest.mark.parametrize("url_kind", ["hdfs", "webhdfs"])
def test_three_shards_share_one_big_indexed_file(big_file, hdfs, url_kind):
    path, written = big_file
    if url_kind == "webhdfs":
        path = path.replace(hdfs.url, hdfs.webhdfs_url)
    plan = tfr.shard_plan(path, num_shards=3)
    ranges = [(p.start, p.end) for shard in plan for p in shard]
    size = fs.stat(path).size
    assert len(ranges) == 3 and ranges[0][0] == 0 and ranges[-1][1] == size
    assert all(a[1] == b[0] for a, b in pairwise(ranges))
    assert all(abs((end - start) - size / 3) < 1200 for start, end in ranges)
    shards = read_shards(path, 3)
    assert_each_record_once(shards, written)
    assert [r for s in shards for r in s] == written  # the ranges are consecutive
    assert all(abs(len(s) - len(written) / 3) < 10 for s in shards)


def test_spark_reads_the_big_file_back_in_exact_splits(sc, big_file):
    path, written = big_file
    rdd = tfs.load_records(
        sc, path, conf={"mapreduce.input.fileinputformat.split.maxsize": str(512 * 1024)}
    )
    assert rdd.getNumPartitions() >= 7
    parts = rdd.glom().collect()
    assert all(parts)
    assert [r for p in parts for r in p] == written


# -- Keras -----------------------------------------------------------------------------------


def test_keras_trains_from_examples_on_hdfs(sc, hdfs):
    url = new_dir(hdfs, "keras")

    def make_examples(indices):
        # Runs on the executors: nothing from this test module may be needed there.
        import numpy

        from tfrecord_io.example import encode_example

        for i in indices:
            rng = numpy.random.default_rng(i)
            x = rng.normal(size=8).astype(numpy.float32)
            yield encode_example({"x": x, "y": int(x[:4].sum() > 0), "id": i})

    tfs.save_records(sc.parallelize(range(3000), 3).mapPartitions(make_examples), url)

    records_ds = tfr.dataset(url)
    features = tfr.infer_features(records_ds)
    assert features == {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([8], tf.float32),
        "y": tf.io.FixedLenFeature([], tf.int64),
    }
    train = (
        tfr.parse_examples(records_ds, batch_size=64)
        .map(lambda f: (f["x"], f["y"]))
        .repeat()
        .prefetch(2)
    )
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    history = model.fit(train, steps_per_epoch=20, epochs=3, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert len(losses) == 3 and all(np.isfinite(losses))
    assert losses[-1] < losses[0]

    # Two workers, each training on its own shard, together see every example once.
    ids = []
    for k in range(2):
        shard = tfr.parse_examples(tfr.dataset(url, num_shards=2, shard_index=k), batch_size=500)
        ids.append([int(i) for batch in shard for i in batch["id"].numpy()])
    assert sorted(ids[0] + ids[1]) == list(range(3000))
    assert ids[0] and ids[1]


# -- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scheme, victim, reader",
    [
        ("hdfs", 0, "tensorflow"),
        ("hdfs", 1, "tensorflow"),
        ("webhdfs", 0, "tensorflow"),
        ("hdfs", 0, "python"),
        ("webhdfs", 1, "python"),
    ],
)
def test_reading_survives_a_datanode_stopped_mid_read(
    sc, hdfs, scheme, victim, reader, monkeypatch
):
    # ~8 MB, 8 blocks; ~24 MB through TensorFlow, whose plugin fetches 4 MiB at a time, so that
    # the first 200 records are still well before the middle of the file.
    count = 24000 if reader == "tensorflow" else 8000
    recs = unique_records(count, 10 + victim, size=(900, 1100))
    url = new_dir(hdfs, f"dn-{scheme}-{victim}-{reader}")
    tfs.save_records(sc.parallelize(recs, 1), url)
    path = f"{url}/part-r-00000.tfrecord"
    if scheme == "webhdfs":
        path = path.replace(hdfs.url, hdfs.webhdfs_url)
    assert replication(hdfs, path) == 2

    fetched = [0]  # bytes read from HDFS so far
    if reader == "tensorflow":
        # TensorFlow reads through the plugin, with a small buffer (the plugin's chunk then sets
        # what is fetched at a time), so the read is really cut.
        readinto = HdfsReader.readinto

        def counting_readinto(self, b):
            n = readinto(self, b)
            fetched[0] += n
            return n

        monkeypatch.setattr(HdfsReader, "readinto", counting_readinto)
        monkeypatch.setattr(tf_datasets, "_python_dataset", None)  # must not be used
        ds = tfr.dataset(path, buffer_size=128 * 1024)
    else:
        open_piece = tf_chunks._open_piece

        def counting_open_piece(piece, stack):
            stream = open_piece(piece, stack)
            read = stream.read

            class Counting:
                def read(self, n=-1):
                    data = read(n)
                    fetched[0] += len(data)
                    return data

            return Counting()

        monkeypatch.setattr(tf_chunks, "_open_piece", counting_open_piece)
        # small chunks, so that little is read ahead of the records taken
        ds = tfr.dataset(path, reader="python", chunk_bytes=128 * 1024)
    size = fs.stat(path).size
    got: list[bytes] = []
    iterator = iter(ds)
    stopped = False
    try:
        for _ in range(200):
            got.append(next(iterator).numpy())
        hdfs.stop_datanode(victim)
        stopped = True
        assert 0 < fetched[0] < size / 2  # the read really is in the middle of the file

        got.extend(r.numpy() for r in iterator)
    finally:
        if stopped:
            hdfs.restart_datanode(victim)
    assert got == recs
