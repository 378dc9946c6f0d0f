"""The tfrecord-io command line: MNIST conversion of generated IDX files (every error case),
and every inspection command on good and damaged files. No TensorFlow here (see
test_cli_mnist.py for the real data set read back with TensorFlow)."""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from tfrecord_io import cli, framing, records
from tfrecord_io.datasets import mnist
from tfrecord_io.example import decode_example, encode_example, encode_sequence_example
from tfrecord_io.index import index_path, read_index

ROOT = Path(__file__).resolve().parents[2]


# -- helpers ---------------------------------------------------------------------------------


def idx_bytes(array: np.ndarray, magic: int | None = None) -> bytes:
    """An IDX file of uint8 data, written out from the format description."""
    if magic is None:
        magic = 0x0800 | array.ndim
    return struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.astype(np.uint8).tobytes()


def make_set(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n, dtype=np.uint8)


def put(path: Path, data: bytes, compress: bool = False) -> None:
    path.write_bytes(gzip.compress(data) if compress else data)


@pytest.fixture
def sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(5)
    return {"train": make_set(rng, 30), "test": make_set(rng, 20)}


@pytest.fixture
def idx_dir(tmp_path, sets) -> Path:
    """Both sets: train uncompressed, test gzipped."""
    d = tmp_path / "idx"
    d.mkdir()
    images, labels = sets["train"]
    put(d / "train-images-idx3-ubyte", idx_bytes(images))
    put(d / "train-labels-idx1-ubyte", idx_bytes(labels))
    images, labels = sets["test"]
    put(d / "t10k-images-idx3-ubyte.gz", idx_bytes(images), compress=True)
    put(d / "t10k-labels-idx1-ubyte.gz", idx_bytes(labels), compress=True)
    return d


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def read_set(directory: Path, compression: str | None = None) -> list[dict]:
    files = sorted(directory.glob("part-r-*"))
    return [decode_example(r) for f in files for r in records.read(f, compression)]


def cli_subprocess(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "tfrecord_io.cli", *map(str, argv)],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
    )


# -- mnist: conversion -----------------------------------------------------------------------


def test_mnist_writes_both_sets_as_ordered_indexed_shards(capsys, idx_dir, tmp_path, sets):
    out = tmp_path / "out"
    status, stdout, _ = run(capsys, "mnist", idx_dir, out, "--shards", "3")
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == ["test", "train"]
    for name, (images, labels) in sets.items():
        assert sorted(p.name for p in (out / name).iterdir()) == sorted(
            ["_SUCCESS"]
            + [f"part-r-0000{k}.tfrecord" for k in range(3)]
            + [f"_part-r-0000{k}.tfrecord.tfindex" for k in range(3)]
        )
        # Shard k holds a contiguous range: shard order is data set order.
        counts = [len(list(records.read(p))) for p in sorted((out / name).glob("part-*"))]
        n = len(labels)
        assert counts == [(k + 1) * n // 3 - k * n // 3 for k in range(3)]
        decoded = read_set(out / name)
        assert [d["label"] for d in decoded] == [[int(x)] for x in labels]
        assert [d["image"] for d in decoded] == images.reshape(n, 784).tolist()
        assert {(d["height"][0], d["width"][0]) for d in decoded} == {(28, 28)}
        for part in (out / name).glob("part-*"):  # every shard has a valid index
            assert read_index(index_path(part))
    assert stdout.count("\n") == 1
    assert "50 records (train 30, test 20), 6 shards" in stdout
    assert str(out) in stdout


def test_mnist_image_formats_bytes_and_float(capsys, idx_dir, tmp_path, sets):
    images, _ = sets["test"]
    flat = images.reshape(len(images), 784)
    assert run(capsys, "mnist", idx_dir, tmp_path / "b", "--image-format", "bytes")[0] == 0
    assert [d["image"] for d in read_set(tmp_path / "b" / "test")] == [[r.tobytes()] for r in flat]
    assert run(capsys, "mnist", idx_dir, tmp_path / "f", "--image-format", "float")[0] == 0
    got = np.array([d["image"] for d in read_set(tmp_path / "f" / "test")], dtype=np.float32)
    np.testing.assert_array_equal(got, flat.astype(np.float32) / np.float32(255))
    assert got.min() >= 0.0 and got.max() <= 1.0


@pytest.mark.parametrize("compression, suffix", [("gzip", ".gz"), ("zlib", ".deflate")])
def test_mnist_compressed_shards(capsys, idx_dir, tmp_path, sets, compression, suffix):
    out = tmp_path / "out"
    assert run(capsys, "mnist", idx_dir, out, "--compression", compression, "--shards", "2")[0] == 0
    names = sorted(p.name for p in (out / "train").iterdir())
    assert names == ["_SUCCESS", f"part-r-00000.tfrecord{suffix}", f"part-r-00001.tfrecord{suffix}"]
    assert [d["label"][0] for d in read_set(out / "train")] == sets["train"][1].tolist()


def test_mnist_converts_whichever_sets_are_present_and_the_dotted_spelling(capsys, tmp_path, sets):
    d = tmp_path / "idx"
    d.mkdir()
    images, labels = sets["train"]
    put(d / "train-images.idx3-ubyte", idx_bytes(images))
    put(d / "train-labels.idx1-ubyte.gz", idx_bytes(labels), compress=True)
    status, stdout, _ = run(capsys, "mnist", d, tmp_path / "out")
    assert status == 0
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["train"]
    assert "30 records (train 30), 1 shard," in stdout


def test_mnist_refuses_to_overwrite_unless_asked(capsys, idx_dir, tmp_path):
    out = tmp_path / "out"
    (out / "test").mkdir(parents=True)
    (out / "test" / "old").write_text("keep")
    status, stdout, err = run(capsys, "mnist", idx_dir, out)
    assert status == 2 and stdout == ""
    assert "already exists" in err and str(out / "test") in err
    assert [p.name for p in out.iterdir()] == ["test"] and (out / "test" / "old").exists()
    assert run(capsys, "mnist", idx_dir, out, "--overwrite")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["test", "train"]
    assert not (out / "test" / "old").exists()


def test_mnist_overwrite_removes_a_set_of_an_earlier_run_it_does_not_write(
    capsys, idx_dir, tmp_path, sets
):
    out = tmp_path / "out"
    assert run(capsys, "mnist", idx_dir, out, "--image-format", "bytes")[0] == 0
    train_only = tmp_path / "train-only"
    train_only.mkdir()
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        (train_only / name).write_bytes((idx_dir / name).read_bytes())
    status, _, err = run(capsys, "mnist", train_only, out, "--overwrite")
    assert status == 0
    assert [p.name for p in out.iterdir()] == ["train"]  # not the bytes-format test set too
    assert f"Removing {out / 'test'}" in err


def test_mnist_failure_while_writing_leaves_no_partial_output(
    capsys, idx_dir, tmp_path, monkeypatch
):
    real_write = records.write
    calls = []

    def failing_write(target, recs, *args, **kwargs):
        calls.append(target)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_write(target, recs, *args, **kwargs)

    monkeypatch.setattr(records, "write", failing_write)
    out = tmp_path / "out"
    status, stdout, err = run(capsys, "mnist", idx_dir, out, "--shards", "2")
    assert status == 2 and stdout == ""
    assert "No space left on device" in err
    assert len(calls) == 2
    assert not out.exists()  # no set, no temporary directory, no output directory it made


def test_mnist_interrupted_says_only_that_it_was_interrupted_and_leaves_nothing(
    capsys, idx_dir, tmp_path, monkeypatch
):
    real_encode = mnist.encode

    def interrupted(*args, **kwargs):
        for i, record in enumerate(real_encode(*args, **kwargs)):
            if i == 10:
                raise KeyboardInterrupt  # Ctrl-C while a shard is being written
            yield record

    monkeypatch.setattr(mnist, "encode", interrupted)
    out = tmp_path / "out"
    status, stdout, err = run(capsys, "-q", "mnist", idx_dir, out)
    assert (status, stdout) == (130, "")
    assert err == "tfrecord-io: error: interrupted\n"  # no warning about a temporary file
    assert not out.exists()


def test_mnist_reads_from_an_http_base_url(capsys, idx_dir, tmp_path, sets):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(idx_dir))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        status, stdout, _ = run(capsys, "mnist", url, tmp_path / "out")
    finally:
        server.shutdown()
        server.server_close()
    assert status == 0, stdout
    for name in ("test", "train"):
        assert [d["label"][0] for d in read_set(tmp_path / "out" / name)] == sets[name][1].tolist()


