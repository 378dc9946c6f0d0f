"""Spark DataFrames as TFRecord files of ``tf.train.Example``/``SequenceExample`` records.

:func:`save_dataframe` and :func:`load_dataframe` are thin wrappers over the jar's Spark data
source ``format("tfrecord")`` (``org.tfrecordio.spark.source.TFRecordFileFormat``), which
Scala, Java and SQL users call directly: ``df.write.format("tfrecord")``,
``spark.read.format("tfrecord")``, ``CREATE TABLE ... USING tfrecord``. The work happens in the
executors' JVMs: a hand-written protobuf encoder/decoder turns rows into records and back
(decoding only the features a query selects), and files are written through Spark's output
committer with a sidecar index beside each uncompressed file, which gives exact splits and
lets ``count()`` be answered without reading records. Rows never pass through Python.
Re-exported as :func:`tfrecord_io.spark.save_dataframe` and
:func:`tfrecord_io.spark.load_dataframe`. This docstring is the DataFrame specification: the
type mapping both ways, the schema rules, partitions; :data:`RECORD_TYPES` and
:data:`BYTE_ARRAY_COLUMN` are its constants.

Writing: column types to features
---------------------------------
==========================================  ===================================================
Spark type                                  Feature
==========================================  ===================================================
boolean, byte, short, int, long             ``int64_list`` (true = 1, false = 0)
float, double                               ``float_list``: float32 (doubles are rounded to the
                                            nearest float32, ~7 significant digits; beyond
                                            float32's range they become ±inf; NaN and ±inf kept)
string (char, varchar)                      ``bytes_list``: UTF-8
binary                                      ``bytes_list``: the bytes
decimal(p, s)                               ``bytes_list``: the decimal's string, e.g.
                                            ``b"-12.50"`` (exact, unlike float32), scientific
                                            below 1E-6 (``b"1.000E-7"``) as ``from_arrow``
                                            writes it; reads back as string unless the schema
                                            says decimal
date                                        ``int64_list``: days since 1970-01-01
timestamp, timestamp_ntz                    ``int64_list``: microseconds since 1970-01-01 UTC
                                            (timestamp_ntz: of its wall-clock time as if UTC)
array<T> (T one of the above)               a list of T's kind; an empty array is a feature
                                            of that kind with no values
ML Vector (``pyspark.ml.linalg``/mllib)     ``float_list``: dense; sparse densified to its
                                            full size
array<array<T>>, array<Vector>              SequenceExample only: a feature list, one step per
                                            inner array/vector (Example: :class:`SchemaError`)
null (a column of type null)                never written
==========================================  ===================================================

A null cell omits the feature from that record. A null *inside* an array, or a null step,
has no TFRecord form and fails the write with an error naming the column. Map, struct,
interval, time, variant and other types raise :class:`~tfrecord_io.errors.SchemaError` naming
the column and its type before any task runs. Features are written sorted by name, so records
are byte-identical to :func:`tfrecord_io.example.from_arrow` output for the same values.

``record_type="ByteArray"``: the DataFrame has one binary column (any name; besides partition
columns), written as the records themselves. Reading gives one column ``byte_array``
(binary, not null).

Reading: the schema
-------------------
Without a schema, it is inferred by a Spark job that reads every record once before the
DataFrame is returned (so a load costs one extra full scan, plus the scan of each action on the
DataFrame); ``sample=f`` reads only a fraction ``f`` of the input splits (evenly spread, at
least one), cutting that cost for large inputs, and then makes every field nullable. The rules
are :func:`tfrecord_io.example.infer_schema`'s:

* ``int64_list`` -> long, ``float_list`` -> float, ``bytes_list`` -> string, or binary if the
  feature is in ``binary_features`` or any of its values is not valid UTF-8;
* one value in every record where the feature has a kind -> a scalar column, any other length
  anywhere -> ``array<type>`` (elements never null);
* a feature missing in some records (or present there with no kind set) is null there and its
  field nullable; present in every record -> not nullable. A feature that never has a kind ->
  type null; in an array field, a feature with no kind reads as an empty array;
* different kinds in different records -> :class:`SchemaError` naming the feature;
* fields sorted by name; SequenceExample: the context features, then each feature list as
  ``array<array<type>>``; a name used for both -> :class:`SchemaError`;
* a feature whose name is not valid UTF-8 is skipped, as TensorFlow's parsers skip it (each
  task logs a warning naming it and its file).

With a schema, values are converted to it: ``int64_list`` to long, int, short, byte (range
checked), boolean (nonzero is true), float, double, date, timestamp, timestamp_ntz and decimal
(exactly); ``float_list`` to float, double and ML Vector (dense); ``bytes_list`` to string
(UTF-8 checked), binary and decimal. Scalar fields need exactly one value, arrays take any
number. For SequenceExample, ``array<array<T>>`` and ``array<vector>`` fields are read from the
feature lists, the others from the context. Features the schema lacks are skipped; fields no
record has are null. A field type with no feature form raises :class:`SchemaError` at once; a
value that does not fit its field fails the Spark job that reads it (when an action runs, as
with any lazy DataFrame), with an error naming the feature.

Partitions
----------
``save_dataframe(..., partition_by=["year", "kind"])`` writes Hive-style directories
``year=2024/kind=a/part-00000-....tfrecord``: values escaped as Spark/Hive escape them, null or
empty string as ``__HIVE_DEFAULT_PARTITION__``; the partition columns are not stored in the
records. Partition columns may be string, boolean, integer, float, double, decimal or date.
Each partition is sorted by the partition columns first, so a task keeps one file open at a
time; all files go through the job's output committer, so a failed job publishes nothing.

``load_dataframe`` on such a tree restores the partition columns (after the record columns):
typed int, long or double when every directory value is one written the way Java writes that
number (``007`` or ``1.50`` stay strings), else string; null for the default partition. A given
schema that names a partition column sets its type.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tfrecord_io.spark.jvm import (
    DATAFRAME_IO_CLASS,
    DATAFRAME_SOURCE,
    InputPaths,
    PathLike,
    as_hadoop_conf,
    call,
    call_remote,
    codec_class,
    ensure_jar,
    input_paths,
    is_connect,
    java_class,
    qualify,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["save_dataframe", "load_dataframe", "RECORD_TYPES", "BYTE_ARRAY_COLUMN"]

#: The record types of :func:`save_dataframe` and :func:`load_dataframe`.
RECORD_TYPES = ("Example", "SequenceExample", "ByteArray")
#: The column of a ``record_type="ByteArray"`` DataFrame read by :func:`load_dataframe`.
BYTE_ARRAY_COLUMN = "byte_array"


def save_dataframe(
    df: DataFrame,
    path: PathLike,
    record_type: str = "Example",
    compression: str | None = None,
    *,
    partition_by: Sequence[str] | None = None,
    conf: Mapping[str, Any] | None = None,
) -> None:
    """Writes a DataFrame as TFRecord files of Examples, SequenceExamples or raw records.

    ``df.write.format("tfrecord")`` in mode ``errorifexists``: one ``part-NNNNN-*.tfrecord``
    file per partition of ``df`` (with its split index ``_NAME.tfindex`` when uncompressed), or
    per partition and partition directory with ``partition_by``, written through Spark's output
    committer; a failed job removes the directory it created when that holds nothing but the
    committer's leftovers, so the same call can run again. Column types map to features as the
    module docstring's table says; a null cell omits the feature. A DataFrame of a Spark Connect
    session is written the same way, through the jar's data source
    ``org.tfrecordio.spark.source.TFRecordDataFrameSource`` on the Connect server (which must
    have the jar); ``path`` is then resolved there.

    Args:
        df: the DataFrame.
        path: any Hadoop path or URL; it must not exist.
        record_type: ``"Example"``, ``"SequenceExample"`` (``array<array<T>>`` columns become
            feature lists, the others context features) or ``"ByteArray"`` (one binary column,
            written as the records); any case, as the data source's ``recordType`` option.
        compression: ``"gzip"``, ``"zlib"`` or ``"deflate"`` (the same codec), ``"none"`` or
            None; any case.
        partition_by: columns whose values become ``col=value/`` directories.
        conf: extra Hadoop configuration for the job: string, bool or number values, passed
            as Hadoop spells them (:func:`~tfrecord_io.spark.jvm.as_hadoop_conf`).

    Raises:
        SchemaError: before any task runs, a column whose type has no feature form (naming the
            column and its type), a bad ``partition_by`` column; while writing, a null inside
            an array.
        FileExistsError: ``path`` exists.
        ValueError: an unknown ``record_type`` or ``compression``; a ``path`` Hadoop cannot
            name (an empty one).
        TypeError: a ``conf`` value that is not a string, bool or number.
    """
    record_type = _record_type(record_type)
    codec = codec_class(compression)
    options = as_hadoop_conf(conf)
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    try:
        if is_connect(df):
            _save_remote(df, path, record_type, codec, list(partition_by or []), options)
            return
        spark = df.sparkSession
        sc = spark.sparkContext
        ensure_jar(sc)
        call(
            java_class(sc, DATAFRAME_IO_CLASS).save,
            df._jdf,  # noqa: SLF001 - the DataFrame's JVM handle
            qualify(sc, path, output=True),
            record_type,
            codec,
            list(partition_by or []),
            options,
        )
    except Exception as e:
        if not _path_exists(e):
            raise
        # Spark's message says to set mode "overwrite", which save_dataframe has not.
        raise FileExistsError(
            f"{os.fspath(path)} already exists: save_dataframe writes a new directory only. "
            "Remove it or choose another path; to replace it or add to it, write with "
            "df.write.format('tfrecord').mode('overwrite') (or 'append')"
        ) from None


def load_dataframe(
    spark: SparkSession,
    path: InputPaths,
    schema: StructType | str | None = None,
    record_type: str = "Example",
    *,
    binary_features: Iterable[str] = (),
    sample: float | None = None,
    conf: Mapping[str, Any] | None = None,
) -> DataFrame:
    """Reads TFRecord files of Examples, SequenceExamples or raw records as a DataFrame.

    ``spark.read.format("tfrecord")`` under this function's rules: partition columns typed as
    the module docstring says (the data source itself follows Spark's partition inference), the
    given or inferred nullability kept (Spark makes a file source's fields nullable), the given
    schema's column order. Spark's ``spark.sql.files.maxPartitionBytes`` sets the split size.
    A Spark Connect session reads through the jar's data source
    ``org.tfrecordio.spark.source.TFRecordDataFrameSource`` (these very rules), on the Connect
    server, which must have the jar; ``path`` is then resolved there.

    Args:
        spark: the SparkSession.
        path: a file, a directory of files (possibly in ``col=value`` partition directories,
            which become columns), a glob, or several of them: a comma-separated list (commas
            inside a ``{a,b}`` glob do not separate) or a list of paths. Files whose names
            start with ``_`` or ``.`` are skipped; compression is taken from file names.
        schema: a :class:`~pyspark.sql.types.StructType` or DDL string; values are converted to
            it. None infers it from the records (see the module docstring: one extra scan).
        record_type: ``"Example"``, ``"SequenceExample"`` or ``"ByteArray"`` (one binary column
            ``byte_array``); any case.
        binary_features: when inferring, ``bytes_list`` features to type binary, not string.
        sample: when inferring, read only this fraction (0 < sample <= 1) of the input splits;
            all fields are then nullable. None reads everything.
        conf: extra Hadoop configuration (``tfrecord.input.corrupt.policy=skip``...), passed
            as data source options: string, bool or number values, as for
            :func:`save_dataframe`.

    Returns:
        A DataFrame; decoding happens in the executors when actions run.

    Raises:
        SchemaError: inferring, conflicting kinds or a record that does not parse; a schema
            field type with no feature form; conflicting partition directories.
        FileNotFoundError: ``path`` does not exist.
        ValueError: an unknown ``record_type``, a bad ``sample``; no paths, or a path Hadoop
            cannot name (``a:b``: a relative path whose first part holds a colon).
        TypeError: a ``conf`` value that is not a string, bool or number.
    """
    from pyspark.sql import DataFrame  # noqa: PLC0415 - pyspark, the `spark` extra
    from pyspark.sql.types import StructType  # noqa: PLC0415 - pyspark, the `spark` extra

    record_type = _record_type(record_type)
    options = as_hadoop_conf(conf)
    if sample is None:
        fraction = 1.0
    else:
        fraction = float(sample)
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"sample must be a fraction in (0, 1], not {sample!r}")
    if isinstance(binary_features, str):
        binary_features = [binary_features]
    if schema is None:
        schema_text = None
    elif isinstance(schema, StructType):
        schema_text = schema.json()
    elif isinstance(schema, str):
        schema_text = schema
    else:
        raise TypeError(f"schema must be a StructType, a DDL string or None, not {schema!r}")
    if is_connect(spark):
        return _load_remote(spark, path, schema_text, record_type, list(binary_features),
                            fraction, options)
    sc = spark.sparkContext
    ensure_jar(sc)
    jdf = call(
        java_class(sc, DATAFRAME_IO_CLASS).load,
        spark._jsparkSession,  # noqa: SLF001 - the session's JVM handle
        qualify(sc, path),
        schema_text,
        record_type,
        [str(f) for f in binary_features],
        fraction,
        options,
    )
    return DataFrame(jdf, spark)


def _save_remote(
    df: DataFrame,
    path: PathLike,
    record_type: str,
    codec: str | None,
    partition_by: list[str],
    conf: Mapping[str, str],
) -> None:
    """:func:`save_dataframe` for a Spark Connect DataFrame, through the jar's
    ``TFRecordDataFrameSource`` (``TFRecordDataFrames.save`` on the server); *conf* as
    :func:`~tfrecord_io.spark.jvm.as_hadoop_conf` gives it."""
    options = dict(conf)
    options.update(path=os.fspath(path), recordType=record_type)
    if codec is not None:
        options["codec"] = codec
    options.update({f"partitionBy.{i}": str(c) for i, c in enumerate(partition_by)})
    # "error": Spark Connect's client does not know the "errorifexists" spelling.
    writer = df.write.format(DATAFRAME_SOURCE).mode("error").options(**options)
    call_remote(writer.save)


def _load_remote(
    spark: SparkSession,
    path: InputPaths,
    schema_text: str | None,
    record_type: str,
    binary_features: list[str],
    fraction: float,
    conf: Mapping[str, str],
) -> DataFrame:
    """:func:`load_dataframe` for a Spark Connect session, through the jar's
    ``TFRecordDataFrameSource`` (``TFRecordDataFrames.load`` on the server); *conf* as
    :func:`~tfrecord_io.spark.jvm.as_hadoop_conf` gives it.

    Its schema is asked for at once, so that errors (a missing path, conflicting kinds) come
    from this call, as on a classic session."""
    options = dict(conf)
    options.update(path=",".join(input_paths(path)), recordType=record_type,
                   sample=repr(fraction))
    if schema_text is not None:
        options["schema"] = schema_text
    if binary_features:
        options["binaryFeatures"] = ",".join(str(f) for f in binary_features)
    df = spark.read.format(DATAFRAME_SOURCE).options(**options).load()
    call_remote(lambda: df.schema)
    return df


def _path_exists(error: Exception) -> bool:
    """Whether *error* is Spark's refusal of a save's existing path (the error condition
    ``PATH_ALREADY_EXISTS``, from a classic session or a Spark Connect server)."""
    for getter in ("getCondition", "getErrorClass"):
        condition = getattr(error, getter, None)
        if callable(condition):
            try:
                return condition() == "PATH_ALREADY_EXISTS"
            except Exception:  # noqa: BLE001 - its JVM may be gone: not that refusal, then
                return False
    return False


def _record_type(record_type: str) -> str:
    """The spelling of :data:`RECORD_TYPES` that *record_type* names in any case (as the data
    source's ``recordType`` option takes it).

    Raises:
        ValueError: another name.
    """
    for known in RECORD_TYPES:
        if str(record_type).lower() == known.lower():
            return known
    raise ValueError(
        f"record_type must be 'Example', 'SequenceExample' or 'ByteArray' (any case), not "
        f"{record_type!r}"
    )
