"""TFRecord files as RDDs of records (``bytes``), through the jar's Hadoop formats.

RDDs need the Spark driver in this process: a Spark Connect client has none, and these
functions raise :class:`~tfrecord_io.errors.SparkConnectError` for its sessions and DataFrames,
naming the DataFrame equivalent (records as one binary column, ``record_type="ByteArray"``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tfrecord_io.errors import SparkConnectError
from tfrecord_io.spark.jvm import (
    RDD_IO_CLASS,
    InputPaths,
    PathLike,
    as_hadoop_conf,
    call,
    codec_class,
    ensure_jar,
    is_connect,
    java_class,
    qualify,
    spark_context,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD

__all__ = ["save_records", "load_records"]


def save_records(
    rdd: RDD[Any],
    path: PathLike,
    compression: str | None = None,
    *,
    conf: Mapping[str, Any] | None = None,
) -> None:
    """Writes an RDD of bytes-like records as TFRecord files under ``path``.

    One ``part-r-NNNNN.tfrecord`` file per partition (``.tfrecord.gz``/``.tfrecord.deflate``
    when compressed), each uncompressed file with its split index, written through Hadoop's
    output committer: a failed or retried task leaves no partial or duplicate file. A failed
    job removes the directory it created when that holds nothing but the committer's leftovers
    (``_temporary``, ``_SUCCESS``...), so the same call can run again once the cause is fixed.

    Args:
        rdd: records as ``bytes``, ``bytearray`` or ``memoryview``.
        path: any Hadoop path or URL: ``file:``, ``hdfs://``, a local path...; it must not exist.
        compression: ``"gzip"`` (TensorFlow ``compression_type="GZIP"``), ``"zlib"`` or
            ``"deflate"`` (``"ZLIB"``), ``"none"`` or None; any case.
        conf: extra Hadoop configuration for the job (``tfrecord.*`` keys and others): string,
            bool or number values, passed as Hadoop spells them (``True`` as ``"true"``, see
            :func:`~tfrecord_io.spark.jvm.as_hadoop_conf`).

    Raises:
        SparkConnectError: *rdd* is a DataFrame of a Spark Connect session.
        FileExistsError: *path* exists.
        ValueError: an unknown ``compression``; a *path* Hadoop cannot name (an empty one).
        TypeError: a ``conf`` value that is not a string, bool or number.
    """
    if is_connect(rdd):
        raise SparkConnectError(
            "save_records takes an RDD, which a Spark Connect session has none of: write a "
            "DataFrame of one binary column with save_dataframe(df, path, "
            "record_type='ByteArray'), or df.write.format('tfrecord')"
            ".option('recordType', 'ByteArray').save(path)"
        )
    hadoop_conf = as_hadoop_conf(conf)
    codec = codec_class(compression)
    sc = rdd.context
    ensure_jar(sc)
    if codec is None:
        hadoop_conf.setdefault("mapreduce.output.fileoutputformat.compress", "false")
    else:
        hadoop_conf["mapreduce.output.fileoutputformat.compress"] = "true"
        hadoop_conf["mapreduce.output.fileoutputformat.compress.codec"] = codec
    target = qualify(sc, path, output=True)
    if target.startswith("file:"):
        # Hadoop's checksummed local file system would leave a .NAME.crc beside every file,
        # _SUCCESS included; TFRecords carry CRCs of their own (the OutputFormat writes its
        # files raw on local disks too), so the whole job, committer included, writes raw.
        hadoop_conf.setdefault("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        hadoop_conf.setdefault("fs.file.impl.disable.cache", "true")
    try:
        call(java_class(sc, RDD_IO_CLASS).save, _to_jvm_bytes(rdd), target, hadoop_conf)
    except FileExistsError:
        # Hadoop's refusal of the output directory (the only FileExistsError call raises
        # here) names it only: "Output directory ... already exists".
        raise FileExistsError(
            f"{os.fspath(path)} already exists: save_records writes a new directory only. "
            "Remove it or choose another path"
        ) from None


def load_records(
    sc: Any, path: InputPaths, *, conf: Mapping[str, Any] | None = None
) -> RDD[bytes]:
    """Reads TFRecord files (a file, a directory of shards, or a glob) as an RDD of ``bytes``.

    Compression is taken from each file's name (``.gz`` gzip, ``.deflate`` zlib), or from
    ``conf={"tfrecord.input.compression": "zlib"}``. Uncompressed files with a split index are
    read in parallel splits. Files whose names start with ``_`` or ``.`` are skipped. The RDD's
    partitions follow the files in the order of their paths, each file's records in order.

    Args:
        sc: a SparkContext or SparkSession.
        path: any Hadoop path, URL or glob; several as a comma-separated list (commas inside
            a ``{a,b}`` glob do not separate) or a list of paths.
        conf: extra Hadoop configuration (``tfrecord.input.corrupt.policy=skip``...): string,
            bool or number values, as for :func:`save_records`.

    Raises:
        SparkConnectError: *sc* is a Spark Connect session.
        ValueError: no paths, or a path Hadoop cannot name (``a:b``: a relative path whose
            first part holds a colon).
        FileNotFoundError: a path that does not exist, or a glob that matches no file (the
            input is listed by this call, as ``spark.read`` lists it, not by the first action).
        TypeError: a ``conf`` value that is not a string, bool or number.
    """
    if is_connect(sc):
        raise SparkConnectError(
            "load_records returns an RDD, which a Spark Connect session has none of: read the "
            "records as a DataFrame of one binary column 'byte_array' with "
            "load_dataframe(spark, path, record_type='ByteArray'), or spark.read"
            ".format('tfrecord').option('recordType', 'ByteArray').load(path)"
        )
    hadoop_conf = as_hadoop_conf(conf)
    sc = spark_context(sc)
    ensure_jar(sc)
    from pyspark import RDD  # noqa: PLC0415 - pyspark, the `spark` extra
    from pyspark.serializers import NoOpSerializer  # noqa: PLC0415 - pyspark, the `spark` extra

    jrdd = call(java_class(sc, RDD_IO_CLASS).load, sc._jsc, qualify(sc, path), hadoop_conf)  # noqa: SLF001 - the JavaSparkContext (py4j)
    return RDD(jrdd, sc, NoOpSerializer())


def _to_jvm_bytes(rdd: RDD[Any]) -> Any:
    """The records as a JavaRDD of byte[]: each element crosses as one length-framed frame.

    The map function takes bytes-like records only (``bytes`` as they are, a copy of a
    ``bytearray`` or ``memoryview``); anything else (an int, a list of ints, a Row, which
    ``bytes()`` would turn into other bytes) fails the task naming its type. It is defined
    here, so it pickles by value and uses builtins only: the executors' Python workers need
    nothing but pyspark, which Spark puts on their path. Nothing of ``tfrecord_io`` may be
    shipped to them: many clusters install it on the driver only.
    """
    from pyspark.serializers import NoOpSerializer  # noqa: PLC0415 - pyspark, the `spark` extra

    def record(value: Any) -> bytes:
        if type(value) is bytes:
            return value
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        raise TypeError(
            "save_records writes bytes-like records (bytes, bytearray, memoryview), not "
            f"{type(value).__name__}: encode each record first (records of Examples: "
            "tfrecord_io.example.encode_example; text: str.encode)")

    framed = rdd.map(record)
    framed._jrdd_deserializer = NoOpSerializer()  # noqa: SLF001 - how the worker writes them
    return framed._jrdd  # noqa: SLF001 - the JavaRDD behind it
