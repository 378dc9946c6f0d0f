"""tfrecord_io.tf: tf.data datasets of TFRecord files on local disk and on HDFS, sharding,
and Example parsing. (Spark-written data on HDFS: tests/test_hdfs_end_to_end.py.)"""

from __future__ import annotations

import collections
import errno
import gzip
import logging
import os
import random
import subprocess
import sys
import time
import uuid
from itertools import pairwise
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest
import tensorflow as tf

from tfrecord_io import example, fs, index, records
from tfrecord_io import tf as tfr
from tfrecord_io.errors import HdfsError, HdfsFileNotFoundError, SchemaError, TFRecordError

ROOT = Path(__file__).resolve().parents[2]


def unique_records(n: int, tag: str = "r", seed: int = 0, max_size: int = 300) -> list[bytes]:
    """Distinct records: a unique prefix, then random bytes of random length."""
    rnd = random.Random(seed)
    return [f"{tag}{i}:".encode() + rnd.randbytes(rnd.randrange(0, max_size)) for i in range(n)]


def read_all(ds: tf.data.Dataset) -> list[bytes]:
    return [bytes(r) for batch in ds.batch(4096) for r in batch.numpy().tolist()]


def write_shards(directory: Path, recs: list[bytes], n: int, suffix: str = ".tfrecord") -> list:
    """Write recs round-robin into n part files (indexed when uncompressed)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = str(directory / f"part-r-{i:05d}{suffix}")
        records.write(path, recs[i::n])
        paths.append(path)
    return paths


def assert_exactly_once(paths, expected: list[bytes], num_shards: int, **kwargs) -> list:
    shards = [
        read_all(tfr.dataset(paths, num_shards=num_shards, shard_index=k, **kwargs))
        for k in range(num_shards)
    ]
    combined = [r for shard in shards for r in shard]
    assert collections.Counter(combined) == collections.Counter(expected)
    for a in range(num_shards):
        for b in range(a + 1, num_shards):
            assert not set(shards[a]) & set(shards[b]), (a, b)
    return shards


# -- inputs ----------------------------------------------------------------------------------


def test_single_file_reads_every_record_in_order(tmp_path):
    recs = unique_records(500)
    path = str(tmp_path / "data.tfrecord")
    records.write(path, recs)
    ds = tfr.dataset(path)
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert read_all(ds) == recs


def test_pathlib_and_file_url(tmp_path):
    recs = unique_records(10)
    path = tmp_path / "data.tfrecord"
    records.write(str(path), recs)
    assert read_all(tfr.dataset(path)) == recs
    assert read_all(tfr.dataset(path.as_uri())) == recs


def test_directory_reads_its_part_files_in_order_skipping_hidden(tmp_path):
    recs = unique_records(300)
    out = tmp_path / "out"
    paths = write_shards(out, recs, 3)
    (out / "_SUCCESS").write_bytes(b"")
    (out / ".part-r-00000.tfrecord.crc").write_bytes(b"not a tfrecord")
    (out / "_temporary").mkdir()
    (out / "_temporary" / "part-r-00009.tfrecord").write_bytes(b"junk")
    assert tfr.list_files(str(out)) == paths
    expected = [r for p in paths for r in records.read(p)]
    assert read_all(tfr.dataset(str(out))) == expected


def test_directories_are_read_recursively(tmp_path):
    recs = unique_records(40)
    write_shards(tmp_path / "d" / "year=2024", recs[:20], 2)
    write_shards(tmp_path / "d" / "year=2025", recs[20:], 2)
    files = tfr.list_files(str(tmp_path / "d"))
    assert [Path(f).parent.name for f in files] == ["year=2024"] * 2 + ["year=2025"] * 2
    assert sorted(read_all(tfr.dataset(str(tmp_path / "d")))) == sorted(recs)


def test_globs_and_lists_are_sorted_and_deduplicated(tmp_path):
    recs = unique_records(100)
    paths = write_shards(tmp_path / "out", recs, 4)
    pattern = str(tmp_path / "out" / "part-*")
    assert tfr.list_files(pattern) == paths  # the _*.tfindex files are not matched
    assert tfr.list_files([paths[3], pattern, paths[0]]) == paths
    assert sorted(read_all(tfr.dataset([pattern, paths[1]]))) == sorted(recs)
    assert tfr.list_files(str(tmp_path / "out" / "part-r-0000[13].tfrecord")) == [
        paths[1],
        paths[3],
    ]


def test_explicit_hidden_file_is_accepted(tmp_path):
    path = str(tmp_path / "_special.tfrecord")
    records.write(path, [b"a"])
    assert read_all(tfr.dataset(path)) == [b"a"]


def test_missing_path_fails_at_once_with_a_clear_error(tmp_path):
    missing = str(tmp_path / "nope")
    t0 = time.monotonic()
    with pytest.raises(tfr.InputNotFoundError, match="no such file or directory") as err:
        tfr.dataset(missing)
    assert time.monotonic() - t0 < 5
    assert missing in str(err.value)
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, TFRecordError)
    with pytest.raises(tfr.InputNotFoundError, match="no file matches"):
        tfr.dataset(str(tmp_path / "part-*"))


def test_empty_directory_gives_an_empty_dataset(tmp_path, caplog):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_SUCCESS").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.tf"):
        ds = tfr.dataset(str(tmp_path / "empty"))
    assert read_all(ds) == []
    assert "holds no data files" in caplog.text


def test_bad_arguments(tmp_path):
    path = str(tmp_path / "d.tfrecord")
    records.write(path, [b"x"])
    for kwargs in (
        {"num_shards": 0},
        {"num_shards": 2, "shard_index": 2},
        {"shard_index": -1},
        {"num_shards": 2.0},
        {"compression": "bzip2"},
        {"reader": "java"},
        {"on_corrupt": "ignore"},
        {"num_parallel_reads": 0},
        {"chunk_bytes": 0},
    ):
        with pytest.raises(ValueError):
            tfr.dataset(path, **kwargs)
    with pytest.raises(ValueError, match="unsupported URL scheme"):
        tfr.dataset("ftp://host/x")
    with pytest.raises(ValueError):
        tfr.dataset([])


# -- compression -----------------------------------------------------------------------------


def test_compression_is_detected_per_file_from_its_name(tmp_path):
    recs = unique_records(300)
    out = tmp_path / "mixed"
    out.mkdir()
    records.write(str(out / "part-0.tfrecord"), recs[:100])
    records.write(str(out / "part-1.tfrecord.gz"), recs[100:200])
    records.write(str(out / "part-2.tfrecord.deflate"), recs[200:])
    assert read_all(tfr.dataset(str(out))) == recs
    assert read_all(tfr.dataset(str(out), reader="python")) == recs
    assert sorted(read_all(tfr.dataset(str(out), num_parallel_reads=3))) == sorted(recs)


@pytest.mark.parametrize("name", ["GZIP", "gzip", "ZLIB"])
def test_explicit_compression_applies_to_every_file(tmp_path, name):
    recs = unique_records(50)
    path = str(tmp_path / "no-suffix")
    records.write(path, recs, compression=name)
    assert read_all(tfr.dataset(path, compression=name)) == recs
    assert read_all(tfr.dataset(path, compression=name, reader="python")) == recs


def test_reads_tensorflow_written_gzip_files(tmp_path):
    recs = unique_records(100)
    path = str(tmp_path / "tf.tfrecord.gz")
    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type="GZIP")) as w:
        for r in recs:
            w.write(r)
    assert gzip.decompress(Path(path).read_bytes())  # really gzip
    assert read_all(tfr.dataset(path)) == recs
    assert read_all(tfr.dataset(path, reader="python")) == recs


# -- readers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_bytes", [13, 100, 1000, 65536, 4 << 20])
def test_python_reader_equals_tensorflow_reader(tmp_path, chunk_bytes):
    recs = unique_records(1000, max_size=3000) + [b""] * 3 + [os.urandom(100_000)]
    paths = write_shards(tmp_path / "out", recs, 3)
    native = read_all(tfr.dataset(paths))
    ours = read_all(tfr.dataset(paths, reader="python", chunk_bytes=chunk_bytes))
    assert ours == native == [r for p in paths for r in records.read(p)]
    # byte ranges too, at every cut the index allows for 7 pieces
    plan = tfr.shard_plan(paths[0], num_shards=7)
    for k, (piece,) in enumerate(plan):
        ds = tfr.dataset(paths[0], num_shards=7, shard_index=k, chunk_bytes=chunk_bytes)
        assert read_all(ds) == list(records.read(paths[0], start=piece.start, end=piece.end))


def test_parallel_reads_interleave_deterministically(tmp_path):
    recs = unique_records(4000)
    paths = write_shards(tmp_path / "out", recs, 4)
    for reader in ("auto", "python"):
        # (tfrecord-io's reader interleaves by chunks: small ones here, to see it)
        options = {"num_parallel_reads": 4, "reader": reader, "chunk_bytes": 20_000}
        first = read_all(tfr.dataset(paths, **options))
        assert sorted(first) == sorted(recs)
        assert first != [r for p in paths for r in records.read(p)]  # really interleaved
        assert read_all(tfr.dataset(paths, **options)) == first


def test_corrupt_record_fails_or_is_skipped(tmp_path, caplog):
    recs = unique_records(200, max_size=50)
    path = str(tmp_path / "bad.tfrecord")
    records.write(path, recs)
    entries = index.read_index(index.index_path(path))
    data = bytearray(Path(path).read_bytes())
    offset = entries[100][0]
    data[offset + 14] ^= 0xFF  # inside record 100's data
    Path(path).write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        read_all(tfr.dataset(path))
    with pytest.raises(tf.errors.OpError, match="corrupt TFRecord"):
        read_all(tfr.dataset(path, reader="python"))
    with caplog.at_level(logging.WARNING):
        got = read_all(tfr.dataset(path, on_corrupt="skip"))
    assert got == recs[:100] + recs[101:]
    # verify=False does not look at the data CRC
    assert read_all(tfr.dataset(path, reader="python", verify=False))[100] != recs[100]
    # a byte range that holds the damage fails, the others read
    plan = tfr.shard_plan(path, num_shards=4)
    bad = [k for k, (p,) in enumerate(plan) if p.start <= offset < p.end]
    for k in range(4):
        ds = tfr.dataset(path, num_shards=4, shard_index=k)
        if k in bad:
            with pytest.raises(tf.errors.OpError, match=f"byte offset {offset}: data checksum"):
                read_all(ds)
        else:
            piece = plan[k][0]
            assert read_all(ds) == list(records.read(path, start=piece.start, end=piece.end))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d[:-3], "truncated record: the file ends inside the data checksum"),
        (lambda d: d[:-500], "truncated record: .* data bytes announced"),
        (lambda d: d + b"\x01\x02", "truncated record: the file ends 2 bytes into its header"),
        (lambda d: d[:9] + bytes([d[9] ^ 0xFF]) + d[10:], "offset 0: length checksum mismatch"),
    ],
)
def test_damage_found_by_the_python_reader_names_file_and_offset(tmp_path, damage, message):
    path = str(tmp_path / "bad.tfrecord")
    records.write(path, unique_records(20, max_size=400), index=False)
    Path(path).write_bytes(damage(Path(path).read_bytes()))
    with pytest.raises(tf.errors.OpError, match=message) as err:
        read_all(tfr.dataset(path, reader="python"))
    assert path in str(err.value)
    with pytest.raises(Exception, match=message.split(":")[0]):
        list(records.read(path))  # the same verdict as RecordReader


def test_damaged_gzip_stream_is_reported(tmp_path):
    path = str(tmp_path / "bad.tfrecord.gz")
    records.write(path, unique_records(2000))
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    with pytest.raises(tf.errors.OpError, match="damaged gzip stream|truncated"):
        read_all(tfr.dataset(path, reader="python"))


def test_a_read_error_mid_file_names_file_and_offset_through_prefetch(tmp_path, monkeypatch):
    path = str(tmp_path / "data.tfrecord")
    records.write(path, [b"r" * 84] * 1000, index=False)  # frames of 100 bytes
    real_open = fs.open

    def failing_open(url, mode="rb"):
        stream = real_open(url, mode)
        read = stream.read

        def read_until_45000(size=-1):
            if stream.tell() >= 45_000:
                raise OSError(errno.EIO, "Input/output error")
            return read(min(size, 45_000 - stream.tell()))

        stream.read = read_until_45000
        return stream

    monkeypatch.setattr(fs, "open", failing_open)
    ds = tfr.dataset(path, reader="python", chunk_bytes=10_000).prefetch(tf.data.AUTOTUNE)
    with pytest.raises(tf.errors.OpError, match="Input/output error") as failed:
        read_all(ds)
    assert f"while reading {path}: the record at byte offset 45000" in str(failed.value)


# -- sharding --------------------------------------------------------------------------------


@pytest.mark.parametrize("num_shards", [1, 2, 3, 4, 5, 7])
def test_many_files_are_dealt_whole(tmp_path, num_shards):
    recs = unique_records(700)
    paths = write_shards(tmp_path / "out", recs, 7)
    plan = tfr.shard_plan(paths, num_shards=num_shards)
    assert len(plan) == num_shards
    assert all(p.whole for shard in plan for p in shard)
    assert sorted(p.path for shard in plan for p in shard) == paths
    shards = assert_exactly_once(str(tmp_path / "out"), recs, num_shards)
    assert all(shards)


def test_whole_files_are_balanced_by_size(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    sizes = {"a": 100, "b": 10, "c": 60, "d": 50, "e": 5}
    for name, n in sizes.items():
        records.write(str(out / name), [b"x" * 1000] * n)
    plan = tfr.shard_plan(str(out), num_shards=2)
    names = [[Path(p.path).name for p in shard] for shard in plan]
    # largest first, each to the lighter shard: a->0, c->1, d->1, b->0, e->0
    assert names == [["a", "b", "e"], ["c", "d"]]


@pytest.mark.parametrize("num_shards", [2, 3, 4, 10])
def test_one_indexed_file_is_shared_by_byte_ranges(tmp_path, num_shards):
    recs = unique_records(1000)
    path = str(tmp_path / "big.tfrecord")
    records.write(path, recs)
    plan = tfr.shard_plan(path, num_shards=num_shards)
    ranges = [(p.start, p.end) for shard in plan for p in shard]
    assert len(ranges) == num_shards and all(len(shard) == 1 for shard in plan)
    size = os.path.getsize(path)
    assert ranges[0][0] == 0 and ranges[-1][1] == size
    assert all(a[1] == b[0] for a, b in pairwise(ranges))  # contiguous, disjoint
    assert max(e - s for s, e in ranges) < 1.2 * size / num_shards + 400
    shards = assert_exactly_once(path, recs, num_shards)
    assert [r for shard in shards for r in shard] == recs  # in order, shard after shard


def test_few_files_are_cut_where_largest(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    big = unique_records(900, "big")
    small = unique_records(100, "small")
    records.write(str(out / "part-0"), big)
    records.write(str(out / "part-1"), small)
    plan = tfr.shard_plan(str(out), num_shards=4)
    kinds = [[(Path(p.path).name, p.whole) for p in shard] for shard in plan]
    assert kinds == [[("part-0", False)]] * 3 + [[("part-1", True)]]
    assert_exactly_once(str(out), big + small, 4)


def test_compressed_and_unindexed_files_stay_whole(tmp_path, caplog):
    recs = unique_records(300)
    out = tmp_path / "out"
    out.mkdir()
    records.write(str(out / "part-0.tfrecord.gz"), recs[:100])
    records.write(str(out / "part-1.tfrecord"), recs[100:200], index=False)
    records.write(str(out / "part-2.tfrecord"), recs[200:])
    plan = tfr.shard_plan(str(out), num_shards=5)
    pieces = [p for shard in plan for p in shard]
    assert [(Path(p.path).name, p.whole) for p in pieces] == [
        ("part-0.tfrecord.gz", True),
        ("part-1.tfrecord", True),
        ("part-2.tfrecord", False),
        ("part-2.tfrecord", False),
        ("part-2.tfrecord", False),
    ]
    assert_exactly_once(str(out), recs, 5)


def test_stale_index_is_not_used_for_cutting(tmp_path, caplog):
    recs = unique_records(100)
    path = str(tmp_path / "data.tfrecord")
    records.write(path, recs)
    with open(path, "ab") as f:  # the index no longer describes the file
        f.write(Path(path).read_bytes()[:100])
    with caplog.at_level(logging.WARNING):
        plan = tfr.shard_plan(path, num_shards=2)
    assert plan[0][0].whole and plan[1] == []
    assert "stale index" in caplog.text


def test_more_shards_than_pieces_leaves_empty_shards(tmp_path, caplog):
    recs = unique_records(3)
    path = str(tmp_path / "tiny.tfrecord")
    records.write(path, recs)
    plan = tfr.shard_plan(path, num_shards=5)
    assert [len(s) for s in plan] == [1, 1, 1, 0, 0]
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.tf"):
        ds = tfr.dataset(path, num_shards=5, shard_index=4)
    assert read_all(ds) == []
    assert "gets no data" in caplog.text
    assert_exactly_once(path, recs, 5)


@pytest.mark.parametrize("reader", ["auto", "python"])
def test_a_sharded_dataset_is_not_sharded_again_by_tf_distribute(tmp_path, reader):
    # tf.distribute's experimental_distribute_dataset shards every dataset again, by files or
    # by elements, unless its options say OFF: each worker would keep 1/N of its 1/N.
    from tensorflow.python.data.experimental.ops.distribute import _AutoShardDataset

    recs = unique_records(400)
    paths = write_shards(tmp_path / "out", recs, 4)
    for k in range(2):
        ds = tfr.dataset(paths, num_shards=2, shard_index=k, reader=reader)
        policy = ds.options().experimental_distribute.auto_shard_policy
        assert policy == tf.data.experimental.AutoShardPolicy.OFF
        assert read_all(_AutoShardDataset(ds, num_workers=2, index=k)) == read_all(ds)


def test_an_unsharded_dataset_keeps_tf_distribute_auto_sharding(tmp_path):
    paths = write_shards(tmp_path / "out", unique_records(40), 4)
    ds = tfr.dataset(paths)
    policy = ds.options().experimental_distribute.auto_shard_policy
    assert policy == tf.data.experimental.AutoShardPolicy.AUTO


def test_plan_is_deterministic_and_depends_only_on_the_listing(tmp_path):
    recs = unique_records(2000)
    paths = write_shards(tmp_path / "out", recs, 3)
    a = tfr.shard_plan(str(tmp_path / "out"), num_shards=8)
    b = tfr.shard_plan(list(reversed(paths)), num_shards=8)
    assert a == b
    # in another process too
    code = (
        "import sys, json; from tfrecord_io import tf as t; "
        "print(json.dumps([[(p.path, p.start, p.end) for p in s] "
        "for s in t.shard_plan(sys.argv[1], num_shards=8)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout
    import json

    assert json.loads(out) == [[[p.path, p.start, p.end] for p in s] for s in a]


def test_shards_of_mixed_inputs_read_everything_once(tmp_path):
    recs = unique_records(3000, max_size=600)
    out = tmp_path / "out"
    out.mkdir()
    records.write(str(out / "a.tfrecord"), recs[:1500])
    records.write(str(out / "b.tfrecord.gz"), recs[1500:2000])
    records.write(str(out / "c.tfrecord"), recs[2000:], index=False)
    for n in range(1, 9):
        assert_exactly_once(str(out), recs, n)
        assert_exactly_once(str(out), recs, n, reader="python", num_parallel_reads=2)


def test_tensorflow_is_imported_only_by_the_tf_module():
    code = (
        "import sys\n"
        "import tfrecord_io, tfrecord_io.records, tfrecord_io.index, tfrecord_io.example\n"
        "import tfrecord_io.fs.hdfs, tfrecord_io.spark, tfrecord_io.tf\n"
        "from tfrecord_io import tf as t\n"
        "t.shard_plan(sys.argv[1])\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, __file__],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


# -- Example parsing -------------------------------------------------------------------------


def example_records(n: int = 50) -> list[bytes]:
    rnd = random.Random(3)
    out = []
    for i in range(n):
        feats = {
            "id": i,
            "score": i / 2,
            "vec": np.arange(4, dtype=np.float32) + i,
            "label": f"l{i % 3}",
            "tokens": list(range(i % 5)),  # varying length, sometimes empty
            "blob": rnd.randbytes(3),
        }
        if i % 2:
            feats["sometimes"] = i
        out.append(example.encode_example(feats))
    return out


def test_infer_features_from_a_dataset(tmp_path):
    path = str(tmp_path / "ex.tfrecord")
    records.write(path, example_records())
    spec = tfr.infer_features(tfr.dataset(path))
    assert spec == {
        "blob": tf.io.FixedLenFeature([], tf.string),
        "id": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.string),
        "score": tf.io.FixedLenFeature([], tf.float32),
        "sometimes": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
        "tokens": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
        "vec": tf.io.FixedLenFeature([4], tf.float32),
    }
    # a sample sees only what it holds: record 0 lacks "sometimes", record 3 has 3 tokens
    small = tfr.infer_features(example_records()[3:4], sample=1)
    assert "sometimes" in small and "sometimes" not in tfr.infer_features(example_records()[:1])
    assert small["tokens"] == tf.io.FixedLenFeature([3], tf.int64)


def test_parse_examples_one_by_one_and_batched(tmp_path):
    recs = example_records()
    path = str(tmp_path / "ex.tfrecord")
    records.write(path, recs)
    single = list(tfr.parse_examples(tfr.dataset(path)))
    assert len(single) == 50
    assert int(single[7]["id"]) == 7
    assert single[7]["vec"].numpy().tolist() == [7, 8, 9, 10]
    assert single[7]["tokens"].numpy().tolist() == [0, 1]
    assert single[7]["sometimes"].numpy().tolist() == [7]
    assert single[8]["sometimes"].numpy().tolist() == []
    assert single[4]["label"].numpy() == b"l1"
    batches = list(tfr.parse_examples(tfr.dataset(path), batch_size=16))
    assert [int(b["id"].shape[0]) for b in batches] == [16, 16, 16, 2]
    assert batches[0]["vec"].shape == (16, 4)
    assert isinstance(batches[0]["tokens"], tf.RaggedTensor)
    assert batches[0]["tokens"][7].numpy().tolist() == [0, 1]
    assert np.allclose(batches[1]["score"].numpy(), np.arange(16, 32) / 2)
    dropped = list(tfr.parse_examples(tfr.dataset(path), batch_size=16, drop_remainder=True))
    assert len(dropped) == 3


def test_parse_examples_with_an_explicit_spec(tmp_path):
    path = str(tmp_path / "ex.tfrecord")
    records.write(path, example_records())
    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "tokens": tf.io.VarLenFeature(tf.int64)}
    first = next(iter(tfr.parse_examples(tfr.dataset(path), spec, batch_size=8)))
    assert set(first) == {"id", "tokens"}
    assert isinstance(first["tokens"], tf.SparseTensor)


def test_parse_examples_needs_records_to_infer(tmp_path):
    path = str(tmp_path / "empty.tfrecord")
    records.write(path, [])
    with pytest.raises(SchemaError, match="no records"):
        tfr.parse_examples(tfr.dataset(path))
    with pytest.raises(SchemaError):
        tfr.infer_features([b"\xff\xff not an example"])


def test_features_with_conflicting_kinds_are_an_error():
    recs = [example.encode_example({"x": 1}), example.encode_example({"x": 1.5})]
    with pytest.raises(SchemaError, match="x"):
        tfr.infer_features(recs)


# -- HDFS ------------------------------------------------------------------------------------


@pytest.fixture()
def hdfs_dir(hdfs, request):
    return f"{hdfs.url}/tf-dataset/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("scheme", ["hdfs", "webhdfs"])
def test_reads_a_directory_of_shards_on_hdfs(hdfs, scheme):
    recs = unique_records(3000, max_size=2000)
    root = hdfs.url if scheme == "hdfs" else hdfs.webhdfs_url
    base = f"{root}/tf-dataset/dir-{scheme}-{uuid.uuid4().hex[:8]}"
    paths = [f"{base}/part-r-{i:05d}.tfrecord" for i in range(3)]
    for i, p in enumerate(paths):
        records.write(p, recs[i::3], index=True)
    records.write(f"{base}/part-r-00003.tfrecord.gz", [b"gz1", b"gz2"])
    records.write(f"{base}/_SUCCESS", [])
    files = tfr.list_files(base)
    assert files == paths + [f"{base}/part-r-00003.tfrecord.gz"]
    assert tfr.list_files(f"{base}/part-*.tfrecord") == paths
    expected = [r for i in range(3) for r in recs[i::3]] + [b"gz1", b"gz2"]
    assert read_all(tfr.dataset(base)) == expected
    for n in (2, 5, 9):
        assert_exactly_once(base, expected, n)
    # a file of 3 x ~1 MB blocks cut among 5 shards reads from byte ranges on HDFS
    plan = tfr.shard_plan(paths[0], num_shards=5)
    assert all(not p.whole for s in plan for p in s)


def test_missing_hdfs_paths_fail_at_once(hdfs, hdfs_dir):
    t0 = time.monotonic()
    with pytest.raises(HdfsFileNotFoundError) as err:
        tfr.dataset(f"{hdfs_dir}/missing")
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, HdfsError)
    assert f"{hdfs_dir}/missing" in str(err.value)
    with pytest.raises(tfr.InputNotFoundError, match="no file matches"):
        tfr.dataset(f"{hdfs_dir}/part-*")
    assert time.monotonic() - t0 < 10