# -- mnist: bad input --------------------------------------------------------------------------


def _swap_magic(d: Path, sets) -> str:
    put(d / "t10k-images-idx3-ubyte", idx_bytes(sets["test"][0], magic=2049))
    return (
        "magic number 2049 (0x00000801), expected 2051 (0x00000803); "
        "2049 is the magic number of an IDX labels file"
    )


def _bad_label_magic(d: Path, sets) -> str:
    put(d / "t10k-labels-idx1-ubyte", b"\x00\x00\x08\x02" + idx_bytes(sets["test"][1])[4:])
    return "not an MNIST labels file: magic number 2050"


def _count_mismatch(d: Path, sets) -> str:
    put(d / "t10k-labels-idx1-ubyte", idx_bytes(sets["test"][1][:19]))
    return "has 20 images but"


def _truncated(d: Path, sets) -> str:
    put(d / "t10k-images-idx3-ubyte", idx_bytes(sets["test"][0])[:-100])
    return (
        "truncated: the header announces 20 images of 28x28 (15680 bytes), "
        "but only 15580 bytes follow"
    )


def _truncated_header(d: Path, sets) -> str:
    put(d / "t10k-images-idx3-ubyte", idx_bytes(sets["test"][0])[:10])
    return "truncated: 10 bytes, less than the 16-byte IDX header"


