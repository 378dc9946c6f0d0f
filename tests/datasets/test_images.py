"""tfrecord_io.datasets.images without Spark: the records' layout on the real MNIST test set
written as PNG folders (mnist_png_tree), the labels and their map, the split, the shards, and
damaged files under both policies. test_images_spark.py compares Spark's records with these."""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tfrecord_io import records
from tfrecord_io.datasets import images
from tfrecord_io.errors import DamagedImageError, ImageError
from tfrecord_io.example import decode_example
from tfrecord_io.fs import operations

from datafiles import MNIST, MNIST_PNG_LIMIT


def examples(paths) -> list[dict]:
    """Every record of the shards at *paths*, in order, decoded (each value a list)."""
    return [decode_example(r) for path in paths for r in records.read(str(path))]


def mnist_test_set() -> tuple[np.ndarray, np.ndarray]:
    """The first MNIST_PNG_LIMIT images and labels, read from the IDX files directly."""
    pixels = gzip.decompress(Path(MNIST, "t10k-images-idx3-ubyte.gz").read_bytes())
    labels = gzip.decompress(Path(MNIST, "t10k-labels-idx1-ubyte.gz").read_bytes())
    return (np.frombuffer(pixels, np.uint8, offset=16).reshape(-1, 28, 28)[:MNIST_PNG_LIMIT],
            np.frombuffer(labels, np.uint8, offset=8)[:MNIST_PNG_LIMIT])


