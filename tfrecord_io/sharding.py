"""Which reader reads what: exact, coordination-free sharding of TFRecord inputs, without
TensorFlow.

Sharding (:func:`shard_plan`)
-----------------------------
With ``num_shards=N`` every record of the input is read by exactly one of the N readers. The
plan is computed from the listing alone, identically in every process, with no coordination:

* ``N == 1``: all files, whole.
* At least N files: whole files are dealt out, balanced by size: largest first, each to the
  shard with the fewest bytes so far (ties: lowest shard number). Files of equal size are
  therefore dealt round-robin. A shard reads its files in path order.
* Fewer files than N: uncompressed files with a valid split index (``_NAME.tfindex``, see
  ``docs/index-format.md``) are cut into byte ranges on record boundaries, so that N readers
  can share even a single big file. The N - #files extra pieces go one at a time to the file
  whose pieces are currently largest; each file is then cut into equal byte ranges
  (:func:`tfrecord_io.index.split_ranges`). Compressed files and files without a valid index
  cannot be cut and stay whole. Piece ``j`` (in path, then offset order) goes to shard ``j``.
  When there are fewer pieces than shards (few uncut files, or fewer records than shards) the
  last shards get nothing: their datasets are empty, and a warning is logged.

The listing must be the same for every reader: do not shard a directory that is still being
written to.

:mod:`tfrecord_io.tf` reads the plan's pieces; any other reader (PyTorch, a cluster launcher)
can use it the same way.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tfrecord_io import compression as codec
from tfrecord_io import fs
from tfrecord_io import index as _index
from tfrecord_io.fs import FileInfo
from tfrecord_io.fs.expand import Paths

__all__ = ["Piece", "list_files", "shard_plan", "plan", "balance", "check_shards"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Piece:
    """One unit of reading: a whole file, or a byte range of an uncompressed indexed file.

    Attributes:
        path: local path or URL (``hdfs://``, ``webhdfs://``, ``s3://``, ...).
        compression: ``"none"``, ``"gzip"`` or ``"zlib"``.
        start: byte offset of the first record (0 for a whole file).
        end: end of the range (exclusive: the records starting in ``[start, end)``), or None for
            a whole file.
        size: bytes covered: the file's size for a whole file, ``end - start`` for a range.
    """

    path: str
    compression: str
    start: int = 0
    end: int | None = None
    size: int = 0

    @property
    def whole(self) -> bool:
        """Whether the piece is a whole file."""
        return self.start == 0 and self.end is None

    @property
    def remote(self) -> bool:
        """Whether the piece is not on a local disk (HDFS, an object store, ...)."""
        return not fs.is_local(self.path)


def check_shards(num_shards: Any, shard_index: Any = 0) -> None:
    """ValueError unless *num_shards* is a positive int and *shard_index* in ``[0, num_shards)``."""
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
        raise ValueError(f"num_shards must be a positive int, not {num_shards!r}")
    if (
        isinstance(shard_index, bool)
        or not isinstance(shard_index, int)
        or not 0 <= shard_index < num_shards
    ):
        raise ValueError(
            f"shard_index must be an int in [0, {num_shards}) for num_shards={num_shards}, "
            f"not {shard_index!r}"
        )


def balance(sizes: Sequence[int], num_shards: int) -> list[list[int]]:
    """Deal items (by index) to shards: largest first, to the least loaded shard."""
    loads = [(0, s) for s in range(num_shards)]
    shards: list[list[int]] = [[] for _ in range(num_shards)]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        load, s = heapq.heappop(loads)
        shards[s].append(i)
        heapq.heappush(loads, (load + sizes[i], s))
    for members in shards:
        members.sort()
    return shards


def plan(files: Sequence[FileInfo], compression: str | None, num_shards: int) -> list[list[Piece]]:
    """The shards of listed *files* (sorted, no duplicates), by the rules of the module docs."""
    kinds = [codec.resolve(compression, f.url) for f in files]
    whole = [Piece(f.url, k, 0, None, f.size) for f, k in zip(files, kinds, strict=True)]
    if num_shards == 1:
        return [whole]
    if len(files) >= num_shards:
        shards = balance([f.size for f in files], num_shards)
        return [[whole[i] for i in members] for members in shards]

    # Fewer files than shards: cut the indexed ones.
    entries: list[list[tuple[int, int]] | None] = []
    for f, kind in zip(files, kinds, strict=True):
        e = None
        if kind == codec.NONE and f.size > 0:
            e = _index.load_index(f.url, f.size)
            if e is not None and len(e) < 2:
                e = None
            if e is None:
                log.info("%s cannot be cut into byte ranges: it has no valid index", f.url)
        entries.append(e)
    counts = [1] * len(files)
    for _ in range(num_shards - len(files)):
        best = -1
        for i, e in enumerate(entries):
            if e is None or counts[i] >= len(e):
                continue
            # the file whose pieces are largest: size_i / counts_i, compared exactly
            if best < 0 or files[i].size * counts[best] > files[best].size * counts[i]:
                best = i
        if best < 0:
            break
        counts[best] += 1
    pieces: list[Piece] = []
    for i, f in enumerate(files):
        e = entries[i]
        if e is None or counts[i] == 1:
            pieces.append(whole[i])
        else:
            pieces.extend(
                Piece(f.url, codec.NONE, start, end, end - start)
                for start, end in _index.split_ranges(e, counts[i])
            )
    return [[pieces[j]] if j < len(pieces) else [] for j in range(num_shards)]


def shard_plan(
    paths: Paths, compression: str | None = None, num_shards: int = 1
) -> list[list[Piece]]:
    """What each of *num_shards* readers reads: one list of :class:`Piece` per shard.

    Deterministic: computed from the listing (and, when files are cut, their indexes) alone.
    Every record of the input is in exactly one piece of one shard. See the module docs for the
    rules. Arguments and errors are those of :func:`tfrecord_io.tf.dataset`.
    """
    check_shards(num_shards)
    codec.normalize(compression)  # ValueError for a bad name, before any listing
    return plan(fs.expand(paths, detail=True), compression, num_shards)


def list_files(paths: Paths) -> list[str]:
    """The data files named by *paths*, as every reader of tfrecord-io lists them: files,
    directories (recursively, names starting with ``_`` or ``.`` skipped) and globs, local or
    remote; see :func:`tfrecord_io.fs.expand` for the rules.

    Raises:
        InputNotFoundError: a local path does not exist, or a glob matches nothing.
        HdfsFileNotFoundError: an HDFS path does not exist (both are ``FileNotFoundError``).
        ValueError: an empty path, or a URL scheme no file system serves.
    """
    return fs.expand(paths)