def _truncated_gzip(d: Path, sets) -> str:
    data = gzip.compress(idx_bytes(sets["test"][0]))
    (d / "t10k-images-idx3-ubyte").unlink()
    (d / "t10k-images-idx3-ubyte.gz").write_bytes(data[: len(data) // 2])
    return "truncated or damaged gzip data"


def _trailing_bytes(d: Path, sets) -> str:
    put(d / "t10k-labels-idx1-ubyte", idx_bytes(sets["test"][1]) + b"xx")
    return "2 unexpected bytes after the 20 labels the header announces"


def _missing_labels(d: Path, sets) -> str:
    (d / "t10k-labels-idx1-ubyte").unlink()
    return "no labels file for the test set"


@pytest.mark.parametrize(
    "damage, culprit",
    [
        (_swap_magic, "t10k-images-idx3-ubyte"),
        (_bad_label_magic, "t10k-labels-idx1-ubyte"),
        (_count_mismatch, "t10k-images-idx3-ubyte"),
        (_truncated, "t10k-images-idx3-ubyte"),
        (_truncated_header, "t10k-images-idx3-ubyte"),
        (_truncated_gzip, "t10k-images-idx3-ubyte.gz"),
        (_trailing_bytes, "t10k-labels-idx1-ubyte"),
        (_missing_labels, "t10k-images-idx3-ubyte"),
    ],
)
def test_mnist_bad_input_is_a_clear_error_and_writes_nothing(
    capsys, tmp_path, sets, damage, culprit
):
    d = tmp_path / "idx"
    d.mkdir()
    images, labels = sets["train"]  # a good train set next to the damaged test set
    put(d / "train-images-idx3-ubyte", idx_bytes(images))
    put(d / "train-labels-idx1-ubyte", idx_bytes(labels))
    images, labels = sets["test"]
    put(d / "t10k-images-idx3-ubyte", idx_bytes(images))
    put(d / "t10k-labels-idx1-ubyte", idx_bytes(labels))
    expected = damage(d, sets)
    out = tmp_path / "out"
    status, stdout, err = run(capsys, "mnist", d, out)
    assert status == 2
    assert stdout == ""
    assert err.splitlines()[-1].startswith("tfrecord-io: error: ")
    assert expected in err
    assert str(d / culprit) in err
    assert not out.exists()


def test_mnist_without_idx_files_or_directory(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    status, _, err = run(capsys, "mnist", tmp_path / "empty", tmp_path / "out")
    assert status == 2 and "no MNIST files found" in err and "train-images-idx3-ubyte" in err
    status, _, err = run(capsys, "mnist", tmp_path / "missing", tmp_path / "out")
    assert status == 2 and f"{tmp_path / 'missing'}: no such directory" in err
    assert not (tmp_path / "out").exists()


def test_mnist_usage_errors(capsys, idx_dir, tmp_path):
    for argv in (["mnist", idx_dir], ["mnist", idx_dir, tmp_path, "--shards", "0"],
                 ["mnist", idx_dir, tmp_path, "--image-format", "png"],
                 ["mnist", idx_dir, tmp_path, "--compression", "lz4"], []):
        assert run(capsys, *argv)[0] == 2


# -- inspection fixtures ----------------------------------------------------------------------


def ex(i: int) -> bytes:
    return encode_example({"id": i, "name": f"rec-{i}", "v": [float(i), 0.1]})


@pytest.fixture
def shards(tmp_path) -> Path:
    """A Spark-style directory: two indexed shards of 5 and 7 Examples, and _SUCCESS."""
    d = tmp_path / "ds"
    d.mkdir()
    records.write(d / "part-r-00000.tfrecord", [ex(i) for i in range(5)])
    records.write(d / "part-r-00001.tfrecord", [ex(i) for i in range(5, 12)])
    (d / "_SUCCESS").write_bytes(b"")
    return d


# -- count ------------------------------------------------------------------------------------


def test_count_files_directories_and_globs(capsys, shards, tmp_path):
    status, out, _ = run(capsys, "count", shards)
    assert status == 0
    assert out.splitlines() == [
        f"5\t{shards / 'part-r-00000.tfrecord'}",
        f"7\t{shards / 'part-r-00001.tfrecord'}",
        "12\ttotal",
    ]
    status, out, _ = run(capsys, "count", shards / "part-r-00001.tfrecord")
    assert (status, out) == (0, f"7\t{shards / 'part-r-00001.tfrecord'}\n")
    status, out, _ = run(
        capsys, "count", f"{shards}/part-*1.tfrecord", shards / "part-r-00001.tfrecord"
    )
    assert out.splitlines() == [f"7\t{shards / 'part-r-00001.tfrecord'}"]  # duplicates dropped


def test_count_compressed_by_name_or_option_and_unindexed(capsys, tmp_path):
    records.write(tmp_path / "a.tfrecord.gz", [ex(i) for i in range(3)])
    records.write(tmp_path / "b.bin", [ex(i) for i in range(4)], "zlib")
    records.write(tmp_path / "c.tfrecord", [ex(i) for i in range(2)], index=False)
    assert (
        run(capsys, "count", tmp_path / "a.tfrecord.gz")[1] == f"3\t{tmp_path / 'a.tfrecord.gz'}\n"
    )
    assert run(capsys, "count", "--compression", "zlib", tmp_path / "b.bin")[1].startswith("4\t")
    assert run(capsys, "count", tmp_path / "c.tfrecord")[1].startswith("2\t")


def test_count_errors(capsys, tmp_path):
    status, out, err = run(capsys, "count", tmp_path / "nope")
    assert (status, out) == (2, "") and f"{tmp_path / 'nope'}: no such file or directory" in err
    status, _, err = run(capsys, "count", f"{tmp_path}/*.tfrecord")
    assert status == 2 and "no files match" in err
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "_SUCCESS").write_bytes(b"")
    status, _, err = run(capsys, "count", tmp_path / "d")
    assert status == 2 and "no data files" in err
    records.write(tmp_path / "bad.tfrecord", [ex(0), ex(1)], index=False)
    data = (tmp_path / "bad.tfrecord").read_bytes()
    (tmp_path / "bad.tfrecord").write_bytes(data[:-30])
    status, out, err = run(capsys, "count", tmp_path / "bad.tfrecord")
    assert status == 1 and out == ""
    assert f"corrupt TFRecord in {tmp_path / 'bad.tfrecord'} at byte offset" in err
    os.mkfifo(tmp_path / "d" / "part-0")  # a FIFO in an input directory: refused, never opened
    status, out, err = run(capsys, "count", tmp_path / "d")
    assert (status, out) == (2, "") and f"{tmp_path / 'd' / 'part-0'}: a FIFO, not a regular" in err


def indexed_offsets(path: Path) -> list[int]:
    """The byte offset of each record of a file the writer indexed; the index is then removed,
    so that count reads the file."""
    offsets = [offset for offset, _ in read_index(index_path(path))]
    Path(index_path(path)).unlink()
    return offsets


@pytest.mark.parametrize("length", [500, 10**7], ids=["into-the-data", "past-the-end"])
def test_count_reports_a_damaged_length_at_its_own_record_as_verify_does(capsys, tmp_path, length):
    path = tmp_path / "x.tfrecord"
    records.write(path, [ex(i) for i in range(5000)])
    offsets = indexed_offsets(path)
    data = bytearray(path.read_bytes())
    data[offsets[2500]:offsets[2500] + 8] = struct.pack("<Q", length)  # record 2500's length
    path.write_bytes(bytes(data))
    status, out, err = run(capsys, "count", path)
    assert (status, out) == (1, "")
    assert (
        f"corrupt TFRecord in {path} at byte offset {offsets[2500]}: length checksum mismatch"
        in err
    )
    assert run(capsys, "verify", path)[1] == (
        f"{path}: byte offset {offsets[2500]}: length checksum mismatch\n"
    )


def test_count_reports_a_damaged_first_length_at_offset_0(capsys, tmp_path):
    path = tmp_path / "x.tfrecord"
    records.write(path, [ex(i) for i in range(5000)], index=False)
    data = bytearray(path.read_bytes())
    data[0:8] = struct.pack("<Q", 500)
    path.write_bytes(bytes(data))
    status, _, err = run(capsys, "count", path)
    assert status == 1
    assert f"corrupt TFRecord in {path} at byte offset 0: length checksum mismatch" in err


def test_count_checks_lengths_but_not_data_checksums(capsys, tmp_path):
    path = tmp_path / "x.tfrecord"
    records.write(path, [ex(i) for i in range(10)])
    offsets = indexed_offsets(path)
    data = bytearray(path.read_bytes())
    data[offsets[3] + 20] ^= 0xFF  # inside record 3's data: verify's business, not count's
    path.write_bytes(bytes(data))
    assert run(capsys, "count", path)[:2] == (0, f"10\t{path}\n")
    assert run(capsys, "verify", path)[0] == 1


def test_count_says_there_is_no_total_when_files_are_damaged(capsys, shards):
    bad = shards / "part-r-00002.tfrecord"
    records.write(bad, [ex(i) for i in range(4)], index=False)
    bad.write_bytes(bad.read_bytes()[:-3])
    status, out, err = run(capsys, "count", shards)
    assert status == 1
    assert out.splitlines() == [
        f"5\t{shards / 'part-r-00000.tfrecord'}",
        f"7\t{shards / 'part-r-00001.tfrecord'}",
    ]
    assert err.splitlines()[-1] == (
        "tfrecord-io: error: no total: 1 of the 3 files is damaged (the other 2 hold 12 records)"
    )


def test_damage_messages_point_to_verify_not_to_a_library_option(capsys, tmp_path):
    path = tmp_path / "x.tfrecord"
    records.write(path, [ex(0), ex(1)], index=False)
    path.write_bytes(path.read_bytes()[:-1])
    for command in ("count", "head", "schema", "index"):
        status, _, err = run(capsys, command, path)
        assert status == 1, command
        assert f"corrupt TFRecord in {path} at byte offset " in err, command
        assert "`tfrecord-io verify` lists every damaged stretch" in err, command
        assert "on_corrupt" not in err, command


@pytest.mark.parametrize(
    "argv, message",
    [
        (["head", "-n", "abc", "x"], "argument -n: not a whole number: 'abc'"),
        (["schema", "--sample", "1.5", "x"], "argument --sample: not a whole number: '1.5'"),
        (["mnist", "a", "b", "--shards", "many"], "argument --shards: not a whole number: 'many'"),
        (["mnist", "a", "b", "--shards", "0"], "argument --shards: must be at least 1, not 0"),
        (["images", "a", "b", "--validation-fraction", "half"],
         "argument --validation-fraction: not a number: 'half'"),
        (["images", "a", "b", "--first-label", "-1"],
         "argument --first-label: must be at least 0, not -1"),
    ],
)
def test_bad_option_values_are_explained_in_the_users_words(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.splitlines()[-1].endswith(f"error: {message}")
    assert "_int" not in err and "_fraction" not in err


# -- head -------------------------------------------------------------------------------------


def test_head_prints_decoded_examples_as_json_lines(capsys, shards):
    status, out, _ = run(capsys, "head", "-n", "7", shards)
    assert status == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 7  # across both shards, in order
    assert lines[0] == {"id": [0], "name": ["rec-0"], "v": [0.0, 0.1]}  # float32 0.1 shown as 0.1
    assert [line["id"][0] for line in lines] == list(range(7))
    assert len(run(capsys, "head", shards)[1].splitlines()) == 10  # default -n
    assert run(capsys, "head", "-n", "0", shards)[1] == ""


def test_head_shows_any_bytes_safely(capsys, tmp_path):
    rec = encode_example({
        "raw": [b"\xff\x00\x1b[31m", "héllo\x1b".encode()],
        "f": [float("nan"), float("inf"), -float("inf"), 1.5],
    })
    records.write(tmp_path / "x.tfrecord", [rec])
    status, out, _ = run(capsys, "head", tmp_path / "x.tfrecord")
    assert status == 0
    assert out.isascii() and "\x1b" not in out  # nothing reaches the terminal raw
    assert json.loads(out) == {
        "f": ["NaN", "Infinity", "-Infinity", 1.5],
        "raw": [{"base64": "/wAbWzMxbQ=="}, "héllo\x1b"],
    }


def test_head_sequence_examples_raw_records_and_non_examples(capsys, tmp_path):
    seq = encode_sequence_example({"len": 2}, {"tokens": [[1, 2], [3]], "w": [[b"a"], [b"\xfe"]]})
    records.write(tmp_path / "s.tfrecord", [seq])
    line = json.loads(run(capsys, "head", tmp_path / "s.tfrecord")[1])
    assert line == {
        "context": {"len": [2]},
        "feature_lists": {"tokens": [[1, 2], [3]], "w": [["a"], [{"base64": "/g=="}]]},
    }
    records.write(tmp_path / "r.tfrecord", [b"\xff\xff\xff", b"text"])
    status, out, err = run(capsys, "head", tmp_path / "r.tfrecord")
    assert status == 2 and out == ""
    assert (
        f"{tmp_path / 'r.tfrecord'}: the record at byte offset 0 is not a tf.train.Example" in err
    )
    assert "--raw" in err
    status, out, _ = run(capsys, "head", "--raw", tmp_path / "r.tfrecord")
    assert [json.loads(x) for x in out.splitlines()] == [{"base64": "////"}, "text"]


def test_head_stops_at_damage_with_exit_1(capsys, tmp_path):
    good = [ex(0), ex(1)]
    records.write(tmp_path / "x.tfrecord", good)
    data = (tmp_path / "x.tfrecord").read_bytes()
    (tmp_path / "x.tfrecord").write_bytes(data[:-1])
    status, out, err = run(capsys, "head", tmp_path / "x.tfrecord")
    assert status == 1
    assert len(out.splitlines()) == 1
    assert "truncated record" in err


def test_head_says_at_damage_that_it_stopped_after_the_records_it_printed(capsys, tmp_path):
    path = tmp_path / "x.tfrecord"
    records.write(path, [ex(0), ex(1)])
    path.write_bytes(path.read_bytes()[:-1])
    status, out, err = run(capsys, "head", path)
    assert status == 1 and len(out.splitlines()) == 1
    assert err.splitlines()[-1].endswith(
        "(stopped there, after 1 record printed); `tfrecord-io verify` lists every damaged stretch"
    )


# -- schema -----------------------------------------------------------------------------------


def test_schema_of_mnist_like_examples_as_python_and_json(capsys, idx_dir, tmp_path):
    assert run(capsys, "mnist", idx_dir, tmp_path / "m")[0] == 0
    status, out, _ = run(capsys, "schema", tmp_path / "m" / "train")
    assert status == 0
    assert out == (
        "# tf.train.Example, 30 records sampled\n"
        "feature_spec = {\n"
        '    "height": tf.io.FixedLenFeature([], tf.int64),\n'
        '    "image": tf.io.FixedLenFeature([784], tf.int64),\n'
        '    "label": tf.io.FixedLenFeature([], tf.int64),\n'
        '    "width": tf.io.FixedLenFeature([], tf.int64),\n'
        "}\n"
        'spark_schema = "height BIGINT, image ARRAY<BIGINT>, label BIGINT, width BIGINT"\n'
    )
    status, out, _ = run(capsys, "schema", "--json", "--sample", "3", tmp_path / "m" / "train")
    assert json.loads(out) == {
        "record_type": "Example",
        "feature_spec": {
            "height": "tf.io.FixedLenFeature([], tf.int64)",
            "image": "tf.io.FixedLenFeature([784], tf.int64)",
            "label": "tf.io.FixedLenFeature([], tf.int64)",
            "width": "tf.io.FixedLenFeature([], tf.int64)",
        },
        "spark_schema": "height BIGINT, image ARRAY<BIGINT>, label BIGINT, width BIGINT",
        "records_sampled": 3,
    }


def test_schema_variable_optional_and_odd_features(capsys, tmp_path):
    recs = [
        encode_example(
            {"tags": ["a", "b"], "opt": 1.5, "blob": b"\xff", "my col": [1, 2], "e": []}
        ),
        encode_example({"tags": ["c"], "blob": b"ok", "my col": [3, 4], "e": []}),
    ]
    records.write(tmp_path / "x.tfrecord", recs)
    status, out, _ = run(capsys, "schema", "--json", tmp_path / "x.tfrecord")
    assert status == 0
    assert json.loads(out)["feature_spec"] == {
        "blob": "tf.io.FixedLenFeature([], tf.string)",
        "e": None,
        "my col": "tf.io.FixedLenFeature([2], tf.int64)",
        "opt": "tf.io.VarLenFeature(tf.float32)",
        "tags": "tf.io.VarLenFeature(tf.string)",
    }
    assert json.loads(out)["spark_schema"] == (
        "blob BINARY, e VOID, `my col` ARRAY<BIGINT>, opt FLOAT, tags ARRAY<STRING>"
    )
    out = run(capsys, "schema", tmp_path / "x.tfrecord")[1]
    assert '    # "e": no values in the records sampled\n' in out


def test_schema_of_sequence_examples(capsys, tmp_path):
    recs = [
        encode_sequence_example(
            {"len": 2}, {"tok": [[1], [2]], "vec": [[0.5, 1.0], [2.0, 3.0]], "w": [["a"]]}
        ),
        encode_sequence_example({"len": 1}, {"tok": [[3]], "vec": [[1.0, 1.0]]}),
    ]
    records.write(tmp_path / "s.tfrecord", recs)
    status, out, _ = run(capsys, "schema", "--json", tmp_path / "s.tfrecord")
    assert status == 0
    assert json.loads(out) == {
        "record_type": "SequenceExample",
        "context_features": {"len": "tf.io.FixedLenFeature([], tf.int64)"},
        "sequence_features": {
            "tok": "tf.io.FixedLenSequenceFeature([], tf.int64)",
            "vec": "tf.io.FixedLenSequenceFeature([2], tf.float32)",
            "w": "tf.io.FixedLenSequenceFeature([], tf.string, allow_missing=True)",
        },
        "spark_schema": (
            "len BIGINT, tok ARRAY<ARRAY<BIGINT>>, vec ARRAY<ARRAY<FLOAT>>, w ARRAY<ARRAY<STRING>>"
        ),
        "records_sampled": 2,
    }
    out = run(capsys, "schema", tmp_path / "s.tfrecord")[1]
    assert "context_features = {" in out and "sequence_features = {" in out


def test_schema_errors(capsys, tmp_path):
    records.write(tmp_path / "empty.tfrecord", [])
    status, _, err = run(capsys, "schema", tmp_path / "empty.tfrecord")
    assert status == 2 and "no records to infer a schema from" in err
    records.write(
        tmp_path / "mixed.tfrecord", [encode_example({"a": 1}), encode_example({"a": "x"})]
    )
    status, _, err = run(capsys, "schema", tmp_path / "mixed.tfrecord")
    assert status == 2 and str(tmp_path / "mixed.tfrecord") in err and "'a'" in err


def test_schema_says_at_damage_that_it_inferred_nothing_and_which_sample_would(
    capsys, tmp_path
):
    path = tmp_path / "x.tfrecord"
    records.write(path, [ex(0), ex(1), ex(2)])
    path.write_bytes(path.read_bytes()[:-1])
    status, out, err = run(capsys, "schema", path)
    assert (status, out) == (1, "")
    assert err.splitlines()[-1].endswith(
        "(no schema inferred; --sample 2 infers it from the records before the damage); "
        "`tfrecord-io verify` lists every damaged stretch"
    )
    assert run(capsys, "schema", "--sample", "2", path)[0] == 0


def test_schema_names_the_file_offset_and_index_of_a_record_that_is_not_an_example(
    capsys, shards
):
    bad = shards / "part-r-00002.tfrecord"
    records.write(bad, [ex(20), b"\xff\xff\xff", ex(21)])
    offset = read_index(index_path(bad))[1][0]
    status, out, err = run(capsys, "schema", shards)
    assert (status, out) == (2, "")
    assert err == (
        f"tfrecord-io: error: {bad}: the record at byte offset {offset} (record 1 of the file) "
        "is not a tf.train.Example; `tfrecord-io head --raw` prints the records' bytes\n"
    )


def test_schema_names_a_record_that_is_not_a_sequence_example_the_same_way(capsys, tmp_path):
    path = tmp_path / "s.tfrecord"
    seq = encode_sequence_example({"len": 1}, {"tok": [[1]]})
    records.write(path, [seq, seq, b"\xff\xff\xff"])
    offset = read_index(index_path(path))[2][0]
    status, _, err = run(capsys, "schema", "--type", "sequence", path)
    assert status == 2
    assert (
        f"{path}: the record at byte offset {offset} (record 2 of the file) is not a "
        "tf.train.SequenceExample" in err
    )


# -- verify -----------------------------------------------------------------------------------


def test_verify_good_files(capsys, shards):
    status, out, err = run(capsys, "verify", shards)
    assert (status, out) == (0, "")
    assert "2 files, 12 records: every checksum is correct" in err


def test_verify_reports_every_damage_with_file_and_offset(capsys, shards, tmp_path):
    part = shards / "part-r-00001.tfrecord"
    offsets = [o for o, _ in read_index(index_path(part))]  # records 5..11 of the shard
    data = bytearray(part.read_bytes())
    data[offsets[1] + 20] ^= 0xFF  # inside record 1's data
    data[offsets[4] + 3] ^= 0xFF  # inside record 4's length
    part.write_bytes(bytes(data[:-2]))  # and the last record cut short
    status, out, err = run(capsys, "verify", shards)
    assert status == 1
    assert out.splitlines() == [
        f"{part}: byte offset {offsets[1]}: data checksum mismatch",
        f"{part}: byte offset {offsets[4]}: length checksum mismatch",
        f"{part}: byte offset {offsets[6]}: "
        "truncated record: the file ends inside the data checksum",
    ]
    assert "3 problems in 1 of 2 files" in err
    assert "Skipping" not in err  # the reader's own warnings are not repeated


def test_verify_damaged_compressed_stream(capsys, tmp_path):
    records.write(tmp_path / "x.tfrecord.gz", [os.urandom(3000) for _ in range(50)])
    data = (tmp_path / "x.tfrecord.gz").read_bytes()
    (tmp_path / "x.tfrecord.gz").write_bytes(data[: len(data) // 2])
    status, out, _ = run(capsys, "verify", tmp_path / "x.tfrecord.gz")
    assert status == 1
    lines = out.splitlines()
    assert len(lines) == 1  # one damage, one line
    assert lines[0].startswith(f"{tmp_path / 'x.tfrecord.gz'}: byte offset ")
    assert "damaged gzip stream" in lines[0]


def test_verify_reports_reserved_gzip_flags_at_the_member_they_refuse(capsys, tmp_path):
    first, second = io.BytesIO(), io.BytesIO()
    records.write(first, [b"a" * 100] * 10, compression="gzip")
    records.write(second, [b"b" * 100] * 10, compression="gzip")
    member = bytearray(second.getvalue())
    member[3] |= 0x80  # a reserved FLG bit
    path = tmp_path / "x.tfrecord.gz"
    path.write_bytes(first.getvalue() + bytes(member))
    status, out, _ = run(capsys, "verify", path)
    assert status == 1
    assert out.startswith(f"{path}: byte offset {10 * 116}: damaged gzip stream")
    assert "reserved flag bits" in out and len(out.splitlines()) == 1


def test_verify_reports_a_stale_or_bad_index(capsys, shards):
    part = shards / "part-r-00000.tfrecord"
    ipath = Path(index_path(part))
    entries = read_index(ipath)
    (o1, n1), (_, n2) = entries[1], entries[2]
    ipath.write_text("".join(f"{o} {n}\n" for o, n in entries[:1] + [(o1, n1 + n2)] + entries[3:]))
    status, out, _ = run(capsys, "verify", part)
    assert status == 1
    assert out == (
        f"{part}: stale index {ipath}: line 2 says {o1} {n1 + n2}, but the record there is "
        f"at byte offset {o1}, {n1} bytes long\n"
    )
    ipath.write_text("garbage\n")
    status, out, _ = run(capsys, "verify", part)
    assert status == 1 and out.startswith(f"{part}: bad index: malformed index")


def crafted_beyond_resync(path: Path) -> None:
    """Damage at byte 0, then headers whose own CRC matches, back to back, each announcing
    1 MiB of data that does not: resynchronising after the damage gives up once 512 MiB of
    checksums are spent, at header 512 (byte 5 + 12 * 512)."""
    header = framing.header(1 << 20)
    path.write_bytes(b"\0" * 5 + header * 600 + b"\0" * ((1 << 20) + 100))


def test_verify_exits_1_for_damage_it_cannot_skip_past(capsys, tmp_path):
    crafted_beyond_resync(tmp_path / "crafted.tfrecord")
    status, out, err = run(capsys, "verify", tmp_path / "crafted.tfrecord")
    assert status == 1
    assert len(out.splitlines()) == 2  # the damage, then where skipping it was given up
    assert "2 problems in 1 of 1 file" in err and "error" not in err


def test_verify_names_the_offset_where_skipping_damage_was_given_up(capsys, tmp_path):
    path = tmp_path / "crafted.tfrecord"
    crafted_beyond_resync(path)
    _, out, _ = run(capsys, "verify", path)
    assert out.splitlines()[1].startswith(
        f"{path}: byte offset {5 + 12 * 512}: after the damage at byte offset 0, so many "
        "record headers look valid"
    )


def test_verify_does_not_call_the_checksums_of_an_unreadable_file_correct(
    capsys, shards, monkeypatch
):
    unreadable = shards / "part-r-00001.tfrecord"
    real_reader = records.RecordReader

    def reader(source, *args, **kwargs):
        if Path(source) == unreadable:
            raise PermissionError(13, "Permission denied", str(source))
        return real_reader(source, *args, **kwargs)

    monkeypatch.setattr(records, "RecordReader", reader)
    status, out, err = run(capsys, "verify", shards)
    assert (status, out) == (2, "")
    assert f"{unreadable}: [Errno 13] Permission denied" in err
    assert "1 file, 5 records: every checksum is correct" in err  # the other file
    assert "2 files" not in err
    assert err.splitlines()[-1] == (
        "tfrecord-io: error: 1 file not verified: it could not be read (see above)"
    )
    status, out, err = run(capsys, "verify", unreadable)
    assert (status, out) == (2, "")
    assert "every checksum is correct" not in err


def test_verify_does_not_blame_a_file_for_a_failure_to_write_stdout(
    capsys, shards, monkeypatch
):
    part = shards / "part-r-00001.tfrecord"
    data = bytearray(part.read_bytes())
    data[30] ^= 0xFF
    part.write_bytes(bytes(data))

    class FullDisk(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(sys, "stdout", FullDisk())
    status, _, err = run(capsys, "verify", shards)
    assert status == 2
    assert err.splitlines() == [
        "tfrecord-io: error: cannot write the results to standard output: [Errno 28] No space "
        "left on device; what it holds is incomplete: make room where stdout goes, or redirect it"
    ]


def test_verify_missing_file_is_exit_2(capsys, shards, tmp_path):
    status, _, err = run(capsys, "verify", shards, tmp_path / "gone.tfrecord")
    assert status == 2 and str(tmp_path / "gone.tfrecord") in err


# -- index ------------------------------------------------------------------------------------


def test_index_writes_missing_indexes_only(capsys, tmp_path):
    recs = [ex(i) for i in range(9)]
    records.write(tmp_path / "tf.tfrecord", recs, index=False)  # as TensorFlow writes: no index
    records.write(tmp_path / "ref.tfrecord", recs)  # the same data, indexed by the writer
    records.write(tmp_path / "z.tfrecord.gz", recs)
    ipath = Path(index_path(tmp_path / "tf.tfrecord"))
    assert not ipath.exists()
    status, out, err = run(capsys, "index", tmp_path)
    assert status == 0
    assert out == f"{ipath}\t9 records\n"
    assert ipath.read_bytes() == Path(index_path(tmp_path / "ref.tfrecord")).read_bytes()
    assert "z.tfrecord.gz: compressed, so not splittable: no index" in err
    assert run(capsys, "index", tmp_path)[:2] == (0, "")  # all up to date now
    ipath.write_text("0 1\n")  # stale: rewritten
    assert run(capsys, "index", tmp_path / "tf.tfrecord")[1] == f"{ipath}\t9 records\n"
    assert ipath.read_bytes() == Path(index_path(tmp_path / "ref.tfrecord")).read_bytes()


def test_index_of_a_directory_passes_over_files_of_other_codecs(capsys, tmp_path):
    records.write(tmp_path / "a.tfrecord", [ex(i) for i in range(4)], index=False)
    (tmp_path / "b.tfrecord.bz2").write_bytes(b"BZh9 what Spark's bzip2 codec wrote")
    status, out, err = run(capsys, "index", tmp_path)
    assert status == 0
    assert out == f"{index_path(tmp_path / 'a.tfrecord')}\t4 records\n"
    assert "b.tfrecord.bz2: compressed (bzip2), so not indexed" in err
    assert not Path(index_path(tmp_path / "b.tfrecord.bz2")).exists()


def test_index_of_a_damaged_file_fails_and_writes_nothing(capsys, tmp_path):
    records.write(tmp_path / "x.tfrecord", [ex(i) for i in range(3)], index=False)
    data = bytearray((tmp_path / "x.tfrecord").read_bytes())
    data[30] ^= 1
    (tmp_path / "x.tfrecord").write_bytes(bytes(data))
    status, out, err = run(capsys, "index", tmp_path / "x.tfrecord")
    assert (status, out) == (1, "")
    assert f"corrupt TFRecord in {tmp_path / 'x.tfrecord'}" in err and "no index written" in err
    assert not Path(index_path(tmp_path / "x.tfrecord")).exists()


# -- --spark: what Hadoop cannot write ---------------------------------------------------------


@pytest.mark.parametrize(
    "output, same",
    [
        ("az://data/sets/mnist", "abfs://data@myaccount.dfs.core.windows.net/sets/mnist"),
        ("abfss://data/sets/mnist", "abfss://data@myaccount.dfs.core.windows.net/sets/mnist"),
    ],
)
def test_spark_output_on_azure_without_the_account_is_refused_naming_the_url_to_give(
    capsys, monkeypatch, idx_dir, output, same
):
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "myaccount")
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    status, out, err = run(capsys, "mnist", idx_dir, output, "--spark", "local[1]")
    assert (status, out) == (2, "")
    assert err.splitlines()[-1].startswith(f"tfrecord-io: error: {output}: --spark cannot write")
    assert err.splitlines()[-1].endswith(f"give the same location as {same}")


# -- the command as a program ----------------------------------------------------------------


def test_python_dash_m_end_to_end(idx_dir, tmp_path):
    result = cli_subprocess(
        "mnist", idx_dir, tmp_path / "out", "--shards", "2", "--compression", "gzip"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("50 records (train 30, test 20), 4 shards, ")
    assert "\r" not in result.stderr  # no progress bar when stderr is not a terminal
    result = cli_subprocess("count", tmp_path / "out")
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "50\ttotal"
    result = cli_subprocess("verify", f"{tmp_path / 'out'}/*/part-*")
    assert (result.returncode, result.stdout) == (0, "")


def test_python_dash_m_exit_statuses(tmp_path):
    records.write(tmp_path / "x.tfrecord", [ex(0), ex(1)])
    data = bytearray((tmp_path / "x.tfrecord").read_bytes())
    data[-1] ^= 1
    (tmp_path / "x.tfrecord").write_bytes(bytes(data))
    result = cli_subprocess("verify", tmp_path / "x.tfrecord")
    assert result.returncode == 1
    assert result.stdout.startswith(f"{tmp_path / 'x.tfrecord'}: byte offset ")
    result = cli_subprocess("count", tmp_path / "missing")
    assert result.returncode == 2
    assert (
        result.stderr == f"tfrecord-io: error: {tmp_path / 'missing'}: no such file or directory\n"
    )
    result = cli_subprocess()
    assert result.returncode == 2 and "usage: tfrecord-io" in result.stderr
    result = cli_subprocess("--help")
    assert result.returncode == 0
    for command in ("mnist", "count", "head", "schema", "verify", "index"):
        assert command in result.stdout


def test_a_command_started_with_stdout_closed_says_so_without_a_traceback(tmp_path):
    records.write(tmp_path / "x.tfrecord", [ex(i) for i in range(3)])
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-m", "tfrecord_io.cli", "count", str(tmp_path / "x.tfrecord")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, timeout=120,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 2
    assert done.stderr == (
        "tfrecord-io: error: standard output is closed, so the results have nowhere to go; "
        "redirect it to a file (or to /dev/null)\n"
    )


def test_console_script_entry_point_is_main(capsys):
    assert 'tfrecord-io = "tfrecord_io.cli:main"' in (ROOT / "pyproject.toml").read_text()
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("tfrecord-io ")


def test_example_program_runs(idx_dir, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, str(ROOT / "python" / "mnist_to_tfrecord.py"), str(idx_dir),
         str(tmp_path / "out"), "--shards", "3"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "train: 30 examples in 3 shards, read back intact" in result.stdout
    assert "test: 20 examples in 3 shards, read back intact" in result.stdout