def jpeg(width: int, height: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(buffer, "JPEG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def converted(mnist_png_tree, tmp_path_factory):
    out = tmp_path_factory.mktemp("images") / "out"
    result = images.convert(mnist_png_tree, out, shards=4, validation_fraction=0.2)
    return out, result


@pytest.fixture
def tree(mnist_png_tree, tmp_path) -> Path:
    """A copy of the MNIST PNG tree to change."""
    copy = tmp_path / "tree"
    shutil.copytree(mnist_png_tree, copy)
    return copy


# -- layout -----------------------------------------------------------------------------------


def test_every_record_holds_its_file_as_stored_in_build_image_datas_layout(
    converted, mnist_png_tree
):
    out, result = converted
    found = examples(result.shards["train"] + result.shards["validation"])
    assert len(found) == MNIST_PNG_LIMIT
    for ex in found:
        assert set(ex) == {"image/encoded", "image/format", "image/height", "image/width",
                           "image/channels", "image/class/label", "image/class/text",
                           "image/filename"}
        name = ex["image/filename"][0].decode()
        assert ex["image/encoded"] == [(mnist_png_tree / name).read_bytes()]
        assert ex["image/format"] == [b"PNG"]
        assert (ex["image/height"], ex["image/width"], ex["image/channels"]) == ([28], [28], [1])
        assert ex["image/class/text"] == [name.split("/")[0].encode()]


def test_the_records_are_the_real_mnist_images_and_labels(converted):
    pixels, labels = mnist_test_set()
    _, result = converted
    for ex in examples(result.shards["train"] + result.shards["validation"]):
        index = int(ex["image/filename"][0].decode().split("/")[1][:5])
        decoded = np.asarray(Image.open(io.BytesIO(ex["image/encoded"][0])))
        np.testing.assert_array_equal(decoded, pixels[index])
        assert ex["image/class/label"] == [labels[index]]


def test_the_output_is_the_sets_and_the_label_map_and_nothing_else(converted):
    out, result = converted
    assert sorted(p.name for p in out.iterdir()) == ["labels.txt", "train", "validation"]
    assert sorted(p.name for p in (out / "train").iterdir()) == sorted(
        [f"part-r-0000{k}.tfrecord" for k in range(4)]
        + [f"_part-r-0000{k}.tfrecord.tfindex" for k in range(4)] + ["_SUCCESS"]
    )
    assert [Path(p).name for p in result.shards["validation"]] == ["part-r-00000.tfrecord"]


def test_tensorflow_parses_the_records_with_build_image_datas_feature_spec(converted):
    import tensorflow as tf

    _, result = converted
    spec = images.feature_spec()
    assert spec["image/height"] == tf.io.FixedLenFeature([], tf.int64)
    assert spec["image/encoded"] == tf.io.FixedLenFeature([], tf.string)
    dataset = tf.data.TFRecordDataset(result.shards["validation"])
    n = 0
    for raw in dataset:
        ex = tf.io.parse_single_example(raw, spec)
        image = tf.io.decode_image(ex["image/encoded"])
        assert image.shape == (ex["image/height"], ex["image/width"], ex["image/channels"])
        n += 1
    assert n == result.records["validation"] > 0


# -- labels -----------------------------------------------------------------------------------


def test_labels_number_the_sorted_class_folders_from_zero_and_the_map_says_so(converted):
    out, result = converted
    assert result.classes == [str(d) for d in range(10)]
    assert (out / "labels.txt").read_text() == "".join(f"{d}:{d}\n" for d in range(10))
    assert images.read_label_file(out) == {d: str(d) for d in range(10)}


def test_named_classes_are_numbered_in_name_order_from_first_label(tmp_path):
    for i, name in enumerate(["tulips", "daisy", "Roses"]):
        (tmp_path / "src" / name).mkdir(parents=True)
        (tmp_path / "src" / name / "a.jpg").write_bytes(jpeg(8, 8, i))
    result = images.convert(tmp_path / "src", tmp_path / "out", first_label=1)
    assert result.classes == ["Roses", "daisy", "tulips"]  # code point order, as sorted()
    assert (tmp_path / "out" / "labels.txt").read_text() == "1:Roses\n2:daisy\n3:tulips\n"
    labels = {ex["image/class/text"][0]: ex["image/class/label"][0]
              for ex in examples(result.shards["train"])}
    assert labels == {b"Roses": 1, b"daisy": 2, b"tulips": 3}


def test_jpegs_subfolders_hidden_and_loose_files(tmp_path):
    src = tmp_path / "src"
    (src / "cat" / "indoor").mkdir(parents=True)
    (src / "cat" / "indoor" / "1.jpeg").write_bytes(jpeg(40, 30, 1))
    (src / "cat" / ".thumbs").mkdir()
    (src / "cat" / ".thumbs" / "1.jpeg").write_bytes(b"not read")
    (src / "cat" / "_SUCCESS").write_bytes(b"")  # Hadoop's and Spark's markers
    (src / "cat" / "_a.jpg.tfindex").write_bytes(b"not read")
    (src / "_temporary").mkdir()
    (src / "_temporary" / "1.jpeg").write_bytes(b"not read")
    (src / "README.txt").write_text("not a class")
    result = images.convert(src, tmp_path / "out")
    assert result.classes == ["cat"]
    [ex] = examples(result.shards["train"])
    assert ex["image/filename"] == [b"cat/indoor/1.jpeg"]
    assert (ex["image/format"], ex["image/height"], ex["image/width"], ex["image/channels"]) == (
        [b"JPEG"], [30], [40], [3])


def test_names_starting_with_an_underscore_are_read_as_a_cameras_files_are_named(tmp_path):
    src = tmp_path / "src"
    (src / "cat").mkdir(parents=True)
    (src / "cat" / "_DSC0001.JPG").write_bytes(jpeg(8, 8, 1))
    (src / "cat" / "kitty.jpg").write_bytes(jpeg(8, 8, 2))
    (src / "_other" / "_sub").mkdir(parents=True)
    (src / "_other" / "_sub" / "a.jpg").write_bytes(jpeg(8, 8, 3))
    result = images.convert(src, tmp_path / "out")
    assert result.classes == ["_other", "cat"]
    assert result.per_class["train"] == {"_other": 1, "cat": 2}
    assert result.skipped == []
    names = sorted(ex["image/filename"][0] for ex in examples(result.shards["train"]))
    assert names == [b"_other/_sub/a.jpg", b"cat/_DSC0001.JPG", b"cat/kitty.jpg"]


def test_a_tree_without_class_folders_is_refused(tmp_path):
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "a.jpg").write_bytes(jpeg(8, 8, 0))
    with pytest.raises(ImageError, match="no class folders"):
        images.convert(tmp_path / "flat", tmp_path / "out")


def sub_folder_tree(root: Path) -> Path:
    """A tree whose class folders have sub-folders, one of them holding a file named as one
    beside it, under a directory whose name a file: URL percent-encodes ("the src")."""
    src = root / "the src"
    for i, path in enumerate(["daisy/b.jpg", "daisy/more/b.jpg", "daisy/subfolder_2024/c.jpg",
                              "roses/d.jpg"]):
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_bytes(jpeg(8, 8, i))
    return src


@pytest.mark.parametrize("spelling", ["file URL", "Hadoop's file:/ URL"])
def test_a_file_url_source_lists_the_paths_below_src_as_its_local_path_does(tmp_path, spelling):
    src = sub_folder_tree(tmp_path)
    url = src.as_uri() if spelling == "file URL" else f"file:{src}"  # file:///.../the%20src
    classes, files = images.list_images(url)
    assert [f.path for f in files] == [
        "daisy/b.jpg", "daisy/more/b.jpg", "daisy/subfolder_2024/c.jpg", "roses/d.jpg"]
    assert [Path(f.url).read_bytes() for f in files] == [
        (src / f.path).read_bytes() for f in files]
    assert (classes, files) == images.list_images(src)


def test_a_file_url_source_converts_to_the_records_of_its_local_path(tmp_path):
    src = sub_folder_tree(tmp_path)
    by_url = images.convert(src.as_uri(), tmp_path / "by-url", validation_fraction=0.5)
    by_path = images.convert(src, tmp_path / "by-path", validation_fraction=0.5)
    for name in images.SPLITS:
        assert examples(by_url.shards[name]) == examples(by_path.shards[name])
    assert sorted(ex["image/filename"][0] for shards in by_url.shards.values()
                  for ex in examples(shards)) == [
        b"daisy/b.jpg", b"daisy/more/b.jpg", b"daisy/subfolder_2024/c.jpg", b"roses/d.jpg"]


@pytest.mark.parametrize(("name", "shown"), [
    (b"caf\xe9/a.jpg", "caf\\xe9"),  # a class folder
    (b"tea/caf\xe9/a.jpg", "tea/caf\\xe9"),  # a sub-folder
    (b"tea/b\xe9.jpg", "tea/b\\xe9.jpg"),  # a file
])
def test_a_name_that_is_not_utf8_is_refused_naming_it_and_nothing_is_written(
    tmp_path, name, shown
):
    src = tmp_path / "src"
    (src / "tea").mkdir(parents=True)
    (src / "tea" / "a.jpg").write_bytes(jpeg(8, 8, 0))
    path = os.path.join(os.fsencode(src), name)  # Latin-1 "café", from an old archive say
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(jpeg(8, 8, 1))
    expected = f"{src}/{shown}: the name is not UTF-8"
    with pytest.raises(ImageError, match=f"^{re.escape(expected)}.*rename it"):
        images.convert(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_class_folder_whose_name_holds_a_line_break_is_refused_naming_it(tmp_path):
    src = two_classes(tmp_path / "src")
    (src / "eels\nmore").mkdir()
    (src / "eels\nmore" / "a.jpg").write_bytes(jpeg(8, 8, 2))
    with pytest.raises(ImageError, match=re.escape(f"{src}/eels\\nmore: a class folder's name "
                                                   "holds a line break")):
        images.convert(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_label_map_reads_back_names_holding_what_splitlines_takes_for_line_breaks(
    tmp_path
):
    names = ["a\x1cb", "c\x85d", "e\u2028f", "g\x0ch"]
    for i, name in enumerate(names):
        (tmp_path / "src" / name).mkdir(parents=True)
        (tmp_path / "src" / name / "a.jpg").write_bytes(jpeg(8, 8, i))
    result = images.convert(tmp_path / "src", tmp_path / "out")
    assert images.read_label_file(tmp_path / "out") == dict(enumerate(result.classes))
    assert sorted(result.classes) == sorted(names)


def test_a_label_map_line_without_a_label_is_refused_naming_the_file_and_line(tmp_path):
    (tmp_path / "labels.txt").write_text("0:daisy\nroses\n")
    with pytest.raises(ImageError, match=r"labels.txt, line 2: expected LABEL:CLASS .*'roses'"):
        images.read_label_file(tmp_path / "labels.txt")


@pytest.mark.parametrize("label", ["--1", "\u00b2"])  # "\u00b2": a superscript 2
def test_a_label_map_line_whose_label_is_not_a_decimal_number_is_refused_naming_it(
    tmp_path, label
):
    (tmp_path / "labels.txt").write_text(f"0:daisy\n{label}:roses\n", encoding="utf-8")
    with pytest.raises(ImageError, match=r"labels.txt, line 2: expected LABEL:CLASS"):
        images.read_label_file(tmp_path / "labels.txt")


def test_a_label_map_giving_one_label_two_classes_is_refused_naming_both_lines(tmp_path):
    (tmp_path / "labels.txt").write_text("0:daisy\n1:roses\n0:tulips\n")
    with pytest.raises(ImageError,
                       match=r"labels.txt, line 3: label 0 is 'tulips' here but 'daisy' on "
                             r"line 1"):
        images.read_label_file(tmp_path / "labels.txt")


# -- split and shards -------------------------------------------------------------------------


def test_the_split_follows_the_hash_of_each_path_whatever_the_shard_count(
    converted, mnist_png_tree, tmp_path
):
    _, result = converted
    validation = {ex["image/filename"][0].decode() for ex in examples(result.shards["validation"])}
    again = images.convert(mnist_png_tree, tmp_path / "again", shards=7, validation_fraction=0.2,
                           validation_shards=3)
    assert {ex["image/filename"][0].decode()
            for ex in examples(again.shards["validation"])} == validation
    every = [p.relative_to(mnist_png_tree).as_posix() for p in mnist_png_tree.rglob("*.png")]
    assert validation == {p for p in every if images.split_of(p, 0.2) == "validation"}
    assert 0.16 < len(validation) / len(every) < 0.24


def test_adding_files_moves_no_other_file_between_sets():
    paths = [f"{d}/{i:05d}.png" for d in range(10) for i in range(200)]
    before = {p: images.split_of(p, 0.3) for p in paths}
    assert all(images.split_of(p, 0.3) == s for p, s in before.items())
    assert images.split_of("daisy/1.jpg", 0.3) == images.split_of("daisy/1.jpg", 0.3)
    assert {images.split_of(p, 0.0) for p in paths} == {"train"}


def test_shards_are_near_equal_and_each_mixes_the_classes(converted):
    _, result = converted
    sizes = [len(list(records.read(p))) for p in result.shards["train"]]
    assert sum(sizes) == result.records["train"] and max(sizes) - min(sizes) <= 1
    for path in result.shards["train"]:
        labels = Counter(ex["image/class/label"][0] for ex in examples([path]))
        assert len(labels) == 10


def test_counts_per_set_and_class_add_up(converted):
    _, result = converted
    _, labels = mnist_test_set()
    totals = Counter()
    for per_class in result.per_class.values():
        totals.update(per_class)
    assert totals == Counter(
        {str(d): int(n) for d, n in zip(*np.unique(labels, return_counts=True), strict=True)}
    )
    assert result.records == {s: sum(c.values()) for s, c in result.per_class.items()}


def test_without_a_validation_fraction_only_train_is_written(tree, tmp_path):
    result = images.convert(tree, tmp_path / "out", shards=2)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["labels.txt", "train"]
    assert result.records == {"train": MNIST_PNG_LIMIT}


def test_an_existing_output_needs_overwrite(converted, tree):
    out, _ = converted
    with pytest.raises(ImageError, match="already exists; remove it or pass --overwrite"):
        images.convert(tree, out)


def test_overwrite_replaces_every_set_of_the_earlier_run(tree, tmp_path):
    out = tmp_path / "out"
    images.convert(tree, out, shards=2, validation_fraction=0.5)
    (out / "train" / "part-r-00001.tfrecord").unlink()
    result = images.convert(tree, out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["labels.txt", "train"]
    assert len(examples(result.shards["train"])) == MNIST_PNG_LIMIT


def two_classes(src: Path) -> Path:
    """A tree of two classes, one JPEG each."""
    for i, name in enumerate(["cats", "dogs"]):
        (src / name).mkdir(parents=True)
        (src / name / "a.jpg").write_bytes(jpeg(8, 8, i))
    return src


@pytest.mark.parametrize("out", ["_tfr", ".", "cats/tfr"])
def test_an_output_inside_the_image_tree_is_refused_before_anything_is_written(tmp_path, out):
    # A second conversion of the tree would read it as a class of images (_tfr first, which
    # renumbers every class).
    src = two_classes(tmp_path / "src")
    with pytest.raises(ImageError, match="inside the image tree .*; write OUT outside SRC"):
        images.convert(src, src / out)
    assert sorted(p.name for p in src.iterdir()) == ["cats", "dogs"]
    assert [p.name for p in (src / "cats").iterdir()] == ["a.jpg"]


def test_an_output_below_a_hidden_folder_of_the_image_tree_is_written(tmp_path):
    src = two_classes(tmp_path / "src")
    images.convert(src, src / ".tfr")
    again = images.convert(src, src / ".tfr", first_label=1, overwrite=True)
    assert again.classes == ["cats", "dogs"]
    assert images.read_label_file(src / ".tfr") == {1: "cats", 2: "dogs"}


def test_overwrite_refuses_to_replace_a_set_that_is_the_image_tree(tmp_path):
    src = two_classes(tmp_path / "data" / "train")
    with pytest.raises(ImageError, match=r"is inside .*train, which the conversion replaces"):
        images.convert(src, tmp_path / "data", overwrite=True)
    assert sorted(p.name for p in src.iterdir()) == ["cats", "dogs"]
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["train"]


def failing_rename_of(name: str, monkeypatch) -> None:
    """Make renaming anything to a path ending in /NAME fail, as a full disk or a lost
    connection would while the outputs are moved into place."""
    rename = operations.rename

    def failing(source, target, *args, **kwargs):
        if str(target).endswith("/" + name):
            raise OSError(f"cannot rename {source} to {target}")
        return rename(source, target, *args, **kwargs)

    monkeypatch.setattr(operations, "rename", failing)  # what fs.publish moves with


def test_a_failure_while_moving_the_outputs_into_place_leaves_none_of_them(tmp_path,
                                                                            monkeypatch):
    src = two_classes(tmp_path / "src")
    failing_rename_of(images.LABELS_FILE, monkeypatch)
    with pytest.raises(OSError, match="cannot rename"):
        images.convert(src, tmp_path / "out", validation_fraction=0.5)
    assert not (tmp_path / "out").exists()


def test_a_failure_while_moving_the_outputs_into_place_keeps_the_earlier_runs(tmp_path,
                                                                              monkeypatch):
    src = two_classes(tmp_path / "src")
    out = tmp_path / "out"
    images.convert(src, out, shards=2, validation_fraction=0.5)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    failing_rename_of(images.LABELS_FILE, monkeypatch)
    with pytest.raises(OSError, match="cannot rename"):
        images.convert(src, out, first_label=1, overwrite=True)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in out.iterdir()) == ["labels.txt", "train", "validation"]


# -- damaged files ----------------------------------------------------------------------------


def damage(tree: Path) -> dict[str, Path]:
    """Cut one PNG short and drop a text file into a class: their paths below the tree."""
    cut = tree / "3" / "00018.png"
    cut.write_bytes(cut.read_bytes()[:-30])
    junk = tree / "5" / "notes.png"
    junk.write_text("not an image")
    return {"3/00018.png": cut, "5/notes.png": junk}


def test_a_damaged_file_fails_the_conversion_naming_it_and_nothing_is_written(tree, tmp_path):
    damaged = damage(tree)
    out = tmp_path / "out"
    with pytest.raises(DamagedImageError) as caught:
        images.convert(tree, out, shards=3, validation_fraction=0.5)
    assert any(str(path) in str(caught.value) for path in damaged.values())
    assert not out.exists()
    (tmp_path / "existing").mkdir()
    with pytest.raises(DamagedImageError):
        images.convert(tree, tmp_path / "existing", shards=3, validation_fraction=0.5)
    assert list((tmp_path / "existing").iterdir()) == []


def test_under_skip_damaged_files_are_left_out_counted_and_logged(tree, tmp_path, caplog):
    damaged = damage(tree)
    result = images.convert(tree, tmp_path / "out", shards=3, on_corrupt="skip")
    assert [path for path, _ in result.skipped] == sorted(damaged)
    reasons = dict(result.skipped)
    assert "truncated PNG" in reasons["3/00018.png"] or "damaged PNG" in reasons["3/00018.png"]
    assert reasons["5/notes.png"] == f"{damaged['5/notes.png']}: not a JPEG or PNG image"
    names = {ex["image/filename"][0].decode() for ex in examples(result.shards["train"])}
    assert len(names) == result.records["train"] == MNIST_PNG_LIMIT - 1  # the cut one is out
    assert not names & set(damaged)
    assert "2 damaged files skipped" in caplog.text
    assert "2 damaged skipped" in result.summary()


def test_a_large_file_that_is_not_an_image_is_refused_without_being_read_whole(tmp_path):
    src = two_classes(tmp_path / "src")
    with open(src / "cats" / "clip.mp4", "wb") as f:
        f.truncate(64 << 20)  # sparse: 64 MiB that take no disk
    tracemalloc.start()
    try:
        result = images.convert(src, tmp_path / "out", on_corrupt="skip")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    clip = src / "cats" / "clip.mp4"
    assert result.skipped == [("cats/clip.mp4", f"{clip}: not a JPEG or PNG image")]
    assert peak < 8 << 20


def test_the_progress_bar_counts_every_image(mnist_png_tree, tmp_path, capsys):
    images.convert(mnist_png_tree, tmp_path / "out", shards=2, progress=True)
    assert f"{MNIST_PNG_LIMIT}/{MNIST_PNG_LIMIT}" in capsys.readouterr().err


def test_bad_arguments_are_refused_before_anything_is_read(tmp_path):
    for kwargs in ({"shards": 0}, {"validation_fraction": 1.0}, {"validation_fraction": -0.1},
                   {"on_corrupt": "ignore"}, {"validation_shards": 0}):
        with pytest.raises(ValueError):
            images.convert(tmp_path / "missing", tmp_path / "out", **kwargs)


# -- the MNIST tree ---------------------------------------------------------------------------


def test_write_png_folders_writes_each_image_into_its_digits_folder(tmp_path):
    pixels, labels = mnist_test_set()
    assert images.write_png_folders(MNIST, tmp_path, limit=20) == 20
    written = sorted(tmp_path.rglob("*.png"))
    assert len(written) == 20
    for path in written:
        index = int(path.stem)
        assert path.parent.name == str(labels[index])
        np.testing.assert_array_equal(np.asarray(Image.open(path)), pixels[index])


def test_write_png_folders_that_fails_midway_leaves_no_tree(tmp_path, monkeypatch):
    saved = []
    real_save = Image.Image.save

    def save(self, fp, *args, **kwargs):
        if len(saved) == 10:
            raise OSError("No space left on device")
        saved.append(1)
        return real_save(self, fp, *args, **kwargs)

    monkeypatch.setattr(Image.Image, "save", save)
    with pytest.raises(OSError, match="No space left on device"):
        images.write_png_folders(MNIST, tmp_path / "tree", limit=20)
    assert not (tmp_path / "tree").exists()


def test_write_png_folders_again_leaves_only_the_images_of_the_new_run(tmp_path):
    images.write_png_folders(MNIST, tmp_path, limit=20)
    assert images.write_png_folders(MNIST, tmp_path, limit=5) == 5
    assert sorted(p.name for p in tmp_path.rglob("*.png")) == [f"{i:05d}.png" for i in range(5)]
    assert all(not p.name.startswith(".") for p in tmp_path.iterdir())


def _within(seconds: float, fn):
    """fn()'s result, or its exception, from a thread that must end within *seconds* (reading a
    FIFO nobody writes would block for ever)."""
    import threading

    outcome: list = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "still running: a FIFO was opened"
    return outcome[0]


def test_a_fifo_beside_the_images_is_damaged_input_never_opened(tree, tmp_path):
    import os

    fifo = tree / "3" / "99999.png"
    os.mkfifo(fifo)
    classes, files = images.list_images(tree)
    assert [(f.path, f.special) for f in files if f.special] == [("3/99999.png", "FIFO")]
    error = _within(60, lambda: images.convert(tree, tmp_path / "out", shards=2))
    assert isinstance(error, DamagedImageError)
    assert str(error) == f"{fifo}: a FIFO, not a regular file"
    assert not (tmp_path / "out").exists()
    result = _within(60, lambda: images.convert(tree, tmp_path / "out", shards=2,
                                                on_corrupt="skip"))
    assert result.skipped == [("3/99999.png", f"{fifo}: a FIFO, not a regular file")]
    assert result.records["train"] == MNIST_PNG_LIMIT
