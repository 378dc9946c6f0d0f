"""Spark helpers: the bundled jar, sessions that have it, and TFRecord RDD I/O.

The jar with the Hadoop formats ships inside this package, so nothing needs ``--jars``::

    from tfrecord_io import spark as tfs

    spark = tfs.session("local[2]")
    tfs.save_records(spark.sparkContext.parallelize([b"a", b"b"]), "hdfs://nn:8020/data/out")
    records = tfs.load_records(spark.sparkContext, "hdfs://nn:8020/data/out")

Scala/Java users of the same jar call the formats named by :data:`INPUT_FORMAT` and friends.
"""

from __future__ import annotations

import logging
import os
from importlib import resources
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from tfrecord_io.errors import JarNotFoundError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD, SparkContext
    from pyspark.sql import SparkSession

__all__ = [
    "INPUT_FORMAT",
    "OUTPUT_FORMAT",
    "MAPRED_INPUT_FORMAT",
    "MAPRED_OUTPUT_FORMAT",
    "jar_path",
    "configure",
    "session",
    "ensure_jar",
    "save_records",
    "load_records",
    "save_dataframe",
    "load_dataframe",
]

_log = logging.getLogger(__name__)

#: InputFormat of the ``org.apache.hadoop.mapreduce`` API (``newAPIHadoopFile``).
INPUT_FORMAT = "org.tfrecordio.mapreduce.TFRecordInputFormat"
#: OutputFormat of the ``org.apache.hadoop.mapreduce`` API (``saveAsNewAPIHadoopFile``).
OUTPUT_FORMAT = "org.tfrecordio.mapreduce.TFRecordOutputFormat"
#: InputFormat of the ``org.apache.hadoop.mapred`` API (``hadoopFile``, Hive).
MAPRED_INPUT_FORMAT = "org.tfrecordio.mapred.TFRecordInputFormat"
#: OutputFormat of the ``org.apache.hadoop.mapred`` API (``saveAsHadoopFile``, Hive).
MAPRED_OUTPUT_FORMAT = "org.tfrecordio.mapred.TFRecordOutputFormat"

_JAR_NAME = "tfrecord-io.jar"
_CODECS = {
    "gzip": "org.apache.hadoop.io.compress.GzipCodec",
    "zlib": "org.apache.hadoop.io.compress.DefaultCodec",
}

PathLike = Union[str, "os.PathLike[str]"]


def jar_path() -> str:
    """Returns the absolute path of the jar bundled in this package.

    Raises:
        JarNotFoundError: the package was installed without its jar (a broken build).
    """
    path = resources.files("tfrecord_io").joinpath("jars").joinpath(_JAR_NAME)
    if not path.is_file():
        raise JarNotFoundError(
            f"{path} is missing: reinstall tfrecord-io from source with a JDK on PATH "
            "(`pip install .` builds the jar), or run `make setup` in a checkout."
        )
    return str(path)


def configure(builder: Any) -> Any:
    """Adds the bundled jar to a ``SparkSession.Builder`` (keeping jars already set).

    Returns the builder, so it chains: ``configure(SparkSession.builder).getOrCreate()``.
    """
    jar = jar_path()
    existing = builder._options.get("spark.jars", "")  # noqa: SLF001 - no public getter
    jars = [j for j in existing.split(",") if j]
    if jar not in jars:
        jars.append(jar)
    return builder.config("spark.jars", ",".join(jars))


