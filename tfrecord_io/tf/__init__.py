"""TensorFlow input pipelines over TFRecord files on local disk, on HDFS and in object stores.

TensorFlow 2.21 has no ``hdfs://``, ``s3://`` or Azure file system. :func:`dataset` reads
TFRecord files from local paths, globs, directories of ``part-*`` shards and URLs of every
scheme :mod:`tfrecord_io.fs` serves (``hdfs://``, ``webhdfs://``, ``s3://``, ``gs://``,
``az://``, ``abfs://``, ``http(s)://``) into a ``tf.data.Dataset`` of serialized records, and
splits the input among several readers::

    from tfrecord_io import tf as tfr

    records = tfr.dataset("hdfs://namenode:8020/data/train")        # every part file
    examples = tfr.parse_examples(records, batch_size=256)          # dicts of tensors
    model.fit(examples.map(lambda f: (f["x"], f["y"])), epochs=3)

    # worker k of N (e.g. from tf.distribute's InputContext) reads its share only:
    records = tfr.dataset(url, num_shards=N, shard_index=k)

Inputs (:func:`list_files`)
---------------------------
A path/URL or a list of them. Each may be a file (taken as given, whatever its name), a
directory (all the files below it, recursively), or a glob (``*``, ``?``, ``[...]``; matches that
are directories are expanded too). Names starting with ``_`` or ``.`` are skipped inside
directories and in glob matches: ``_SUCCESS``, the ``_NAME.tfindex`` split indexes, Hadoop's
``.crc`` files, ``_temporary``. The files are sorted by path and duplicates dropped, so every
process lists the same input in the same order. A missing path, or a glob matching nothing,
raises :class:`InputNotFoundError` (for ``hdfs://`` paths the
:class:`~tfrecord_io.errors.HdfsFileNotFoundError`, for object stores the
:class:`~tfrecord_io.errors.ObjectStoreFileNotFoundError`); all are ``FileNotFoundError`` and
:class:`~tfrecord_io.errors.TFRecordError`. An existing directory
holding no data files gives an empty dataset (and a warning).

Compression: ``None`` detects it per file from the name (``.gz`` GZIP; ``.deflate``, ``.zlib``,
``.zz`` ZLIB; else none), or ``"gzip"`` / ``"zlib"`` / ``"none"`` (any case, so TensorFlow's
``"GZIP"`` works) applies to every file.

Sharding (:func:`shard_plan`)
-----------------------------
With ``num_shards=N`` every record of the input is read by exactly one of the N readers; the
plan is computed from the listing alone, identically in every process, with no coordination.
The rules (whole files dealt by size, indexed files cut into byte ranges when there are fewer
files than readers) are those of :mod:`tfrecord_io.sharding`, which works without TensorFlow.

HDFS and object stores inside TensorFlow (:func:`register_filesystems`)
-----------------------------------------------------------------------
After :func:`register_filesystems` (which :func:`dataset` calls for inputs of these schemes)
TensorFlow itself takes ``hdfs://``, ``webhdfs://``, ``s3://``, ``az://``, ``abfs(s)://`` and
``http(s)://`` URLs, through tfrecord-io's file system plugin: see :mod:`tfrecord_io.tf.plugin`.
``gs://`` is TensorFlow's own.

Reading
-------
Whole files, local or served by the plugin, are read by TensorFlow's own
``tf.data.TFRecordDataset`` (C++): local ones with TensorFlow's default 256 KiB buffer (larger
buffers measured slower: the buffer stops fitting in the CPU cache), remote ones through the
plugin above in reads of 8 MiB, which its read-ahead fetches while TensorFlow parses. Byte ranges,
``on_corrupt="skip"``, ``reader="python"``, and remote files when the plugin is missing are read
by tfrecord-io in a ``Dataset.from_generator``:
it reads ``chunk_bytes`` (1 MiB) at a time (from HDFS through :mod:`tfrecord_io.fs`, which
fails over to another replica when a DataNode dies), walks the record framing, checks the
length and data CRCs (as TensorFlow does), and hands TensorFlow the chunk with the offsets and
lengths of its records, which ``tf.strings.substr`` cuts out in C++ -- no Python object per
record. The elements are the same either way: scalar ``tf.string`` tensors, in file order (and
range order) within a shard, unless ``num_parallel_reads`` interleaves files.

Damaged data raises (TensorFlow's ``DataLossError`` for files read natively, a
``tf.errors.OpError`` carrying the :class:`~tfrecord_io.errors.CorruptRecordError` message for the
others), or with ``on_corrupt="skip"`` (our reader only, so it forces ``reader="python"``) is
skipped with a warning. TensorFlow's reader (2.21) allocates what a record's header announces
before reading it: a crafted file whose header, with a valid checksum, announces terabytes ends
the process (a segmentation fault). Read files you do not trust with ``reader="python"``, which
refuses a record longer than :data:`~tfrecord_io.records.DEFAULT_MAX_RECORD_BYTES` (256 MiB),
naming the file and byte offset. TensorFlow's reader also names no file in its
``DataLossError`` (only the offset), and ends a file cut inside a record's 12-byte header without
any error: that last record is lost silently. ``reader="python"`` reports both, naming the file
and byte offset, and ``tfrecord-io verify`` checks whole directories of files.

Cost per record, measured: ``bench/README.md`` (``bench/tf_hdfs.py``). To go faster, shard
the input over more reader processes (``num_shards``); ``num_parallel_reads`` costs more per
record than it saves unless records are large or reads are slow.

With ``tf.distribute``, pass ``num_shards=input_context.num_input_pipelines`` and
``shard_index=input_context.input_pipeline_id``. A dataset of one shard of several has
tf.data's own auto-sharding off (``tf.data.experimental.AutoShardPolicy.OFF``), since it is
sharded already: ``experimental_distribute_dataset`` does not shard it again.

Only this package imports TensorFlow (:mod:`tfrecord_io.tf.runtime`), and only when a function
that needs it is called: :func:`list_files`, :func:`shard_plan` and :class:`Piece` (from
:mod:`tfrecord_io.sharding`) work without it.

Modules: :mod:`~tfrecord_io.tf.datasets` (:func:`dataset`, :func:`parse_examples`),
:mod:`~tfrecord_io.tf.chunks` (tfrecord-io's chunk reader), :mod:`~tfrecord_io.tf.features`
(:func:`infer_features`), :mod:`~tfrecord_io.tf.plugin` (:func:`register_filesystems`) and
:mod:`~tfrecord_io.tf.filesystem` (the plugin's Python callbacks).
"""

from __future__ import annotations

from tfrecord_io.errors import InputNotFoundError
from tfrecord_io.fs.expand import PathLike, Paths
from tfrecord_io.sharding import Piece, list_files, shard_plan
from tfrecord_io.tf.chunks import DEFAULT_CHUNK_BYTES
from tfrecord_io.tf.datasets import dataset, parse_examples
from tfrecord_io.tf.features import DEFAULT_SAMPLE, infer_features
from tfrecord_io.tf.plugin import register_filesystems

__all__ = [
    "InputNotFoundError",
    "Piece",
    "list_files",
    "shard_plan",
    "dataset",
    "register_filesystems",
    "infer_features",
    "parse_examples",
    "DEFAULT_CHUNK_BYTES",
    "DEFAULT_SAMPLE",
    "Paths",
    "PathLike",
]
