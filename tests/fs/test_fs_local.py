"""tfrecord_io.fs on local files: open, stat, ls, glob, walk, makedirs/delete/rename, URLs."""

from __future__ import annotations

import logging
import os
import stat
import threading
from pathlib import Path

import pytest

from tfrecord_io import fs
from tfrecord_io.errors import TFRecordError, UnsupportedOperationError, UnsupportedURLError
from tfrecord_io.fs.local import LocalFileSystem


def _tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


# -- open / stat -------------------------------------------------------------------------------


def test_open_writes_and_reads_paths_pathlib_and_file_urls(tmp_path):
    path = tmp_path / "a b.bin"
    with fs.open(str(path), "wb") as f:
        f.write(b"\x00\x01payload")
    with fs.open(path) as f:
        assert f.read() == b"\x00\x01payload"
    with fs.open(path.as_uri()) as f:  # percent-encoded space
        assert f.read(2) == b"\x00\x01"
    with fs.open("file:" + str(path)) as f:  # Hadoop's file:/path spelling
        assert f.read() == b"\x00\x01payload"


def test_text_modes_are_utf8(tmp_path):
    path = tmp_path / "t.txt"
    with fs.open(path, "w") as f:
        f.write("grüße\n")
    assert path.read_bytes() == "grüße\n".encode()
    with fs.open(path, "r") as f:
        assert f.read() == "grüße\n"


def test_unknown_mode_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="unsupported mode 'ab'"):
        fs.open(tmp_path / "x", "ab")


def test_stat_reports_size_kind_and_mtime(tmp_path):
    (tmp_path / "f").write_bytes(b"12345")
    os.utime(tmp_path / "f", (1_600_000_000, 1_600_000_000))
    info = fs.stat(tmp_path / "f")
    assert (info.url, info.size, info.is_dir, info.mtime) == (
        str(tmp_path / "f"), 5, False, 1_600_000_000
    )
    assert fs.stat(tmp_path).is_dir and fs.stat(tmp_path).size == 0
    assert fs.exists(tmp_path / "f") and fs.isdir(tmp_path) and not fs.isdir(tmp_path / "f")
    assert not fs.exists(tmp_path / "nope") and not fs.isdir(tmp_path / "nope")


