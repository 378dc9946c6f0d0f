"""A class-per-folder image tree -> TFRecord shards of ``tf.train.Example``.

The engine of ``tfrecord-io images``; usable from Python too::

    from tfrecord_io.datasets import images

    result = images.convert("flowers/", "hdfs://nn:8020/data/flowers-tfr",
                            shards=8, validation_fraction=0.1)
    print(result.summary())

Input (:func:`list_images`): a directory -- local, ``hdfs://``, ``webhdfs://`` or any location
:mod:`tfrecord_io.fs` can list -- with one folder per class::

    SRC/daisy/100080576_f52e8ee070_n.jpg
    SRC/daisy/more/10140303196_b88d3d6cec.jpg      (sub-folders belong to their class)
    SRC/roses/...

Class folders are sorted by name (code point order, as Python's ``sorted``) and numbered from
*first_label*: 0 by default, as TF-slim's converters and Keras' ``image_dataset_from_directory``
do; 1 for the numbering of TensorFlow's ``build_image_data.py``, which keeps 0 for "background".
Names starting with ``.`` (hidden files, Hadoop's ``.NAME.crc`` checksums) are skipped, and so
are the markers Hadoop and Spark leave in their directories: ``_SUCCESS``, ``_temporary``, the
``_NAME.tfindex`` split indexes. Other names starting with ``_`` are read like any other: a
camera's ``_DSC0001.JPG`` is an image, a folder ``_other`` a class. Files directly in SRC are
not converted (a warning names them). Every other file is an image: a JPEG or PNG (by content,
not by name), stored in the record as it is, never re-encoded. A FIFO, socket or device in a
class folder is a damaged file (below), and is never opened. The names of class folders, their
sub-folders and files must be UTF-8 (the records hold them): another name stops the listing
with :class:`ImageError` naming it, its undecodable bytes escaped, before anything is written;
so does a class folder whose name holds a line break, which the label map cannot hold.

Records (:func:`encode`), the layout of ``build_image_data.py``:

| feature | kind | value |
|---|---|---|
| ``image/encoded`` | bytes | the file's bytes, as stored |
| ``image/format`` | bytes | ``b"JPEG"`` or ``b"PNG"`` (from the content) |
| ``image/height`` | int64 | pixels, from the header |
| ``image/width`` | int64 | pixels, from the header |
| ``image/channels`` | int64 | from the header: what ``decode_jpeg``/``decode_png`` give |
| ``image/class/label`` | int64 | the class folder's number |
| ``image/class/text`` | bytes | the class folder's name (UTF-8) |
| ``image/filename`` | bytes | the path below SRC, ``daisy/100080576_f52e8ee070_n.jpg`` |

The headers are read by :mod:`tfrecord_io.datasets.image_headers` (``image/channels``: a
JPEG's component count, 3 for CMYK, or a PNG's color type's).

Split (:func:`split_of`): a file is in the validation set when the first 8 bytes of the
SHA-256 of its path below SRC, as a fraction of 2**64, are below *validation_fraction*: the same
file lands in the same set on every run and machine, whatever the shard count, and adding files
never moves others. Within a set, the files are ordered by that hash too (a fixed shuffle, so
every shard mixes the classes), and shard *k* holds a contiguous run of that order.

Output (:func:`convert`)::

    OUT/labels.txt                      one "LABEL:CLASS" line per class, as TF-slim writes it
    OUT/train/part-r-00000.tfrecord     ... with each shard's split index and _SUCCESS
    OUT/validation/part-r-00000.tfrecord  (when validation_fraction > 0)

The shards are named and indexed as :func:`tfrecord_io.spark.save_records` writes them.
Everything is written under a hidden temporary directory in OUT and moved into place at the
end: a failed conversion leaves neither set nor label file behind (and removes OUT if it made
it). OUT may not be inside SRC (the next conversion would read it as a class), nor SRC inside a
set OUT gets.

A damaged file -- cut short, a bad PNG chunk, not a JPEG or PNG, not a regular file -- follows
*on_corrupt*, the package's damage policy: ``"fail"`` (default) raises
:class:`DamagedImageError` naming it and writes nothing; ``"skip"`` leaves it out, logs it, and
lists it in :attr:`ImageConversion.skipped`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import logging
import os
import posixpath
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tfrecord_io import compression as codec
from tfrecord_io import fs
from tfrecord_io import records as _records
from tfrecord_io.datasets import mnist
from tfrecord_io.datasets.image_headers import ImageHeader, read_header
from tfrecord_io.datasets.mnist import shard_name
from tfrecord_io.errors import DamagedImageError, ImageError, MnistError
from tfrecord_io.example import encode_example
from tfrecord_io.extras import require
from tfrecord_io.records.sidecar import INDEX_SUFFIX

__all__ = [
    "LABELS_FILE",
    "SPLITS",
    "ImageFile",
    "ImageConversion",
    "DamagedImageError",
    "ImageError",
    "list_images",
    "split_of",
    "plan",
    "encode",
    "FEATURES",
    "feature_spec",
    "read_label_file",
    "convert",
    "write_png_folders",
]

log = logging.getLogger(__name__)

#: The label map's name in OUT: one ``LABEL:CLASS`` line per class, in label order.
LABELS_FILE = "labels.txt"
#: The sets written, in this order.
SPLITS = ("train", "validation")

_POLICIES = ("fail", "skip")

#: Every feature of a record (see the module's docstring) and its kind: ``"bytes"`` or
#: ``"int64"``.
FEATURES = {
    "image/encoded": "bytes",
    "image/format": "bytes",
    "image/height": "int64",
    "image/width": "int64",
    "image/channels": "int64",
    "image/class/label": "int64",
    "image/class/text": "bytes",
    "image/filename": "bytes",
}


def feature_spec(names: Iterable[str] | None = None) -> dict[str, Any]:
    """The ``tf.io.parse_example`` spec of the records' features *names* (default: all of
    :data:`FEATURES`), each a ``FixedLenFeature([])`` of ``tf.string`` or ``tf.int64``::

        spec = images.feature_spec(["image/encoded", "image/class/label"])
        parsed = tfrecord_io.tf.parse_examples(tfrecord_io.tf.dataset(OUT + "/train"), spec)

    Raises:
        KeyError: a name that is not a feature of the records.
        MissingDependencyError: TensorFlow is not installed.
    """
    from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415 - TensorFlow on demand

    tf = import_tensorflow()
    dtypes = {"bytes": tf.string, "int64": tf.int64}
    return {name: tf.io.FixedLenFeature([], dtypes[FEATURES[name]])
            for name in (FEATURES if names is None else names)}


@dataclass(frozen=True)
class ImageFile:
    """One file of the tree.

    Attributes:
        path: its path below SRC, ``/``-separated (``daisy/1.jpg``): ``image/filename``.
        url: where to read it.
        label: its class's number, ``image/class/label``.
        text: its class's name, ``image/class/text``.
        special: what the entry is when it is not a regular file (``"FIFO"``, ``"socket"``,
            a device: :attr:`tfrecord_io.fs.FileInfo.special`), ``""`` for a file. Such an
            entry is damaged input, never read.
    """

    path: str
    url: str
    label: int
    text: str
    special: str = ""


@dataclass
class ImageConversion:
    """What :func:`convert` wrote.

    Attributes:
        output: the OUT directory.
        classes: the class names, in label order (label ``first_label + i`` is ``classes[i]``).
        first_label: the first class's label.
        records: set name -> images written.
        per_class: set name -> class name -> images written.
        skipped: ``(path below SRC, reason)`` of each damaged file left out, by path.
        shards: set name -> the shard files, in order.
        bytes: total size of the shard files.
        seconds: wall time of the conversion, listing included.
    """

    output: str
    classes: list[str] = field(default_factory=list)
    first_label: int = 0
    records: dict[str, int] = field(default_factory=dict)
    per_class: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    shards: dict[str, list[str]] = field(default_factory=dict)
    bytes: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """One line for humans: images per set, classes, shards, skipped files, time, OUT."""
        total = sum(self.records.values())
        sets = ", ".join(f"{name} {n}" for name, n in self.records.items())
        shards = sum(len(s) for s in self.shards.values())
        skipped = f", {len(self.skipped)} damaged skipped" if self.skipped else ""
        rate = f" ({total / self.seconds:.0f} images/s)" if self.seconds > 0 else ""
        return (
            f"{total} images ({sets}), {len(self.classes)} classes, {shards} shards{skipped}, "
            f"{self.bytes} bytes, {self.seconds:.1f} s{rate} -> {self.output}"
        )


# --------------------------------------------------------------------------------------------
# The tree


#: Names of the files and folders that Hadoop and Spark leave in a directory they write.
_MARKERS = ("_SUCCESS", "_temporary")


def _hidden(name: str) -> bool:
    """Whether the entry named *name* is not part of the tree: a hidden name (``.``), or a
    marker of Hadoop or Spark (``_SUCCESS``, ``_temporary``, a ``_NAME.tfindex`` index). Other
    names starting with ``_`` (``_DSC0001.JPG``, as cameras name their files) are read."""
    return name.startswith(".") or name in _MARKERS or (
        name.startswith("_") and name.endswith(INDEX_SUFFIX)
    )


def list_images(
    source: str | os.PathLike[str], *, first_label: int = 0
) -> tuple[list[str], list[ImageFile]]:
    """The classes and files of the class-per-folder tree at *source*.

    Args:
        source: the tree's root directory (local path or URL).
        first_label: the label of the first class (0, or 1 as ``build_image_data.py``).

    Returns:
        The class names sorted, and every file of every class, sorted by path.

    Raises:
        ImageError: *source* is missing, not a directory, or has no class folder; or a class
            folder, sub-folder or file has a name that is not UTF-8, or a class folder's name
            holds a line break.
    """
    source = os.fspath(source)
    try:
        entries = fs.ls(source, detail=True)
    except FileNotFoundError:
        raise ImageError(f"{source}: no such directory") from None
    if not fs.isdir(source):
        raise ImageError(f"{source}: not a directory; give the directory of the class folders")
    # Each class folder's location as fs.ls spells it (a local path for a file: URL): walked
    # from there, not from a URL joined anew.
    class_urls = {posixpath.basename(e.url.rstrip("/")): e.url for e in entries if e.is_dir}
    classes = sorted(c for c in class_urls if not _hidden(c))
    loose = [e.url for e in entries if not e.is_dir and not _hidden(posixpath.basename(e.url))]
    if loose:
        log.warning("%s: %d file%s outside any class folder, not converted (e.g. %s)", source,
                    len(loose), "" if len(loose) == 1 else "s", _shown(loose[0]))
    if not classes:
        raise ImageError(
            f"{source}: no class folders; put each class's images in a folder named for it "
            "(SRC/CLASS/IMAGE)"
        )
    files = []
    for label, name in enumerate(classes, start=first_label):
        _check_utf8(name, class_urls[name])
        if "\n" in name or "\r" in name:
            shown = _shown(class_urls[name]).replace("\n", "\\n").replace("\r", "\\r")
            raise ImageError(
                f"{shown}: a class folder's name holds a line break, which the label map "
                f"({LABELS_FILE}, a LABEL:CLASS line per class) cannot hold; rename the folder"
            )
        files.extend(_class_files(class_urls[name], name, label))
    files.sort(key=lambda f: f.path)
    return classes, files


def _class_files(top: str, name: str, label: int) -> Iterator[ImageFile]:
    """The files of class *name* (label *label*), whose folder is at *top*, and of its
    sub-folders but hidden ones, each with its path below SRC."""
    # The path below the class folder of each directory the walk yields, built from the names
    # of the sub-folders it went into: fs.walk spells directories its own way (a local path for
    # a file: URL), which need not start as *top* does.
    below_of: dict[str, str] = {}
    for i, (directory, dirs, entries) in enumerate(fs.walk(top, detail=True)):
        below = below_of.pop(directory) if i else ""  # the first one is the class folder
        dirs[:] = [d for d in dirs if not _hidden(posixpath.basename(d.url.rstrip("/")))]
        for d in dirs:
            dir_name = posixpath.basename(d.url.rstrip("/"))
            _check_utf8(dir_name, d.url)
            below_of[d.url] = posixpath.join(below, dir_name)
        for entry in entries:
            file_name = posixpath.basename(entry.url)
            if _hidden(file_name):
                continue
            _check_utf8(file_name, entry.url)
            yield ImageFile(posixpath.join(name, below, file_name), entry.url, label, name,
                            entry.special)


def _shown(text: str) -> str:
    """*text* printable as UTF-8: the bytes of a name that was not UTF-8 (which Python holds
    as lone surrogates) escaped as ``\\xNN``."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no undecodable byte gives
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def _check_utf8(name: str, url: str) -> None:
    """Refuse the entry at *url* named *name* if the name is not UTF-8, which the records'
    ``image/class/text`` and ``image/filename`` are.

    Raises:
        ImageError: naming *url*, its undecodable bytes escaped.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ImageError(
            f"{_shown(url)}: the name is not UTF-8 (undecodable bytes shown as \\xNN); "
            "rename it with a UTF-8 name (e.g. convmv -f latin1 -t utf8)"
        ) from None


def _digest(path: str) -> bytes:
    return hashlib.sha256(path.encode("utf-8")).digest()


def split_of(path: str, validation_fraction: float) -> str:
    """``"validation"`` or ``"train"`` for the file at *path* below SRC (see the module's
    docstring): the same answer on every run and machine, whatever the shard count."""
    position = int.from_bytes(_digest(path)[:8], "big") / 2.0**64
    return "validation" if position < validation_fraction else "train"


def plan(
    files: Iterable[ImageFile], validation_fraction: float, shards: int, validation_shards: int
) -> dict[str, list[list[ImageFile]]]:
    """The shards of each set: set name -> one list of files per shard.

    Files go to sets by :func:`split_of`, are ordered within their set by the hash of their
    path, and shard *k* of a set of *n* files holds files ``[k*n//shards, (k+1)*n//shards)``.
    The validation set is planned only when *validation_fraction* is above 0.
    """
    sets: dict[str, list[ImageFile]] = {"train": []}
    if validation_fraction > 0:
        sets["validation"] = []
    for f in files:
        sets[split_of(f.path, validation_fraction)].append(f)
    counts = {"train": shards, "validation": validation_shards}
    planned = {}
    for name, members in sets.items():
        members.sort(key=lambda f: (_digest(f.path), f.path))
        n, k = len(members), counts[name]
        planned[name] = [members[i * n // k:(i + 1) * n // k] for i in range(k)]
    return planned


# --------------------------------------------------------------------------------------------
# Records


def encode(image: ImageFile, data: bytes, header: ImageHeader | None = None) -> bytes:
    """The ``tf.train.Example`` of *image*, whose file holds *data* (see the module's
    docstring for the features).

    Raises:
        DamagedImageError: *data* is not a whole JPEG or PNG (the message names
            ``image.url``).
    """
    if header is None:
        header = read_header(data, image.url)
    return encode_example({
        "image/encoded": data,
        "image/format": header.format.encode("ascii"),
        "image/height": header.height,
        "image/width": header.width,
        "image/channels": header.channels,
        "image/class/label": image.label,
        "image/class/text": image.text.encode("utf-8"),
        "image/filename": image.path.encode("utf-8"),
    })


#: How every JPEG (SOI, then a marker's first byte) and every PNG file starts.
_SIGNATURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")
_SIGNATURE_BYTES = max(map(len, _SIGNATURES))


def _read(url: str) -> bytes:
    """The bytes of the file at *url*, if it starts as a JPEG or PNG file does.

    Anything else (a video, an archive, a disk image left in a class folder) is refused after
    its first bytes, never read whole into memory.

    Raises:
        DamagedImageError: the file does not start as a JPEG or PNG file; the message names it.
    """
    with fs.open(url) as f:
        head = codec.read_up_to(f, _SIGNATURE_BYTES)
        if not head.startswith(_SIGNATURES):
            raise DamagedImageError(f"{url}: not a JPEG or PNG image")
        return head + f.read()


def _shard_records(
    shard: Sequence[ImageFile],
    on_corrupt: str,
    skipped: Callable[[str, str], Any],
    done: Callable[[int], Any] = lambda n: None,
) -> Iterator[bytes]:
    """The records of one shard's files, in order; damaged files raise (``"fail"``) or go to
    *skipped(path, reason)* (``"skip"``). *done(1)* after each file."""
    for image in shard:
        try:
            if image.special:  # never opened: reading a FIFO or a device may never end
                raise DamagedImageError(f"{image.url}: a {image.special}, not a regular file")
            record = encode(image, _read(image.url))
        except DamagedImageError as exc:
            if on_corrupt == "fail":
                raise
            log.warning("Skipping %s", exc)
            skipped(image.path, str(exc))
            done(1)
            continue
        yield record
        done(1)


def read_label_file(location: str | os.PathLike[str]) -> dict[int, str]:
    """The label map written beside the sets: label -> class name.

    Args:
        location: ``OUT/labels.txt``, or OUT itself.

    Raises:
        ImageError: a line that is not ``LABEL:CLASS``, naming the file and the line.
    """
    location = os.fspath(location)
    if fs.isdir(location):
        location = fs.join(location, LABELS_FILE)
    with fs.open(location) as f:
        text = f.read().decode("utf-8")
    labels: dict[int, str] = {}
    lines: dict[int, int] = {}  # label -> the line that gave it
    # Lines end at "\n" (or "\r\n") only: a class name may hold any other character that
    # str.splitlines() takes for a line break ("\x1c", "\x85", "\u2028", ...).
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        label, colon, name = line.partition(":")
        try:
            value = int(label) if colon and label.strip().lstrip("-").isdigit() else None
        except ValueError:  # "--1", "\u00b2": str.isdigit() digits that int() refuses
            value = None
        if value is None:
            raise ImageError(
                f"{location}, line {number}: expected LABEL:CLASS (as in 0:daisy), found "
                f"{line!r}; give the labels.txt that images.convert wrote"
            )
        if value in labels:
            raise ImageError(
                f"{location}, line {number}: label {value} is {name!r} here but "
                f"{labels[value]!r} on line {lines[value]}; a label names one class"
            )
        labels[value], lines[value] = name, number
    return labels


def _label_text(classes: Sequence[str], first_label: int) -> bytes:
    return "".join(f"{i}:{name}\n" for i, name in enumerate(classes, start=first_label)).encode()


# --------------------------------------------------------------------------------------------
# Conversion


def convert(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    shards: int = 1,
    validation_fraction: float = 0.0,
    validation_shards: int | None = None,
    first_label: int = 0,
    on_corrupt: str = "fail",
    compression: str | None = None,
    spark: Any = None,
    overwrite: bool = False,
    progress: bool = False,
) -> ImageConversion:
    """Convert the class-per-folder image tree at *source* to TFRecord shards under *output*.

    Args:
        source: the tree's root (see :func:`list_images`), local or a URL.
        output: the output directory, local or ``hdfs://``; created if missing.
        shards: shards of the training set.
        validation_fraction: the part of the files, in [0, 1), that goes to the validation
            set (by the hash of its path, see :func:`split_of`); 0 writes no validation set.
        validation_shards: shards of the validation set; None: enough for shards of about the
            training shards' size (at least 1).
        first_label: the first class's label: 0 (TF-slim, Keras) or 1 (``build_image_data``).
        on_corrupt: ``"fail"`` or ``"skip"``, what to do with a damaged file (see the module's
            docstring).
        compression: None/``"none"``, ``"gzip"`` or ``"zlib"`` (images are compressed already:
            this saves little).
        spark: a SparkSession or SparkContext: one Spark task per shard reads its files on an
            executor and writes the shard through tfrecord-io's OutputFormat. The records are
            the same as without Spark. None: convert in this process.
        overwrite: replace existing ``OUT/train``, ``OUT/validation`` and ``OUT/labels.txt``
            (an earlier run's validation set is removed even when this one writes none).
        progress: a progress bar (tqdm, on stderr): of images converted, or with Spark of
            shards written (from Spark's status tracker), unless Spark shows its own
            (``spark.ui.showConsoleProgress``).

    Returns:
        What was written (:class:`ImageConversion`).

    Raises:
        DamagedImageError: a damaged file under ``on_corrupt="fail"``; nothing is written.
        ImageError: no class folder in *source*, an output that exists without *overwrite*,
            an *output* inside *source* or a *source* inside a set *output* gets.
        ValueError: a bad argument.
    """
    started = time.monotonic()
    if not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shards must be a positive integer, not {shards!r}")
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in [0, 1), not {validation_fraction!r}")
    if validation_shards is None:
        ratio = validation_fraction / (1.0 - validation_fraction)
        validation_shards = max(1, round(shards * ratio))
    if not isinstance(validation_shards, int) or validation_shards < 1:
        raise ValueError(f"validation_shards must be a positive integer, not {validation_shards!r}")
    if on_corrupt not in _POLICIES:
        raise ValueError(f"on_corrupt must be 'fail' or 'skip', not {on_corrupt!r}")
    kind = codec.normalize(compression) or codec.NONE
    output = os.fspath(output)
    out_path = _location(output)
    _check_apart(os.fspath(source), output)

    classes, files = list_images(source, first_label=first_label)
    planned = plan(files, validation_fraction, shards, validation_shards)
    targets = [*planned, LABELS_FILE]
    if fs.exists(out_path) and not fs.isdir(out_path):
        raise ImageError(f"{output}: exists and is not a directory")
    for name in [*SPLITS, LABELS_FILE]:  # a validation set of an earlier run counts too
        target = fs.join(out_path, name)
        if fs.exists(target) and not overwrite:
            raise ImageError(
                f"{target} already exists; remove it or pass --overwrite (overwrite=True)"
            )
    sets = ", ".join(f"{name} {sum(map(len, s))} in {len(s)} shards" for name, s in planned.items())
    log.info("%s: %d images in %d classes -> %s", source, len(files), len(classes), sets)

    result = ImageConversion(output=output, classes=classes, first_label=first_label)
    with fs.staging_directory(out_path, "images") as staging:
        with fs.open(fs.join(staging, LABELS_FILE), "wb") as f:
            f.write(_label_text(classes, first_label))
        if spark is not None:
            skipped = _write_with_spark(spark, planned, staging, kind, on_corrupt, progress)
        else:
            skipped = _write_locally(planned, staging, kind, on_corrupt, progress)
        result.skipped = sorted(skipped)
        left_out = {path for path, _ in skipped}
        for name, set_shards in planned.items():
            kept = [f for shard in set_shards for f in shard if f.path not in left_out]
            result.records[name] = len(kept)
            per_class = dict.fromkeys(classes, 0)
            for f in kept:
                per_class[f.text] += 1
            result.per_class[name] = per_class
            result.shards[name] = [
                fs.join(out_path, name, shard_name(k, kind)) for k in range(len(set_shards))
            ]
            for k in range(len(set_shards)):
                result.bytes += fs.stat(fs.join(staging, name, shard_name(k, kind))).size
        fs.publish(staging, targets, replacing=[*SPLITS, LABELS_FILE])
    if result.skipped:
        log.warning("%d damaged file%s skipped", len(result.skipped),
                    "" if len(result.skipped) == 1 else "s")
    result.seconds = time.monotonic() - started
    return result


def _location(location: str) -> str:
    """*location* spelled for comparisons: an absolute local path, or the URL without a
    trailing ``/``."""
    if fs.is_local(location):
        return os.path.abspath(fs.split_url(location)[1])
    return location.rstrip("/")


def _below(inner: str, outer: str) -> list[str] | None:
    """The names of the path from *outer* down to *inner* (``[]`` when they are the same
    place), or None when *inner* is not *outer* nor below it. Both are spelled by
    :func:`_location`; local paths are compared with their symbolic links resolved."""
    if fs.is_local(inner) != fs.is_local(outer):
        return None
    if fs.is_local(inner):
        inner, outer = os.path.realpath(inner), os.path.realpath(outer)
    if inner == outer:
        return []
    prefix = outer.rstrip("/") + "/"
    return inner[len(prefix):].split("/") if inner.startswith(prefix) else None


def _check_apart(source: str, output: str) -> None:
    """Refuse an OUT inside SRC (but below a hidden name, which the listing skips), where the
    next conversion of SRC would read OUT's shards and label map as a class of images (a new
    class, which renumbers the classes after it), and a SRC inside one of the outputs a
    conversion replaces.

    Raises:
        ImageError: naming both.
    """
    src, out = _location(source), _location(output)
    names = _below(out, src)
    # Below a hidden name (SRC/.tfr), the listing never sees it.
    if names is not None and not any(_hidden(name) for name in names):
        raise ImageError(
            f"{output} is inside the image tree {source}: a later conversion of {source} "
            "would read the shards and label map as a class of images and renumber the "
            "classes; write OUT outside SRC"
        )
    for name in [*SPLITS, LABELS_FILE]:
        if _below(src, fs.join(out, name)) is not None:
            raise ImageError(
                f"the image tree {source} is inside {fs.join(out, name)}, which the conversion "
                "replaces (deleting the images with --overwrite); write OUT elsewhere"
            )


def _write_locally(
    planned: dict[str, list[list[ImageFile]]],
    staging: str,
    kind: str,
    on_corrupt: str,
    progress: bool,
) -> list[tuple[str, str]]:
    from tqdm.auto import tqdm  # noqa: PLC0415 - only when converting

    skipped: list[tuple[str, str]] = []
    total = sum(len(shard) for set_shards in planned.values() for shard in set_shards)
    with tqdm(total=total, unit=" img", disable=not progress, desc="images",
              dynamic_ncols=True, mininterval=0.5) as bar:
        for name, set_shards in planned.items():
            directory = fs.join(staging, name)
            fs.makedirs(directory)
            for k, shard in enumerate(set_shards):
                records = _shard_records(shard, on_corrupt, lambda p, r: skipped.append((p, r)),
                                         bar.update)
                damage: list[DamagedImageError] = []
                _records.write(fs.join(directory, shard_name(k, kind)), _until(records, damage),
                               kind, index=kind == codec.NONE)
                if damage:  # raised here, not inside the writer, which would log its failure
                    raise damage[0]
            with fs.open(fs.join(directory, "_SUCCESS"), "wb"):
                pass
    return skipped


def _until(records: Iterator[bytes], damage: list[DamagedImageError]) -> Iterator[bytes]:
    """*records* up to a damaged image, which ends them and goes to *damage*."""
    try:
        yield from records
    except DamagedImageError as exc:
        damage.append(exc)


class _Listed:
    """A Spark accumulator's parameter (duck-typed, so that executors unpickle it without
    pyspark here): lists, added by concatenation."""

    def zero(self, value: list[Any]) -> list[Any]:
        return []

    def addInPlace(  # noqa: N802 - pyspark's name
        self, first: list[Any], second: list[Any]
    ) -> list[Any]:
        first.extend(second)
        return first


def _spark_shard(
    shards: Iterator[Sequence[ImageFile]], on_corrupt: str, skipped: Any
) -> Iterator[bytes]:
    """Spark task body: the records of the partition's one shard."""
    for shard in shards:
        yield from _shard_records(shard, on_corrupt, lambda p, r: skipped.add([(p, r)]))


_DAMAGE_IN_TASK = re.compile(r"DamagedImageError: (.*)")


def _write_with_spark(
    spark: Any,
    planned: dict[str, list[list[ImageFile]]],
    staging: str,
    kind: str,
    on_corrupt: str,
    progress: bool,
) -> list[tuple[str, str]]:
    from tfrecord_io import spark as tfs  # noqa: PLC0415 - pyspark, the `spark` extra

    sc = getattr(spark, "sparkContext", spark)
    skipped = sc.accumulator([], _Listed())
    group = f"tfrecord-io-images-{uuid.uuid4().hex[:12]}"
    saved = {key: sc.getLocalProperty(key) for key in _JOB_GROUP_PROPERTIES}
    sc.setJobGroup(group, "tfrecord-io images", False)
    total = sum(len(set_shards) for set_shards in planned.values())
    # Spark's own console bar (on in Spark applications started from Python, as pyspark-shell)
    # already shows the tasks: one bar is enough.
    spark_bar = sc.getConf().get("spark.ui.showConsoleProgress", "false").lower() == "true"
    try:
        with _SparkProgress(sc, group, total, progress and not spark_bar):
            for name, set_shards in planned.items():
                # Partition k is shard k (one element each): part-r-0000k is shard k, as when
                # local.
                rdd = sc.parallelize(set_shards, len(set_shards)).mapPartitions(
                    functools.partial(_spark_shard, on_corrupt=on_corrupt, skipped=skipped)
                )
                log.info("Writing %s with Spark (%d tasks)", name, len(set_shards))
                try:
                    tfs.save_records(rdd, fs.as_url(fs.join(staging, name)),
                                     None if kind == codec.NONE else kind)
                except Exception as exc:  # a task's damaged image arrives as Java text
                    damage = _DAMAGE_IN_TASK.search(str(exc))
                    if damage is None:
                        raise
                    raise DamagedImageError(damage.group(1).strip()) from None
    finally:
        for key, value in saved.items():
            sc.setLocalProperty(key, value)
    return list(skipped.value)


# The local properties SparkContext.setJobGroup sets, restored afterwards.
_JOB_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description",
                         "spark.job.interruptOnCancel")


