"""Spark helpers: the bundled jar, sessions that have it, TFRecord RDD and DataFrame I/O.

The jar with the Hadoop formats ships inside this package, so nothing needs ``--jars``::

    from tfrecord_io import spark as tfs

    spark = tfs.session("local[2]")
    tfs.save_records(spark.sparkContext.parallelize([b"a", b"b"]), "hdfs://nn:8020/data/out")
    records = tfs.load_records(spark.sparkContext, "hdfs://nn:8020/data/out")

Modules: :mod:`~tfrecord_io.spark.jvm` (the jar, sessions, the Java names),
:mod:`~tfrecord_io.spark.rdd` (:func:`save_records`, :func:`load_records`) and
:mod:`~tfrecord_io.spark.dataframe` (:func:`save_dataframe`, :func:`load_dataframe`, and the
DataFrame specification: the type mapping, :data:`RECORD_TYPES`, :data:`BYTE_ARRAY_COLUMN`),
:mod:`~tfrecord_io.spark.object_stores` (:func:`s3a_conf`, :func:`configure_s3a`,
:func:`hadoop_aws_package`: Spark's ``s3a://`` and ``s3://`` configured as tfrecord-io's
``s3://`` is; :func:`abfs_conf`, :func:`configure_abfs`, :func:`hadoop_azure_package`: Spark's
``abfs[s]://`` as tfrecord-io's, and :func:`abfs_url`, the ABFS URL of an ``az://`` one;
:func:`gcs_conf`, :func:`configure_gcs`: Spark's ``gs://`` as tfrecord-io's).
Scala/Java users of the same jar call the formats named by :data:`INPUT_FORMAT` and friends.
"""

from __future__ import annotations

from tfrecord_io.spark.dataframe import (
    BYTE_ARRAY_COLUMN,
    RECORD_TYPES,
    load_dataframe,
    save_dataframe,
)
from tfrecord_io.spark.jvm import (
    INPUT_FORMAT,
    MAPRED_INPUT_FORMAT,
    MAPRED_OUTPUT_FORMAT,
    OUTPUT_FORMAT,
    REDACTION_REGEX,
    InputPaths,
    PathLike,
    configure,
    ensure_jar,
    jar_path,
    session,
)
from tfrecord_io.spark.object_stores import (
    COMMIT_PROTOCOL,
    GCS_CONNECTOR_VERSION,
    GCS_FILE_SYSTEM,
    S3A_FILE_SYSTEM,
    abfs_conf,
    abfs_url,
    configure_abfs,
    configure_gcs,
    configure_s3a,
    gcs_conf,
    hadoop_aws_package,
    hadoop_azure_package,
    hadoop_version,
    s3a_conf,
)
from tfrecord_io.spark.rdd import load_records, save_records

__all__ = [
    "INPUT_FORMAT",
    "OUTPUT_FORMAT",
    "MAPRED_INPUT_FORMAT",
    "MAPRED_OUTPUT_FORMAT",
    "RECORD_TYPES",
    "BYTE_ARRAY_COLUMN",
    "PathLike",
    "InputPaths",
    "jar_path",
    "configure",
    "session",
    "ensure_jar",
    "save_records",
    "load_records",
    "save_dataframe",
    "load_dataframe",
    "s3a_conf",
    "configure_s3a",
    "hadoop_aws_package",
    "hadoop_version",
    "S3A_FILE_SYSTEM",
    "COMMIT_PROTOCOL",
    "gcs_conf",
    "configure_gcs",
    "GCS_CONNECTOR_VERSION",
    "GCS_FILE_SYSTEM",
    "abfs_conf",
    "abfs_url",
    "configure_abfs",
    "hadoop_azure_package",
    "REDACTION_REGEX",
]
