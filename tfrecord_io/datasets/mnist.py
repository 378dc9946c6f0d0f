"""MNIST in its IDX files -> TFRecord shards of ``tf.train.Example``.

The engine of ``tfrecord-io mnist``; usable from Python too::

    from tfrecord_io.datasets import mnist

    result = mnist.convert("data/mnist", "hdfs://nn:8020/data/mnist-tfr", shards=10)
    print(result.summary())

Inputs (:func:`load`): a directory -- local, ``hdfs://`` or ``webhdfs://`` -- or an
``http(s)://`` base URL (a public mirror) holding the standard files, gzipped or not::

    train-images-idx3-ubyte[.gz]  train-labels-idx1-ubyte[.gz]   -> the "train" set
    t10k-images-idx3-ubyte[.gz]   t10k-labels-idx1-ubyte[.gz]    -> the "test" set

(also spelled ``train-images.idx3-ubyte``). Whichever sets are present are converted. Gzip is
recognized by content, not by name. Every file is parsed and checked -- magic numbers, sizes
against the header, image and label counts -- before anything is written.

Records (:func:`encode`): ``label`` (int64), ``image`` -- ``"int64"``: the 784 pixels as an
int64 list (what TensorFlowOnSpark's MNIST example parses); ``"bytes"``: the raw 784-byte
string (``tf.io.decode_raw(x, tf.uint8)``); ``"float"``: ``float32(pixel) / 255`` in [0, 1] --
plus ``height`` and ``width`` (int64, 28 and 28) to reshape the flat image with.

Output (:func:`convert`): ``OUTPUT/train`` and ``OUTPUT/test`` (local or ``hdfs://``), each with
``part-r-NNNNN.tfrecord`` shards (``.gz``/``.deflate`` when compressed), the split index
``_part-r-NNNNN.tfrecord.tfindex`` of each uncompressed shard, and ``_SUCCESS`` -- the layout
:func:`tfrecord_io.spark.save_records` writes. Shard *k* holds a contiguous range of the set, so
reading the shards in name order gives the records in their original order. Everything is
written under a hidden temporary directory in OUTPUT first and moved into place at the end: a
failed conversion leaves no set directory behind.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfrecord_io import compression as codec
from tfrecord_io import fs
from tfrecord_io import records as _records
from tfrecord_io.datasets import mnist_files as _files
from tfrecord_io.datasets.idx import SPLITS, candidate_names, parse_idx
from tfrecord_io.errors import MnistError
from tfrecord_io.example import encode_example

__all__ = [
    "IMAGE_FORMATS",
    "SPLITS",
    "MnistError",
    "Split",
    "MnistConversion",
    "candidate_names",
    "parse_idx",
    "load",
    "encode",
    "shard_name",
    "convert",
]

log = logging.getLogger(__name__)

#: Values of ``image_format``.
IMAGE_FORMATS = ("int64", "bytes", "float")

_SHARD_SUFFIX = {"none": "", "gzip": ".gz", "zlib": ".deflate"}


@dataclass(frozen=True)
class Split:
    """One MNIST set, parsed.

    Attributes:
        name: ``"train"`` or ``"test"``.
        images: ``uint8`` array of shape (n, rows, cols).
        labels: ``uint8`` array of shape (n,).
        images_source, labels_source: where they were read from.
    """

    name: str
    images: np.ndarray
    labels: np.ndarray
    images_source: str = ""
    labels_source: str = ""

    def __len__(self) -> int:
        return int(self.labels.shape[0])


@dataclass
class MnistConversion:
    """What :func:`convert` wrote.

    Attributes:
        output: the OUTPUT directory.
        records: set name -> number of records, in conversion order.
        shards: number of shard files written, all sets together.
        bytes: total size of those shard files (as stored, i.e. compressed if compressed).
        seconds: wall time of the whole conversion, reading the inputs included.
    """

    output: str
    records: dict[str, int] = field(default_factory=dict)
    shards: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """One line for humans, e.g. ``10000 records (test 10000), 1 shard, ... -> out``."""
        total = sum(self.records.values())
        sets = ", ".join(f"{name} {n}" for name, n in self.records.items())
        shards = f"{self.shards} shard{'' if self.shards == 1 else 's'}"
        return (
            f"{total} records ({sets}), {shards}, {self.bytes} bytes, "
            f"{self.seconds:.1f} s -> {self.output}"
        )


#: The former name of :class:`MnistConversion` (``Result`` also names a cluster's outcome).
Result = MnistConversion


# --------------------------------------------------------------------------------------------
# Reading IDX files


def load(location: str | os.PathLike[str]) -> list[Split]:
    """Find, read and check the MNIST sets present at *location*.

    Args:
        location: local directory, ``hdfs://``/``webhdfs://``/``s3://`` directory, or
            ``http(s)://`` base URL (files are then requested by their candidate names).

    Returns:
        The sets found, train first; each checked (magic numbers, sizes, equal counts).

    Raises:
        MnistError: no set found, a set with images but no labels (or the reverse), a
            malformed file, or an unreachable location.
    """
    location = os.fspath(location)
    kind = _files.input_kind(location)
    names = None if kind == "http" else _files.list_names(location)
    base = location if location.endswith("/") or kind != "http" else location + "/"
    splits = []
    for split in SPLITS:
        found: dict[str, tuple[str, bytes]] = {}
        for part in ("images", "labels"):
            for name in candidate_names(split, part):
                url = fs.join(base, name) if kind != "http" else base + name
                if names is not None:
                    if name in names:
                        log.info("Reading %s", url)
                        found[part] = (url, _files.read_file(url))
                        break
                else:
                    data = _files.fetch(url)
                    if data is not None:
                        log.info("Downloaded %s", url)
                        found[part] = (url, data)
                        break
        if not found:
            continue
        if len(found) == 1:
            (present, (url, _)), = found.items()
            missing = "labels" if present == "images" else "images"
            raise MnistError(
                f"{location}: found {url} but no {missing} file for the {split} set "
                f"(looked for {', '.join(candidate_names(split, missing))})"
            )
        images_url, images_data = found["images"]
        labels_url, labels_data = found["labels"]
        images = parse_idx(images_data, images_url, "images")
        del images_data
        labels = parse_idx(labels_data, labels_url, "labels")
        if images.shape[0] != labels.shape[0]:
            raise MnistError(
                f"{images_url} has {images.shape[0]} images but {labels_url} has "
                f"{labels.shape[0]} labels"
            )
        splits.append(Split(split, images, labels, images_url, labels_url))
    if not splits:
        expected = ", ".join(
            candidate_names("train", "images")[:2] + candidate_names("test", "images")[:2]
        )
        raise MnistError(
            f"{location}: no MNIST files found (expected {expected} and their labels files)"
        )
    return splits


# --------------------------------------------------------------------------------------------
# Records


def encode(images: np.ndarray, labels: np.ndarray, image_format: str = "int64") -> Iterator[bytes]:
    """Serialize MNIST images and labels as ``tf.train.Example`` records, in order.

    Args:
        images: ``uint8`` array of shape (n, rows, cols).
        labels: integer array of shape (n,).
        image_format: ``"int64"`` (pixels 0..255 as an int64 list), ``"bytes"`` (the
            ``rows*cols`` raw bytes) or ``"float"`` (``float32(pixel) / 255``).

    Yields:
        One serialized Example per image with features ``label``, ``image``, ``height``
        (rows) and ``width`` (cols).
    """
    if image_format not in IMAGE_FORMATS:
        raise ValueError(
            f"image_format must be one of {', '.join(IMAGE_FORMATS)}, not {image_format!r}"
        )
    n, rows, cols = images.shape
    flat = images.reshape(n, rows * cols)
    scale = np.float32(255.0)
    for label, pixels in zip(labels.tolist(), flat, strict=True):
        if image_format == "int64":
            image: Any = pixels.astype(np.int64)
        elif image_format == "bytes":
            image = pixels.tobytes()
        else:
            image = pixels.astype(np.float32) / scale
        yield encode_example({"label": label, "image": image, "height": rows, "width": cols})


def shard_name(k: int, compression: str | None = None) -> str:
    """``part-r-NNNNN.tfrecord`` (``.gz`` for gzip, ``.deflate`` for zlib), as Spark names them."""
    kind = codec.normalize(compression) or codec.NONE
    return f"part-r-{k:05d}.tfrecord{_SHARD_SUFFIX[kind]}"


def _shard_bounds(n: int, shards: int) -> list[tuple[int, int]]:
    """Contiguous, near-equal ranges: shard k gets records [k*n//shards, (k+1)*n//shards)."""
    return [(k * n // shards, (k + 1) * n // shards) for k in range(shards)]


def _shard_task(shard: int, shards: int, data: Any, image_format: str) -> Iterator[bytes]:
    """Spark task body: shard *shard*'s records, from the set broadcast as
    ``(rows, cols, pixels, labels)``."""
    rows, cols, pixels, labels = data.value
    n = len(labels)
    lo, hi = _shard_bounds(n, shards)[shard]
    label_array = np.frombuffer(labels, dtype=np.uint8)[lo:hi]
    images = np.frombuffer(pixels, dtype=np.uint8).reshape(n, rows, cols)[lo:hi]
    return encode(images, label_array, image_format)


# --------------------------------------------------------------------------------------------
# Conversion


def convert(
    source: str | os.PathLike[str] | Sequence[Split],
    output: str | os.PathLike[str],
    *,
    shards: int = 1,
    compression: str | None = None,
    image_format: str = "int64",
    spark: Any = None,
    overwrite: bool = False,
    progress: bool = False,
) -> MnistConversion:
    """Convert MNIST to TFRecord shards under ``OUTPUT/train`` and ``OUTPUT/test``.

    Args:
        source: where the IDX files are (see :func:`load`), or already loaded sets.
        output: the output directory, local or ``hdfs://``; created if missing.
        shards: number of shard files per set (contiguous ranges, in order).
        compression: None/``"none"``, ``"gzip"`` or ``"zlib"``.
        image_format: ``"int64"``, ``"bytes"`` or ``"float"`` (see :func:`encode`).
        spark: a SparkSession or SparkContext to encode and write with, as a Spark job through
            tfrecord-io's OutputFormat (:func:`tfrecord_io.spark.save_records`): one task per
            shard. None: encode and write in this process.
        overwrite: replace existing ``OUTPUT/<set>`` directories instead of failing; an
            ``OUTPUT/train`` or ``OUTPUT/test`` of an earlier run that this one does not write
            is removed too.
        progress: show a progress bar (tqdm, on stderr) while writing locally.

    Returns:
        What was written (:class:`MnistConversion`).

    Raises:
        MnistError: bad inputs (see :func:`load`), sets given that cannot be written (two of
            one name, a name that is not a directory name, images and labels that are not
            ``uint8`` or not as many), or an ``OUTPUT/<set>`` (one written, or ``OUTPUT/train``
            or ``OUTPUT/test`` of an earlier run) that exists without *overwrite*.
            Nothing is left in OUTPUT's set directories when anything fails.
        ValueError: a bad argument.
    """
    started = time.monotonic()
    if not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shards must be a positive integer, not {shards!r}")
    kind = codec.normalize(compression) or codec.NONE
    if image_format not in IMAGE_FORMATS:
        raise ValueError(
            f"image_format must be one of {', '.join(IMAGE_FORMATS)}, not {image_format!r}"
        )
    splits = list(source) if not isinstance(source, (str, os.PathLike)) else load(source)
    _check_splits(splits)
    output = os.fspath(output)
    out = _files.OutputDir(output)
    if fs.exists(out.path) and not fs.isdir(out.path):
        raise MnistError(f"{output}: exists and is not a directory")
    # A set of an earlier run that this one does not write counts too: OUTPUT would hold sets
    # of two runs (two image formats, two sources).
    for name in dict.fromkeys([*(split.name for split in splits), *SPLITS]):
        target = fs.join(out.path, name)
        if fs.exists(target) and not overwrite:
            raise MnistError(
                f"{target} already exists; remove it or pass --overwrite (overwrite=True)"
            )

    result = MnistConversion(output=output)
    with fs.staging_directory(out.path, "mnist") as staging:
        if spark is not None:
            _write_with_spark(spark, splits, out, staging, shards, kind, image_format)
        else:
            _write_locally(splits, out, staging, shards, kind, image_format, progress)
        for split in splits:
            for k in range(shards):
                result.bytes += fs.stat(fs.join(staging, split.name, shard_name(k, kind))).size
            result.records[split.name] = len(split)
            result.shards += shards
        # With overwrite, a set of an earlier run that this one does not write goes too: a
        # reader of OUTPUT never gets sets of two runs (two image formats, two sources).
        fs.publish(staging, [split.name for split in splits],
                   replacing=SPLITS if overwrite else ())
    result.seconds = time.monotonic() - started
    return result


def _check_splits(splits: Sequence[Split]) -> None:
    """Refuse sets given to :func:`convert` that cannot be written as they are: a name that is
    not one directory name (``OUTPUT/<name>``) or that two sets share, images that are not
    ``uint8`` of shape (n, rows, cols), labels that are not ``uint8`` of shape (n,).

    Raises:
        MnistError: naming the set; before anything is written.
    """
    seen: set[str] = set()
    for split in splits:
        name = split.name
        if (not isinstance(name, str) or name in ("", ".", "..") or name.startswith(".")
                or "/" in name or "\\" in name):
            raise MnistError(
                f"a set named {name!r}: not usable as a directory name (OUTPUT/<set>); "
                "give a name such as train or test"
            )
        if name in seen:
            raise MnistError(f"two sets named {name!r}: each set is written to OUTPUT/{name}")
        seen.add(name)
        images, labels = np.asarray(split.images), np.asarray(split.labels)
        if images.dtype != np.uint8 or images.ndim != 3:
            raise MnistError(
                f"the {name} set's images are {images.dtype} of shape {images.shape}: "
                "expected uint8 of shape (n, rows, cols)"
            )
        if labels.dtype != np.uint8 or labels.ndim != 1:
            raise MnistError(
                f"the {name} set's labels are {labels.dtype} of shape {labels.shape}: "
                "expected uint8 of shape (n,)"
            )
        if images.shape[0] != labels.shape[0]:
            raise MnistError(
                f"the {name} set has {images.shape[0]} images but {labels.shape[0]} labels"
                + (f" ({split.images_source}, {split.labels_source})"
                   if split.images_source or split.labels_source else "")
            )


def _write_locally(
    splits: Sequence[Split],
    out: _files.OutputDir,
    staging: str,
    shards: int,
    kind: str,
    image_format: str,
    progress: bool,
) -> None:
    from tqdm import tqdm  # noqa: PLC0415 - loaded when converting

    total = sum(len(s) for s in splits)
    with tqdm(total=total, unit=" rec", disable=not progress, desc="mnist", leave=False) as bar:
        for split in splits:
            directory = fs.join(staging, split.name)
            fs.makedirs(directory)
            for k, (lo, hi) in enumerate(_shard_bounds(len(split), shards)):
                records = encode(split.images[lo:hi], split.labels[lo:hi], image_format)
                _records.write(
                    fs.join(directory, shard_name(k, kind)),
                    _counted(records, bar.update),
                    kind,
                    index=kind == codec.NONE,
                )
            with fs.open(fs.join(directory, "_SUCCESS"), "wb"):
                pass
            log.debug("Wrote %d records of %s in %d shards", len(split), split.name, shards)


def _counted(
    records: Iterator[bytes], update: Callable[[int], Any], every: int = 500
) -> Iterator[bytes]:
    n = 0
    for record in records:
        yield record
        n += 1
        if n == every:
            update(n)
            n = 0
    if n:
        update(n)


def _write_with_spark(
    spark: Any,
    splits: Sequence[Split],
    out: _files.OutputDir,
    staging: str,
    shards: int,
    kind: str,
    image_format: str,
) -> None:
    from tfrecord_io import spark as tfs  # noqa: PLC0415 - pyspark, the `spark` extra

    sc = getattr(spark, "sparkContext", spark)
    for split in splits:
        _, rows, cols = split.images.shape
        # The set goes to the executors as a broadcast; task k encodes shard k's contiguous
        # range of it, so partition k -- part-r-0000k -- is exactly shard k, as when local.
        data = sc.broadcast((rows, cols, split.images.tobytes(), split.labels.tobytes()))
        try:
            rdd = sc.parallelize(range(shards), shards).flatMap(
                functools.partial(_shard_task, shards=shards, data=data, image_format=image_format)
            )
            log.info("Writing %s with Spark (%d tasks)", split.name, shards)
            tfs.save_records(
                rdd, out.hadoop_url(fs.join(staging, split.name)), None if kind == "none" else kind
            )
        finally:
            data.destroy()
