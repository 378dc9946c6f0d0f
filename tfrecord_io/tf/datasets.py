"""``tf.data`` pipelines: :func:`dataset` (serialized records of a shard) and
:func:`parse_examples`.

Whole files, local or at a URL that the plugin serves inside TensorFlow (``hdfs://``,
``s3://``, ...), are read by TensorFlow's own ``tf.data.TFRecordDataset``; byte ranges and the
other cases by :mod:`tfrecord_io.tf.chunks` inside ``Dataset.from_generator``.
See :mod:`tfrecord_io.tf` for the rules.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tfrecord_io import compression as codec
from tfrecord_io import fs
from tfrecord_io.errors import SchemaError
from tfrecord_io.fs.expand import Paths
from tfrecord_io.sharding import Piece, check_shards, shard_plan
from tfrecord_io.tf.chunks import DEFAULT_CHUNK_BYTES, read_chunks, read_chunks_skipping
from tfrecord_io.tf.features import DEFAULT_SAMPLE, infer_features
from tfrecord_io.tf.filesystem import expect_reads
from tfrecord_io.tf.plugin import filesystems_in_tensorflow, serves
from tfrecord_io.tf.runtime import import_tensorflow

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

__all__ = ["dataset", "parse_examples"]

log = logging.getLogger(__name__)

_TF_COMPRESSION = {
    codec.NONE: "",
    codec.GZIP: "GZIP",
    codec.ZLIB: "ZLIB",
}


#: TensorFlow's reader's buffer for remote files when ``dataset`` is given none. TensorFlow's
#: own default for a file system other than the local one is 127 MiB, one read per file of most
#: datasets: the next bytes are fetched only once the records read are parsed, never meanwhile.
#: In 8 MiB reads, the plugin's read-ahead (in C++ for HDFS, in :mod:`tfrecord_io.fs` for
#: object stores) fetches while TensorFlow parses (``bench/tf_hdfs.py``, ``bench/s3.py``).
REMOTE_BUFFER_BYTES = 8 << 20


def _native_dataset(
    tf: Any, pieces: Sequence[Piece], parallel: int, buffer_size: int | None
) -> Any:
    if buffer_size is None and any(p.remote for p in pieces):
        buffer_size = REMOTE_BUFFER_BYTES
    names = [fs.split_url(p.path)[1] for p in pieces]
    types = [_TF_COMPRESSION[p.compression] for p in pieces]
    if parallel <= 1:
        expect_reads(names)  # each remote file opened while TensorFlow parses the one before
    if len(set(types)) == 1:
        return tf.data.TFRecordDataset(
            names,
            compression_type=types[0],
            buffer_size=buffer_size,
            num_parallel_reads=parallel if parallel > 1 else None,
        )
    files = tf.data.Dataset.from_tensor_slices((names, types))

    def read(name: Any, kind: Any) -> Any:
        return tf.data.TFRecordDataset(name, kind, buffer_size)

    if parallel == 1:
        return files.flat_map(read)
    return files.interleave(
        read,
        cycle_length=parallel,
        block_length=1,
        num_parallel_calls=parallel,
        deterministic=True,
    )


def _python_dataset(
    tf: Any,
    pieces: Sequence[Piece],
    parallel: int,
    verify: bool,
    on_corrupt: str,
    chunk_bytes: int,
) -> Any:
    pieces = list(pieces)
    make_chunks = read_chunks_skipping if on_corrupt == "skip" else read_chunks
    signature = (
        tf.TensorSpec(shape=[], dtype=tf.string),
        tf.TensorSpec(shape=[None], dtype=tf.int64),
        tf.TensorSpec(shape=[None], dtype=tf.int64),
    )

    def generate(i: Any) -> Iterator[tuple[bytes, Any, Any]]:
        return make_chunks(pieces[int(i)], verify, chunk_bytes)

    def one(i: Any) -> Any:
        return tf.data.Dataset.from_generator(generate, args=(i,), output_signature=signature)

    if len(pieces) == 1:
        chunks = one(0)
    else:
        ids = tf.data.Dataset.range(len(pieces))
        if parallel > 1:
            chunks = ids.interleave(
                one,
                cycle_length=parallel,
                block_length=1,
                num_parallel_calls=parallel,
                deterministic=True,
            )
        else:
            chunks = ids.flat_map(one)
    # The generator runs ahead in a tf.data thread; records are cut out of each chunk in C++.
    return (
        chunks.prefetch(2)
        .map(lambda buf, starts, lengths: tf.strings.substr(buf, starts, lengths))
        .unbatch()
    )


def dataset(
    paths: Paths,
    compression: str | None = None,
    num_shards: int = 1,
    shard_index: int = 0,
    *,
    num_parallel_reads: int | None = None,
    verify: bool = True,
    on_corrupt: str = "fail",
    reader: str = "auto",
    buffer_size: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of the serialized records (scalar ``tf.string``) of TFRecord files.

    Args:
        paths: a local path or a URL of any scheme :mod:`tfrecord_io.fs` serves (``file://``,
            ``hdfs://``, ``webhdfs://``, ``s3://``, ``gs://``, ``az://``, ...), glob or
            directory, or a list of them (see the module docs).
        compression: None to detect per file from its name, or ``"gzip"``, ``"zlib"``,
            ``"none"`` (any letter case) for every file.
        num_shards: how many readers share the input.
        shard_index: which of them this is, in ``[0, num_shards)``.
        num_parallel_reads: read this many pieces at once, interleaving their records (in
            blocks of one record for files TensorFlow reads, of one chunk for the others).
            None or 1: one piece after the other, in order.
        verify: check the data CRCs of records read by tfrecord-io's reader (lengths' CRCs
            are always checked; TensorFlow's reader always checks both).
        on_corrupt: ``"fail"`` or ``"skip"`` (skip damaged records with a warning; forces
            ``reader="python"``).
        reader: ``"auto"`` (TensorFlow's reader for whole files, local or served by the plugin;
            tfrecord-io's for byte ranges) or ``"python"`` (tfrecord-io's for everything).
        buffer_size: read buffer, in bytes, of ``tf.data.TFRecordDataset`` (None: its default,
            256 KiB, for local files; :data:`REMOTE_BUFFER_BYTES` for remote ones).
        chunk_bytes: how many bytes tfrecord-io's reader reads and hands to TensorFlow at a
            time (a record larger than this is read whole).

    Returns:
        The dataset of this shard's records. An empty one if the shard has nothing to read.
        With ``num_shards > 1`` its tf.distribute auto-shard policy is ``OFF``: it is one
        shard already, and sharding it again would drop records.

    Raises:
        InputNotFoundError, HdfsError: a path is missing or cannot be listed (at once, not when
            the dataset is iterated).
        ValueError: bad arguments.
    """
    check_shards(num_shards, shard_index)
    if on_corrupt not in ("fail", "skip"):
        raise ValueError(f"on_corrupt must be 'fail' or 'skip', not {on_corrupt!r}")
    if reader not in ("auto", "python"):
        raise ValueError(f"reader must be 'auto' or 'python', not {reader!r}")
    if num_parallel_reads is not None and (
        not isinstance(num_parallel_reads, int) or num_parallel_reads < 1
    ):
        raise ValueError(
            f"num_parallel_reads must be None or a positive int, not {num_parallel_reads!r}"
        )
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int) or chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be a positive int, not {chunk_bytes!r}")
    parallel = num_parallel_reads or 1

    plan = shard_plan(paths, compression, num_shards)
    pieces = plan[shard_index]
    tf = import_tensorflow()
    if not pieces:
        filled = sum(1 for shard in plan if shard)
        if filled:
            log.warning(
                "shard %d of %d gets no data: the input only makes %d piece(s) (compressed "
                "files and files without a split index cannot be cut)",
                shard_index,
                num_shards,
                filled,
            )
        empty = tf.data.Dataset.from_tensor_slices(tf.constant([], dtype=tf.string))
        return _no_more_sharding(tf, empty, num_shards)

    native_ok = reader == "auto" and on_corrupt == "fail"
    # Remote files go to TensorFlow's reader when the plugin serves their scheme inside
    # TensorFlow (hdfs, webhdfs, s3); others (http, or a plugin TensorFlow refused) to ours.
    native_remote = native_ok and any(
        p.remote and p.whole and serves(p.path) for p in pieces
    ) and filesystems_in_tensorflow()

    def is_native(p: Piece) -> bool:
        return native_ok and p.whole and (not p.remote or (native_remote and serves(p.path)))

    # Consecutive pieces read the same way make one dataset; the datasets are concatenated.
    parts = []
    run: list[Piece] = []
    for p in pieces:
        if run and is_native(run[0]) != is_native(p):
            parts.append(run)
            run = []
        run.append(p)
    parts.append(run)
    result = None
    for run in parts:
        if is_native(run[0]):
            ds = _native_dataset(tf, run, parallel, buffer_size)
        else:
            ds = _python_dataset(
                tf, run, parallel, verify, on_corrupt, chunk_bytes
            )
        result = ds if result is None else result.concatenate(ds)
    return _no_more_sharding(tf, result, num_shards)