def test_stat_follows_symbolic_links(tmp_path):
    (tmp_path / "target").write_bytes(b"x" * 10)
    (tmp_path / "link").symlink_to(tmp_path / "target")
    (tmp_path / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    assert fs.stat(tmp_path / "link").size == 10
    assert fs.stat(tmp_path / "dirlink").is_dir


def test_missing_local_paths_raise_file_not_found_naming_them(tmp_path):
    missing = tmp_path / "nope"
    for call in (fs.stat, fs.open, fs.ls, fs.delete):
        with pytest.raises(FileNotFoundError) as err:
            call(missing)
        assert str(missing) in str(err.value)


# -- ls / glob -----------------------------------------------------------------------------------


def test_ls_sorts_entries_and_gives_a_file_alone(tmp_path):
    _tree(tmp_path, {"b": b"", "a": b"1", "_c": b"", "d/x": b""})
    assert fs.ls(tmp_path) == [str(tmp_path / n) for n in ("_c", "a", "b", "d")]
    detail = {i.url: (i.size, i.is_dir) for i in fs.ls(tmp_path, detail=True)}
    assert detail[str(tmp_path / "a")] == (1, False) and detail[str(tmp_path / "d")] == (0, True)
    assert fs.ls(tmp_path / "a") == [str(tmp_path / "a")]


def test_glob_matches_wildcards_in_any_component_sorted(tmp_path):
    _tree(tmp_path, {
        "2024/part-1": b"", "2024/part-0": b"", "2025/part-0": b"", "2025/other": b"",
        "notes.txt": b"", "2024x": b"",
    })
    assert fs.glob(f"{tmp_path}/20*/part-?") == [
        str(tmp_path / p) for p in ("2024/part-0", "2024/part-1", "2025/part-0")
    ]
    assert fs.glob(f"{tmp_path}/202[5]/*") == [
        str(tmp_path / "2025/other"),
        str(tmp_path / "2025/part-0"),
    ]
    assert fs.glob(f"{tmp_path}/*/") == [str(tmp_path / "2024"), str(tmp_path / "2025")]  # dirs
    assert fs.glob(str(tmp_path / "notes.txt")) == [str(tmp_path / "notes.txt")]  # no wildcard
    assert fs.glob(str(tmp_path / "absent.txt")) == []
    assert fs.glob(f"{tmp_path}/absent/*") == []
    assert fs.glob(tmp_path.as_uri() + "/2025/p*") == [str(tmp_path / "2025/part-0")]


def test_glob_takes_hadoops_alternatives_and_negation(tmp_path):
    _tree(tmp_path, {"2023/p": b"", "2024/p": b"", "2025/p": b"", "g/part-0": b"",
                     "g/part-1": b""})
    assert fs.glob(f"{tmp_path}/{{2023,2025}}/p") == [
        str(tmp_path / "2023/p"), str(tmp_path / "2025/p")]
    assert fs.glob(f"{tmp_path}/{{2023,{{2024,absent}}}}/*") == [
        str(tmp_path / "2023/p"), str(tmp_path / "2024/p")]
    assert fs.glob(f"{tmp_path}/g/part-[^0]") == [str(tmp_path / "g/part-1")]
    assert fs.expand(f"{tmp_path}/{{2024,2025}}") == [
        str(tmp_path / "2024/p"), str(tmp_path / "2025/p")]


def test_a_name_holding_glob_characters_is_found_as_it_is(tmp_path):
    _tree(tmp_path, {"data[1].tfrecord": b"x", "a{b}": b"y"})
    assert fs.glob(str(tmp_path / "data[1].tfrecord")) == [str(tmp_path / "data[1].tfrecord")]
    assert fs.expand(str(tmp_path / "data[1].tfrecord")) == [str(tmp_path / "data[1].tfrecord")]
    assert fs.expand(str(tmp_path / "a{b}")) == [str(tmp_path / "a{b}")]


def test_glob_of_a_relative_pattern_gives_relative_paths(tmp_path, monkeypatch):
    _tree(tmp_path, {"d/a.tfrecord": b"", "d/b.tfrecord": b"", "e.tfrecord": b""})
    monkeypatch.chdir(tmp_path)
    assert fs.glob("d/*.tfrecord") == ["d/a.tfrecord", "d/b.tfrecord"]
    assert fs.glob("*.tfrecord") == ["e.tfrecord"]


def test_glob_matches_hidden_names_unless_told_to_skip_them(tmp_path):
    _tree(tmp_path, {"part-0": b"", "_part-0.tfindex": b"", ".part-0.crc": b"", "_tmp/part-9": b""})
    assert fs.glob(f"{tmp_path}/*") == [
        str(tmp_path / n) for n in (".part-0.crc", "_part-0.tfindex", "_tmp", "part-0")
    ]
    assert fs.glob(f"{tmp_path}/*", skip_hidden=True) == [str(tmp_path / "part-0")]
    assert fs.glob(f"{tmp_path}/*/part-*", skip_hidden=True) == []
    # A pattern that itself starts with _ or . asks for hidden names.
    assert fs.glob(f"{tmp_path}/_*.tfindex", skip_hidden=True) == [
        str(tmp_path / "_part-0.tfindex")
    ]


# -- walk ----------------------------------------------------------------------------------------


def test_walk_is_top_down_sorted_and_can_be_pruned(tmp_path):
    _tree(tmp_path, {"b/y": b"", "b/x": b"", "a/z": b"", "top": b"", "_skip/w": b""})
    seen = []
    for directory, dirs, files in fs.walk(tmp_path):
        dirs[:] = [d for d in dirs if not d.startswith("_")]
        seen.append((directory, list(dirs), files))
    assert seen == [
        (str(tmp_path), ["a", "b"], ["top"]),
        (str(tmp_path / "a"), [], ["z"]),
        (str(tmp_path / "b"), [], ["x", "y"]),
    ]
    assert list(fs.walk(tmp_path / "top")) == [] and list(fs.walk(tmp_path / "nope")) == []


def test_walk_follows_directory_links_and_skips_loops(tmp_path, caplog):
    _tree(tmp_path, {"data/d/f": b"abc", "elsewhere/g": b"12"})
    (tmp_path / "data" / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "data" / "d" / "up").symlink_to(tmp_path / "data", target_is_directory=True)
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.fs"):
        walked = {d: files for d, _, files in fs.walk(tmp_path / "data", detail=True)}
    assert [f.url for f in walked[str(tmp_path / "data" / "linked")]] == [
        str(tmp_path / "data" / "linked" / "g")
    ]
    assert str(tmp_path / "data" / "d" / "up") not in walked
    assert "loop" in caplog.text and str(tmp_path / "data" / "d" / "up") in caplog.text


def test_a_dangling_link_in_a_listing_is_named(tmp_path):
    (tmp_path / "ok").write_bytes(b"")
    (tmp_path / "broken").symlink_to(tmp_path / "gone")
    with pytest.raises(FileNotFoundError, match="broken: dangling symbolic link"):
        fs.ls(tmp_path)


# -- makedirs / delete / rename / replace / atomic_write -----------------------------------------


def test_makedirs_is_idempotent_and_refuses_a_file_in_the_way(tmp_path):
    fs.makedirs(tmp_path / "a" / "b")
    fs.makedirs(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(FileExistsError):
        fs.makedirs(tmp_path / "file")


def test_delete_files_directories_and_links(tmp_path):
    _tree(tmp_path, {"d/x": b"", "f": b"", "keep/k": b""})
    (tmp_path / "link").symlink_to(tmp_path / "keep", target_is_directory=True)
    fs.delete(tmp_path / "f")
    with pytest.raises(OSError):
        fs.delete(tmp_path / "d")  # not empty
    fs.delete(tmp_path / "d", recursive=True)
    fs.delete(tmp_path / "link", recursive=True)  # the link, not what it points to
    assert sorted(os.listdir(tmp_path)) == ["keep"] and (tmp_path / "keep" / "k").exists()


def test_rename_refuses_an_existing_destination_and_replace_overwrites(tmp_path):
    _tree(tmp_path, {"a": b"A", "b": b"B"})
    with pytest.raises(FileExistsError, match="exists"):
        fs.rename(tmp_path / "a", tmp_path / "b")
    fs.rename(tmp_path / "a", tmp_path / "c")
    assert (tmp_path / "c").read_bytes() == b"A" and not (tmp_path / "a").exists()
    fs.replace(tmp_path / "c", tmp_path / "b")
    assert (tmp_path / "b").read_bytes() == b"A" and not (tmp_path / "c").exists()
    with pytest.raises(FileNotFoundError):
        fs.rename(tmp_path / "a", tmp_path / "d")


def test_atomic_write_appears_whole_or_not_at_all(tmp_path):
    target = tmp_path / "index"
    target.write_bytes(b"old")
    with fs.atomic_write(target) as f:
        f.write(b"new ")
        assert target.read_bytes() == b"old"  # not yet
        f.write(b"content")
    assert target.read_bytes() == b"new content"
    with pytest.raises(RuntimeError):
        with fs.atomic_write(target) as f:
            f.write(b"half")
            raise RuntimeError("writer failed")
    assert target.read_bytes() == b"new content"
    assert os.listdir(tmp_path) == ["index"]  # no temporary file left behind


def test_atomic_write_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "private"
    target.write_bytes(b"old")
    target.chmod(0o600)
    with fs.atomic_write(target) as f:
        f.write(b"new")
    assert (target.read_bytes(), oct(target.stat().st_mode & 0o777)) == (b"new", "0o600")


def test_atomic_write_into_a_missing_directory_names_the_target(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such directory.*missing/f"):
        with fs.atomic_write(tmp_path / "missing" / "f"):
            pass


def test_atomic_write_through_a_symbolic_link_replaces_the_file_and_keeps_the_link(tmp_path):
    _tree(tmp_path, {"v1/data": b"old"})
    (tmp_path / "current").symlink_to(tmp_path / "v1" / "data")
    with fs.atomic_write(tmp_path / "current") as f:
        f.write(b"new")
    assert (tmp_path / "current").is_symlink()
    assert (tmp_path / "v1" / "data").read_bytes() == b"new"
    assert os.listdir(tmp_path / "v1") == ["data"]


def test_atomic_write_writes_a_fifo_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    with fs.atomic_write(fifo) as f:
        f.write(b"through the pipe")
    reader.join(timeout=10)
    assert received == [b"through the pipe"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_staging_directory_is_hidden_in_its_parent_and_removed_after(tmp_path):
    out = tmp_path / "out"
    with fs.staging_directory(out, "test") as staging:
        assert os.path.dirname(staging) == str(out) and os.path.isdir(staging)
        assert os.path.basename(staging).startswith(".tfrecord-io-test-")
        _tree(tmp_path, {"out/" + os.path.basename(staging) + "/set/part-0": b"x"})
        fs.rename(os.path.join(staging, "set"), out / "set")
    assert os.listdir(out) == ["set"]


def test_staging_directory_removes_the_parent_it_made_when_the_block_fails(tmp_path):
    with pytest.raises(RuntimeError):
        with fs.staging_directory(tmp_path / "new" / "out", "test") as staging:
            _tree(tmp_path, {os.path.relpath(staging, tmp_path) + "/part-0": b"x"})
            raise RuntimeError("conversion failed")
    assert os.listdir(tmp_path) == []  # new/ and new/out/ were made for it: both gone
    (tmp_path / "existing").mkdir()
    with pytest.raises(RuntimeError):
        with fs.staging_directory(tmp_path / "existing", "test"):
            raise RuntimeError("conversion failed")
    assert (tmp_path / "existing").is_dir()


def test_a_staging_directory_that_cannot_be_removed_is_logged_not_raised(
    tmp_path, monkeypatch, caplog
):
    def refusing(self, path, recursive):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(LocalFileSystem, "delete", refusing)  # root may delete anything
    with caplog.at_level(logging.WARNING, logger="tfrecord_io.fs"):
        with fs.staging_directory(tmp_path, "test") as staging:
            pass
        with pytest.raises(RuntimeError, match="conversion failed"):
            with fs.staging_directory(tmp_path, "test") as failed:
                raise RuntimeError("conversion failed")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert staging in warnings[0] and "remove it by hand" in warnings[0]
    assert failed in warnings[1] and "Permission denied" in warnings[1]


# -- URLs and the registry -----------------------------------------------------------------------


def test_split_url_join_split_and_names():
    assert fs.split_url("/tmp/x") == ("file", "/tmp/x")
    assert fs.split_url(Path("rel/x")) == ("file", "rel/x")
    assert fs.split_url(b"/tmp/b") == ("file", "/tmp/b")
    assert fs.split_url("file:///tmp/a%20b") == ("file", "/tmp/a b")
    assert fs.split_url("file://localhost/tmp/x") == ("file", "/tmp/x")
    assert fs.split_url("HDFS://nn:8020/x") == ("hdfs", "HDFS://nn:8020/x")
    assert fs.split_url("https://h/x?y=1") == ("https", "https://h/x?y=1")
    assert fs.join("hdfs://nn:8020", "d", "f") == "hdfs://nn:8020/d/f"
    assert fs.join("hdfs:///d/", "f") == "hdfs:///d/f"
    assert fs.join("/a", "b") == "/a/b"
    assert fs.split("hdfs://nn:8020/d/f") == ("hdfs://nn:8020/d", "f")
    assert fs.split("/a/b") == ("/a", "b")
    assert fs.as_url("/tmp/x") == "file:///tmp/x" and fs.as_url("hdfs://nn/x") == "hdfs://nn/x"
    assert fs.is_local("file:///x") and fs.is_local("x") and not fs.is_local("webhdfs://h/x")
    assert fs.is_location(Path("x")) and not fs.is_location(object())


def test_name_of_sources_and_targets(tmp_path):
    assert fs.name(Path("/d/f")) == "/d/f"
    with open(tmp_path / "f", "wb") as f:
        assert fs.name(f) == str(tmp_path / "f")
    import io

    assert fs.name(io.BytesIO()) == "<BytesIO object>"


def test_unsupported_urls_are_value_errors_saying_what_works():
    with pytest.raises(UnsupportedURLError, match="unsupported URL scheme 'ftp'") as err:
        fs.open("ftp://host/x")
    assert isinstance(err.value, ValueError) and isinstance(err.value, TFRecordError)
    assert all(f"{s}://" in str(err.value) for s in ("hdfs", "https", "s3", "az", "gs"))
    with pytest.raises(UnsupportedURLError, match="remote host"):
        fs.stat("file://otherhost/x")


def test_errors_never_show_a_urls_password_or_query_values():
    with pytest.raises(UnsupportedURLError) as unknown:
        fs.open("ftp://alice:s3cret@host/x")
    with pytest.raises(UnsupportedOperationError) as read_only:
        fs.open("https://alice:p@ss@127.0.0.1:9/x?sig=SIGNATURE", "wb")
    for err in (unknown, read_only):
        assert "alice:***@" in str(err.value)
        for secret in ("s3cret", "ss@", "SIGNATURE"):
            assert secret not in str(err.value)


def test_protocols_and_registering_another(tmp_path):
    assert {"file", "hdfs", "webhdfs", "http", "https"} <= set(fs.protocols())
    with pytest.raises(ValueError, match="already registered"):
        fs.register("hdfs", LocalFileSystem())

    class Rooted(LocalFileSystem):
        """``rooted://NAME`` is NAME under tmp_path."""

        protocols = ("rooted",)

        def _local(self, target: str) -> str:
            return str(tmp_path / target.partition("://")[2])

        def open(self, target, mode, **options):
            return super().open(self._local(target), mode, **options)

        def stat(self, target):
            info = super().stat(self._local(target))
            return fs.FileInfo(target, info.size, info.is_dir, info.mtime)

        def ls(self, target):
            return [
                fs.FileInfo(fs.join(target, Path(i.url).name), i.size, i.is_dir, i.mtime)
                for i in super().ls(self._local(target))
            ]

    fs.register("rooted", Rooted)
    try:
        _tree(tmp_path, {"d/part-0": b"abc", "d/_SUCCESS": b""})
        with fs.open("rooted://d/part-0") as f:
            assert f.read() == b"abc"
        # the shared logic (glob, expand) works for any registered file system
        assert fs.glob("rooted://d/*") == ["rooted://d/_SUCCESS", "rooted://d/part-0"]
        assert fs.expand("rooted://d") == ["rooted://d/part-0"]
    finally:
        fs.unregister("rooted")
    assert "rooted" not in fs.protocols()
    with pytest.raises(UnsupportedURLError):
        fs.open("rooted://d/part-0")
    with pytest.raises(ValueError, match="not registered"):
        fs.unregister("rooted")


def test_operations_a_protocol_lacks_are_reported(tmp_path):
    from tfrecord_io.fs.http import HttpFileSystem

    with pytest.raises(UnsupportedOperationError, match="cannot list"):
        HttpFileSystem().ls("https://example.invalid/d")
    with pytest.raises(ValueError, match="across file systems"):
        fs.rename(tmp_path / "a", "hdfs://nn:8020/a")


# -- special files ---------------------------------------------------------------------------


def test_fifos_sockets_and_devices_are_marked_never_plain_files(tmp_path):
    import socket

    _tree(tmp_path, {"d/data.bin": b"12345"})
    os.mkfifo(tmp_path / "d" / "pipe")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "d" / "sock"))
        (tmp_path / "d" / "null").symlink_to("/dev/null")
        listed = {Path(e.url).name: (e.is_dir, e.size, e.special)
                  for e in fs.ls(tmp_path / "d", detail=True)}
    assert listed == {"data.bin": (False, 5, ""), "pipe": (False, 0, "FIFO"),
                      "sock": (False, 0, "socket"), "null": (False, 0, "character device")}
    assert fs.stat(tmp_path / "d" / "pipe").special == "FIFO"
    assert fs.stat(tmp_path / "d").special == ""
    assert fs.stat(tmp_path / "d" / "data.bin").special == ""
    walked = [(d, [(Path(f.url).name, f.special) for f in files])
              for d, _, files in fs.walk(tmp_path, detail=True)]
    assert walked[1][1] == [("data.bin", ""), ("null", "character device"), ("pipe", "FIFO"),
                            ("sock", "socket")]


def test_a_path_below_a_file_does_not_exist(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    below = str(tmp_path / "f.txt" / "x")
    assert not fs.exists(below) and not fs.isdir(below)
    assert fs.glob(below) == [] and fs.glob(f"{tmp_path}/f.txt/") == []
    assert fs.glob(f"{tmp_path}/f*/x") == []
    with pytest.raises(FileNotFoundError, match="a file is in its path"):
        fs.stat(below)


def test_deleting_a_link_spelled_with_a_slash_removes_the_link_not_its_target(tmp_path):
    target = tmp_path / "data"
    target.mkdir()
    (target / "keep.txt").write_text("kept")
    (tmp_path / "link").symlink_to(target)
    fs.delete(f"{tmp_path}/link/", recursive=True)
    assert not os.path.lexists(tmp_path / "link")
    assert (target / "keep.txt").read_text() == "kept"