def session(master: Optional[str] = None, app_name: str = "tfrecord-io", **conf: Any) -> "SparkSession":
    """Gets or creates a SparkSession with the bundled jar configured.

    Args:
        master: Spark master URL (``local[*]``, ``yarn``, ``local-cluster[2,1,1024]``...);
            None keeps whatever ``spark-submit`` or the environment chose.
        app_name: application name for a new session.
        **conf: further Spark settings; pass dotted keys as ``**{"spark.x.y": v}``.

    If a session already exists, the jar is added to it with :func:`ensure_jar`.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = configure(builder).getOrCreate()
    ensure_jar(spark)
    return spark


def ensure_jar(spark: Any) -> None:
    """Makes the formats usable in a running session that was started without the jar.

    Accepts a SparkSession or SparkContext. Does nothing when the driver already loads the
    formats (for example under ``spark-submit --jars`` or after :func:`session`).
    """
    sc = _context(spark)
    jvm = sc._jvm  # noqa: SLF001 - py4j gateway
    if _driver_loads(jvm, INPUT_FORMAT):
        return
    jar = jar_path()
    _log.info("Adding %s to the running Spark application", jar)
    url = jvm.java.io.File(jar).toURI().toURL()
    thread = jvm.java.lang.Thread.currentThread()
    loader = thread.getContextClassLoader()
    if loader is not None and loader.getClass().getName().endswith("MutableURLClassLoader"):
        loader.addURL(url)
    else:
        urls = sc._gateway.new_array(jvm.java.net.URL, 1)  # noqa: SLF001
        urls[0] = url
        thread.setContextClassLoader(jvm.java.net.URLClassLoader(urls, loader))
    sc._jsc.addJar(jar)  # noqa: SLF001 - ships it to executors
    if not _driver_loads(jvm, INPUT_FORMAT):
        raise JarNotFoundError(f"the Spark driver cannot load {INPUT_FORMAT} from {jar}")


def save_records(
    rdd: "RDD[Any]",
    path: PathLike,
    compression: Optional[str] = None,
    *,
    conf: Optional[Mapping[str, str]] = None,
) -> None:
    """Writes an RDD of bytes-like records as TFRecord files under ``path``.

    One ``part-r-NNNNN.tfrecord`` file per partition (``.tfrecord.gz``/``.tfrecord.deflate``
    when compressed), each uncompressed file with its split index, written through Hadoop's
    output committer: a failed or retried task leaves no partial or duplicate file.

    Args:
        rdd: records as ``bytes``, ``bytearray`` or ``memoryview``.
        path: any Hadoop path or URL: ``file:``, ``hdfs://``, a local path...; it must not exist.
        compression: ``"gzip"`` (TensorFlow ``compression_type="GZIP"``), ``"zlib"``
            (``"ZLIB"``) or None.
        conf: extra Hadoop configuration for the job (``tfrecord.*`` keys and others).
    """
    sc = rdd.context
    ensure_jar(sc)
    hadoop_conf = dict(conf or {})
    if compression is None:
        hadoop_conf.setdefault("mapreduce.output.fileoutputformat.compress", "false")
    else:
        codec = _CODECS.get(str(compression).lower())
        if codec is None:
            raise ValueError(f"compression must be 'gzip', 'zlib' or None, not {compression!r}")
        hadoop_conf["mapreduce.output.fileoutputformat.compress"] = "true"
        hadoop_conf["mapreduce.output.fileoutputformat.compress.codec"] = codec
    _frames_jvm(sc).TFRecordRDDs.save(
        _to_jvm_bytes(rdd), _qualify(sc, path), hadoop_conf
    )


def load_records(
    sc: Any, path: PathLike, *, conf: Optional[Mapping[str, str]] = None
) -> "RDD[bytes]":
    """Reads TFRecord files (a file, a directory of shards, or a glob) as an RDD of ``bytes``.

    Compression is taken from each file's name (``.gz`` gzip, ``.deflate`` zlib), or from
    ``conf={"tfrecord.input.compression": "zlib"}``. Uncompressed files with a split index are
    read in parallel splits. Files whose names start with ``_`` or ``.`` are skipped.

    Args:
        sc: a SparkContext or SparkSession.
        path: any Hadoop path or URL, comma-separated for several.
        conf: extra Hadoop configuration (``tfrecord.input.corrupt.policy=skip``...).
    """
    sc = _context(sc)
    ensure_jar(sc)
    from pyspark import RDD
    from pyspark.serializers import NoOpSerializer

    jrdd = _frames_jvm(sc).TFRecordRDDs.load(sc._jsc, _qualify(sc, path), dict(conf or {}))  # noqa: SLF001
    return RDD(jrdd, sc, NoOpSerializer())


def _to_jvm_bytes(rdd: "RDD[Any]") -> Any:
    """The records as a JavaRDD of byte[]: each element crosses as one length-framed frame."""
    from pyspark.serializers import NoOpSerializer

    framed = rdd.map(_as_bytes)
    framed._jrdd_deserializer = NoOpSerializer()  # noqa: SLF001 - how the worker writes them
    return framed._jrdd  # noqa: SLF001


def _as_bytes(record: Any) -> bytes:
    return record if type(record) is bytes else bytes(record)


def _frames_jvm(sc: Any) -> Any:
    return sc._jvm.org.tfrecordio.spark  # noqa: SLF001


def _context(spark: Any) -> "SparkContext":
    return getattr(spark, "sparkContext", spark)


def _driver_loads(jvm: Any, class_name: str) -> bool:
    try:
        jvm.org.apache.spark.util.Utils.classForName(class_name, True, False)
        return True
    except Exception:  # py4j wraps ClassNotFoundException
        return False


def _qualify(sc: Any, path: PathLike) -> str:
    """Resolves a path the way Hadoop does on the driver, so executors agree on it.

    Comma-separated lists are qualified element by element (not inside a ``{a,b}`` glob).
    """
    jvm = sc._jvm  # noqa: SLF001
    hadoop_conf = sc._jsc.hadoopConfiguration()  # noqa: SLF001
    qualified = []
    text = os.fspath(path)
    # Hadoop globs may hold commas inside braces ("/data/{a,b}"): only split outside them.
    for part in ([text] if "{" in text else text.split(",")):
        p = jvm.org.apache.hadoop.fs.Path(part)
        qualified.append(p.getFileSystem(hadoop_conf).makeQualified(p).toString())
    return ",".join(qualified)


from tfrecord_io._frames import load_dataframe, save_dataframe  # noqa: E402  (DataFrame I/O)
