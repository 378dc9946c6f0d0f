"""tfrecord_io.fs.expand: Hadoop-style input expansion on local files."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tfrecord_io import fs
from tfrecord_io.errors import InputNotFoundError, TFRecordError, UnsupportedURLError


def _tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@pytest.fixture
def job_output(tmp_path) -> Path:
    """What a Spark job leaves: part files, _SUCCESS, indexes, .crc files, _temporary."""
    out = tmp_path / "out"
    _tree(out, {
        "part-r-00001.tfrecord": b"11",
        "part-r-00000.tfrecord": b"0",
        "_SUCCESS": b"",
        "_part-r-00000.tfrecord.tfindex": b"0 17\n",
        ".part-r-00000.tfrecord.crc": b"crc",
        "_temporary/0/part-r-00009.tfrecord": b"junk",
        "day=2/part-r-00000.tfrecord": b"222",
        "day=2/.hidden/part-x": b"no",
        "day=1/part-r-00000.tfrecord": b"1",
    })
    return out


def test_a_file_is_taken_as_given_even_a_hidden_one(tmp_path):
    _tree(tmp_path, {"_special.tfrecord": b"x", "plain": b"y"})
    assert fs.expand(str(tmp_path / "_special.tfrecord")) == [str(tmp_path / "_special.tfrecord")]
    assert fs.expand(tmp_path / "plain") == [str(tmp_path / "plain")]


def test_a_directory_gives_its_files_recursively_sorted_skipping_hidden_at_every_level(job_output):
    assert fs.expand(str(job_output)) == [
        str(job_output / p)
        for p in (
            "day=1/part-r-00000.tfrecord",
            "day=2/part-r-00000.tfrecord",
            "part-r-00000.tfrecord",
            "part-r-00001.tfrecord",
        )
    ]


def test_a_file_being_copied_is_skipped_in_directories_and_globs(tmp_path):
    # `hadoop fs -put` writes NAME._COPYING_, renamed to NAME once whole
    _tree(tmp_path, {"part-0.tfrecord": b"whole", "part-1.tfrecord._COPYING_": b"hal"})
    assert fs.expand(str(tmp_path)) == [str(tmp_path / "part-0.tfrecord")]
    assert fs.expand(str(tmp_path / "part-*")) == [str(tmp_path / "part-0.tfrecord")]


def test_detail_gives_sizes(job_output):
    sizes = {
        Path(i.url).relative_to(job_output).as_posix(): i.size
        for i in fs.expand(job_output, detail=True)
    }
    assert sizes == {
        "day=1/part-r-00000.tfrecord": 1,
        "day=2/part-r-00000.tfrecord": 3,
        "part-r-00000.tfrecord": 1,
        "part-r-00001.tfrecord": 2,
    }


def test_globs_expand_matched_directories_and_skip_hidden_matches(job_output):
    assert fs.expand(f"{job_output}/*") == fs.expand(job_output)
    assert fs.expand(f"{job_output}/day=*") == [
        str(job_output / "day=1/part-r-00000.tfrecord"),
        str(job_output / "day=2/part-r-00000.tfrecord"),
    ]
    assert fs.expand(f"{job_output}/part-r-0000[1]*") == [str(job_output / "part-r-00001.tfrecord")]
    # asked for by a pattern starting with _: hidden names match
    assert fs.expand(f"{job_output}/_*.tfindex") == [
        str(job_output / "_part-r-00000.tfrecord.tfindex")
    ]


def test_several_inputs_are_sorted_together_without_duplicates(job_output):
    part0 = str(job_output / "part-r-00000.tfrecord")
    part1 = str(job_output / "part-r-00001.tfrecord")
    assert fs.expand([part1, f"{job_output}/part-*", part0]) == [part0, part1]
    assert fs.expand([part1, str(job_output / "day=1")]) == [
        str(job_output / "day=1/part-r-00000.tfrecord"),
        part1,
    ]


def test_a_local_file_named_several_ways_is_listed_once_whatever_the_order(
        job_output, monkeypatch):
    monkeypatch.chdir(job_output)
    part0 = str(job_output / "part-r-00000.tfrecord")
    spellings = [part0, f"{job_output}//part-r-00000.tfrecord",
                 f"{job_output}/day=1/../part-r-00000.tfrecord", "part-r-00000.tfrecord",
                 (job_output / "part-r-00000.tfrecord").as_uri()]
    assert fs.expand(spellings) == [part0]  # the plainest spelling of the first in order
    assert fs.expand(list(reversed(spellings))) == [part0]
    assert fs.expand([job_output, *spellings]) == fs.expand(job_output)  # each file once


def test_a_link_and_its_target_in_the_inputs_are_one_file(tmp_path):
    _tree(tmp_path, {"data/part-0": b"aa"})
    (tmp_path / "data" / "latest").symlink_to(tmp_path / "data" / "part-0")
    assert fs.expand(tmp_path / "data") == [str(tmp_path / "data" / "latest")]


def test_file_urls_come_back_as_paths(job_output):
    assert fs.expand((job_output / "day=1").as_uri()) == [
        str(job_output / "day=1/part-r-00000.tfrecord")
    ]


def test_symbolic_links_to_files_and_directories_are_followed(tmp_path):
    _tree(tmp_path, {"real/a": b"aa", "shared/b": b"bbb", "data/c": b"c"})
    (tmp_path / "data" / "a-link").symlink_to(tmp_path / "real" / "a")
    (tmp_path / "data" / "more").symlink_to(tmp_path / "shared", target_is_directory=True)
    found = fs.expand(tmp_path / "data", detail=True)
    assert [(Path(i.url).relative_to(tmp_path / "data").as_posix(), i.size) for i in found] == [
        ("a-link", 2), ("c", 1), ("more/b", 3)
    ]


def test_a_link_loop_is_walked_once(tmp_path, caplog):
    _tree(tmp_path, {"data/sub/f": b"f"})
    (tmp_path / "data" / "sub" / "again").symlink_to(tmp_path / "data", target_is_directory=True)
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.fs"):
        assert fs.expand(tmp_path / "data") == [str(tmp_path / "data/sub/f")]
    assert "loop" in caplog.text


def test_a_dangling_link_in_an_input_directory_is_an_error_naming_it(tmp_path):
    _tree(tmp_path, {"data/f": b"f"})
    (tmp_path / "data" / "part-9").symlink_to(tmp_path / "vanished")
    with pytest.raises(FileNotFoundError, match="part-9: dangling symbolic link"):
        fs.expand(tmp_path / "data")


def test_a_missing_input_is_named(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(InputNotFoundError) as err:
        fs.expand([str(tmp_path), missing])
    assert str(err.value) == f"{missing}: no such file or directory"
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, TFRecordError)


def test_a_glob_matching_nothing_is_an_error(job_output):
    with pytest.raises(InputNotFoundError, match="no file matches") as err:
        fs.expand(f"{job_output}/*.parquet")
    assert f"{job_output}/*.parquet" in str(err.value)
    with pytest.raises(InputNotFoundError, match="no files match"):  # hidden matches only
        fs.expand(f"{job_output}/*SUCCESS")


def test_a_directory_without_data_files_warns_or_fails(tmp_path, caplog):
    _tree(tmp_path, {"empty/_SUCCESS": b"", "empty/.x.crc": b""})
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.fs"):
        assert fs.expand(tmp_path / "empty") == []
    assert f"{tmp_path / 'empty'} holds no data files" in caplog.text
    with pytest.raises(InputNotFoundError, match="holds no data files"):
        fs.expand(tmp_path / "empty", allow_empty=False)


def test_bad_arguments_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        fs.expand("")
    with pytest.raises(ValueError, match="no input paths"):
        fs.expand([])
    with pytest.raises(UnsupportedURLError, match="unsupported URL scheme"):
        fs.expand("ftp://host/x")


def test_a_fifo_in_an_input_directory_is_damaged_input_never_opened(tmp_path):
    """Opening the FIFO would block this test forever: expand must refuse it from its listing."""
    import os
    import threading

    from tfrecord_io.errors import SpecialFileError

    _tree(tmp_path, {"data/part-0": b"x", "data/part-2": b"y"})
    os.mkfifo(tmp_path / "data" / "part-1")
    outcome: list[BaseException | list[str]] = []

    def run(pattern) -> None:
        try:
            outcome.append(fs.expand(pattern))
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    for pattern in (tmp_path / "data", f"{tmp_path}/data/part-*"):
        outcome.clear()
        thread = threading.Thread(target=run, args=(pattern,), daemon=True)
        thread.start()
        thread.join(20)
        assert not thread.is_alive(), "expand opened the FIFO"
        (error,) = outcome
        assert isinstance(error, SpecialFileError) and isinstance(error, OSError)
        assert f"{tmp_path / 'data' / 'part-1'}: a FIFO, not a regular file" in str(error)
    # named on its own, it is taken as given (as /dev/stdin or a shell's <(...) would be)
    assert fs.expand(tmp_path / "data" / "part-1") == [str(tmp_path / "data" / "part-1")]