def _no_more_sharding(tf: Any, ds: Any, num_shards: int) -> Any:
    """A dataset that is one shard of its input turns tf.distribute's auto-sharding off:
    ``experimental_distribute_dataset`` would otherwise shard it again (by file or by element),
    and each worker would silently read a fraction of its shard. An unsharded one keeps it."""
    if num_shards == 1:
        return ds
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return ds.with_options(options)


def parse_examples(
    dataset: tf.data.Dataset,
    features: Mapping[str, Any] | None = None,
    *,
    batch_size: int | None = None,
    drop_remainder: bool = False,
    sample: int = DEFAULT_SAMPLE,
    num_parallel_calls: int | None = None,
) -> tf.data.Dataset:
    """Parse a dataset of serialized ``tf.train.Example``s into dicts of tensors.

    Args:
        dataset: scalar ``tf.string`` records, e.g. from :func:`dataset`.
        features: a ``tf.io`` feature spec (``{name: FixedLenFeature | VarLenFeature |
            RaggedFeature | ...}``); None to infer one from the first *sample* records with
            :func:`infer_features` (which reads them once, eagerly).
        batch_size: None: one dict per record (``tf.io.parse_single_example``). A number:
            batch first and parse each batch at once (``tf.io.parse_example``, much faster);
            the dicts then hold batched tensors (ragged for ragged features).
        drop_remainder: with *batch_size*, drop a last smaller batch.
        sample: records to look at when inferring the spec.
        num_parallel_calls: parallelism of the parsing map (None: ``tf.data.AUTOTUNE``). The
            order of the elements is kept.

    Returns:
        A dataset of ``{name: tensor}`` dicts.
    """
    tf = import_tensorflow()
    spec = dict(features) if features is not None else infer_features(dataset, sample)
    if not spec:
        raise SchemaError("the feature spec is empty: nothing to parse")
    calls = tf.data.AUTOTUNE if num_parallel_calls is None else num_parallel_calls
    if batch_size is None:
        return dataset.map(
            lambda s: tf.io.parse_single_example(s, spec),
            num_parallel_calls=calls,
            deterministic=True,
        )
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be None or a positive int, not {batch_size!r}")
    return dataset.batch(batch_size, drop_remainder=drop_remainder).map(
        lambda s: tf.io.parse_example(s, spec),
        num_parallel_calls=calls,
        deterministic=True,
    )