class _SparkProgress:
    """A progress bar (tqdm) of the shards written by the Spark jobs of job group *group*, read
    from Spark's status tracker twice a second by a thread of its own; nothing if not
    *enabled*."""

    def __init__(self, sc: Any, group: str, total: int, enabled: bool) -> None:
        self._sc, self._group, self._total = sc, group, total
        self._enabled = enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None

    def __enter__(self) -> _SparkProgress:
        if self._enabled:
            from tqdm.auto import tqdm  # noqa: PLC0415 - only when shown

            self._bar = tqdm(total=self._total, unit=" shards", desc="images (Spark)",
                             dynamic_ncols=True)
            self._thread = threading.Thread(target=self._poll, name="images-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def _done(self) -> int:
        tracker = self._sc.statusTracker()
        done = 0
        for job in tracker.getJobIdsForGroup(self._group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info is not None else ():
                stage_info = tracker.getStageInfo(stage)
                if stage_info is not None:
                    done += stage_info.numCompletedTasks
        return done

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            with contextlib.suppress(Exception):  # the status tracker is best effort
                self._bar.update(min(self._done(), self._total) - self._bar.n)

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if exc[0] is None:
                self._bar.update(self._total - self._bar.n)
            self._bar.close()


# --------------------------------------------------------------------------------------------
# Test data


def write_png_folders(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    split: str = "test",
    limit: int | None = None,
) -> int:
    """Write an MNIST set as a class-per-folder tree of PNG files: ``OUTPUT/<digit>/NNNNN.png``
    (grayscale, 28x28; NNNNN the image's index in the set), something to try
    :func:`convert` on.

    The digit folders are written under a hidden temporary directory in OUTPUT first and moved
    into place at the end, replacing the digit folders of an earlier run: OUTPUT then holds the
    images of this run only, and a failed run leaves no digit folder behind (and removes OUTPUT
    if it made it).

    Args:
        source: the MNIST IDX files (see :func:`tfrecord_io.datasets.mnist.load`).
        output: the tree's root, local or ``hdfs://``; created if missing.
        split: ``"test"`` or ``"train"``.
        limit: write only the first *limit* images of the set.

    Returns:
        How many files were written.

    Raises:
        MnistError: *source* has no such set, or bad MNIST files.
    """
    image_module = require("PIL.Image", "tfrecord_io.datasets.images.write_png_folders")
    found = {s.name: s for s in mnist.load(source)}
    if split not in found:
        raise MnistError(f"{source}: no {split} set (found: {', '.join(found) or 'none'})")
    data = found[split]
    n = len(data) if limit is None else min(limit, len(data))
    output = os.fspath(output)
    digits = [str(d) for d in sorted(set(data.labels[:n].tolist()))]
    every_digit = [str(d) for d in sorted(set(data.labels.tolist()) | set(range(10)))]
    with fs.staging_directory(output, "png") as staging:
        for digit in digits:
            fs.makedirs(fs.join(staging, digit))
        for i in range(n):
            buffer = io.BytesIO()
            image_module.fromarray(data.images[i]).save(buffer, "PNG")
            with fs.open(fs.join(staging, str(int(data.labels[i])), f"{i:05d}.png"), "wb") as f:
                f.write(buffer.getvalue())
        fs.publish(staging, digits, replacing=every_digit)
    return n
