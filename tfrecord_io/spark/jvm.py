"""The bridge to the JVM: the bundled jar, Spark sessions that have it, and the Java names used.

Every Java class name tfrecord-io's Python side calls is a constant here, so a rename on the
JVM side is a change in one place. Scala/Java users of the same jar call the formats named by
:data:`INPUT_FORMAT` and friends.
"""

from __future__ import annotations

import functools
import json
import logging
import numbers
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, Union

from tfrecord_io.errors import JarNotFoundError, SchemaError
from tfrecord_io.extras import require
from tfrecord_io.fs import split_list

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

__all__ = [
    "INPUT_FORMAT",
    "OUTPUT_FORMAT",
    "MAPRED_INPUT_FORMAT",
    "MAPRED_OUTPUT_FORMAT",
    "RDD_IO_CLASS",
    "DATAFRAME_IO_CLASS",
    "DATAFRAME_SOURCE",
    "SCHEMA_EXCEPTION",
    "FEED_BATCHES_CLASS",
    "FEED_SOURCE",
    "EXECUTOR_LOSSES_CLASS",
    "DRIVER_STATUS_SOURCE",
    "REDACTION_REGEX",
    "CODECS",
    "is_dataframe",
    "is_connect",
    "is_stopped",
    "java_dataset",
    "java_records",
    "records_frame",
    "PathLike",
    "InputPaths",
    "input_paths",
    "jar_path",
    "configure",
    "session",
    "ensure_jar",
    "spark_context",
    "java_class",
    "max_concurrent_tasks",
    "replace_executor",
    "jobs_with_tag",
    "executor_losses",
    "executor_loss",
    "codec_class",
    "as_hadoop_conf",
    "qualify",
    "call",
    "call_remote",
    "describe_failure",
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
#: The record RDD I/O of the jar (``save``, ``load`` of JavaRDD<byte[]>).
RDD_IO_CLASS = "org.tfrecordio.spark.TFRecordRDDs"
#: The DataFrame codec and I/O of the jar (``save``, ``load``).
DATAFRAME_IO_CLASS = "org.tfrecordio.spark.source.TFRecordDataFrames"
#: :data:`DATAFRAME_IO_CLASS`'s ``save`` and ``load`` as a data source (``format(...)``), for
#: Spark Connect clients, which have no py4j.
DATAFRAME_SOURCE = "org.tfrecordio.spark.source.TFRecordDataFrameSource"
#: The exception the jar throws for data that does not fit a schema.
SCHEMA_EXCEPTION = "org.tfrecordio.example.SchemaException"
#: Hadoop's refusal of an output directory that exists (both of its APIs throw this one).
_FILE_EXISTS_EXCEPTION = "org.apache.hadoop.mapred.FileAlreadyExistsException"
#: Makes the feed's batches of a DataFrame (``cluster.feed``); an RDD's records as a DataFrame.
FEED_BATCHES_CLASS = "org.tfrecordio.spark.feed.FeedBatches"
#: The feed's counting and feeding jobs as a data source (classic sessions and Spark Connect).
FEED_SOURCE = "org.tfrecordio.spark.feed.FeedSource"
#: The driver's listener that records why Spark's scheduler removed each executor.
EXECUTOR_LOSSES_CLASS = "org.tfrecordio.spark.cluster.ExecutorLosses"
#: Free task slots and executor losses as a data source answered on the driver (Spark Connect).
DRIVER_STATUS_SOURCE = "org.tfrecordio.spark.cluster.DriverStatus"
#: Spark's ``spark.redaction.regex`` with ABFS's account keys (``fs.azure.account.key.*``, which
#: Hadoop takes only from its configuration) added to what Spark's default redacts (secrets,
#: passwords, tokens, access keys): what :func:`session` starts applications with.
REDACTION_REGEX = r"(?i)secret|password|token|access[.]?key|account[.]key"

_JAR_NAME = "tfrecord-io.jar"
#: ``compression`` argument (any case) -> Hadoop codec class: the names the data source's
#: ``compression`` option takes. ``"zlib"`` and ``"deflate"`` are the same codec (TensorFlow's
#: ``"ZLIB"``, files ending ``.deflate``).
CODECS = {
    "gzip": "org.apache.hadoop.io.compress.GzipCodec",
    "zlib": "org.apache.hadoop.io.compress.DefaultCodec",
    "deflate": "org.apache.hadoop.io.compress.DefaultCodec",
}
# ``compression`` arguments (any case) for no codec, besides None: the data source's ``none``
# and TensorFlow's ``""``.
_NO_CODEC = ("none", "")

PathLike = Union[str, "os.PathLike[str]"]
#: What the loading functions read: a path, a comma-separated list of paths (see
#: :func:`input_paths`), or a list or tuple of paths.
InputPaths = PathLike | Sequence[PathLike]


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


def session(
    master: str | None = None,
    app_name: str = "tfrecord-io",
    *,
    remote: str | None = None,
    **conf: Any,
) -> SparkSession:
    """Gets or creates a SparkSession with the bundled jar configured.

    Args:
        master: Spark master URL (``local[*]``, ``yarn``, ``local-cluster[2,1,1024]``...);
            None keeps whatever ``spark-submit`` or the environment chose.
        app_name: application name for a new session.
        remote: a Spark Connect server's URL (``sc://host:15002``): a client session of that
            server (``SparkSession.builder.remote(remote)``) instead of a driver in this
            process. The jar cannot be added from a client: the server must have been started
            with it (``start-connect-server.sh --jars PATH`` with :func:`jar_path`'s PATH, or
            ``spark.jars``). ``master`` must then be None; ``conf`` holds session settings.
        **conf: further Spark settings; pass dotted keys as ``**{"spark.x.y": v}``.

    If a session already exists, the jar is added to it with :func:`ensure_jar`. A new
    application gets the jar beside the ``spark.jars`` that ``spark-submit --jars`` or
    ``spark-defaults.conf`` give it, and redacts, wherever Spark shows its configuration (its
    UI, its event log), what Spark's default ``spark.redaction.regex`` does and the object
    stores' account keys (:data:`REDACTION_REGEX`), besides what a ``spark.redaction.regex``
    from ``spark-submit`` or ``spark-defaults.conf`` does, unless ``conf`` gives a
    ``spark.redaction.regex`` of its own (other than :data:`REDACTION_REGEX`, which
    :func:`~tfrecord_io.spark.abfs_conf` gives: that one is added to theirs too).

    The Python of Spark's workers, for a new application: ``spark.pyspark.python`` if set
    (honoured here as ``spark-submit`` does, also in a plain ``python job.py``), else the
    ``PYSPARK_PYTHON`` environment variable, else, for ``local[...]`` and ``local-cluster[...]``
    masters, this interpreter (``sys.executable``): a script run as ``.venv/bin/python job.py``
    needs no activated environment. Other masters keep Spark's default (``python3`` on the
    executors' ``PATH``).

    Raises:
        MissingDependencyError: pyspark is not installed (``pip install 'tfrecord-io[spark]'``).
    """
    require("pyspark", "tfrecord_io.spark")
    from pyspark import SparkContext  # noqa: PLC0415 - pyspark, the `spark` extra
    from pyspark.sql import SparkSession  # noqa: PLC0415 - pyspark, the `spark` extra

    if remote is not None:
        if master:
            raise ValueError("give either master (a driver here) or remote (a Connect server)")
        builder = SparkSession.builder.remote(remote)
        for key, value in conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    if (master or "").startswith("yarn") and "spark.yarn.isPython" not in conf:
        # Spark's YARN client sends pyspark.zip and py4j to the containers only for a Python
        # application, which spark-submit marks when the driver JVM starts with a YARN master;
        # a JVM this process started earlier (for a local session) is not marked.
        builder = builder.config("spark.yarn.isPython", "true")
    for key, value in conf.items():
        builder = builder.config(key, value)
    starts = SparkContext._active_spark_context is None  # noqa: SLF001 - no public getter
    if starts:
        # What spark-submit or spark-defaults.conf gives the new application is kept: the
        # builder's settings would replace it.
        inherited = _inherited(("spark.jars", "spark.redaction.regex"))
        if "spark.jars" not in conf and inherited.get("spark.jars"):
            builder = builder.config("spark.jars", inherited["spark.jars"])
        # Ours in conf (abfs_conf() gives it) adds to the inherited regex as when conf has
        # none: replacing it would show the secrets the site's regex hides.
        if conf.get("spark.redaction.regex") in (None, REDACTION_REGEX):
            builder = builder.config("spark.redaction.regex",
                                     _with_ours(inherited.get("spark.redaction.regex")))
    spark = configure(builder).getOrCreate()
    if is_connect(spark):
        # pyspark 4's Connect mode (spark.api.mode=connect, SPARK_API_MODE, SPARK_REMOTE): the
        # builder started a local Connect server (with spark.jars) whose context is here.
        local = SparkContext._active_spark_context  # noqa: SLF001 - no public getter
        if starts and local is not None:
            _set_worker_python(local)
        return spark
    if starts:
        _set_worker_python(spark.sparkContext)
    ensure_jar(spark)
    return spark


def _inherited(keys: tuple[str, ...]) -> dict[str, str]:
    """The settings among *keys* that a new application of this process gets besides the
    builder's: from the driver JVM's system properties when it already runs (``spark-submit``
    started it, with its ``--jars``, ``--conf`` and ``spark-defaults.conf``), else from the
    ``spark-defaults.conf`` that the JVM pyspark is about to start will read."""
    from pyspark import SparkContext  # noqa: PLC0415 - pyspark, the `spark` extra

    if SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):  # noqa: SLF001 - no public getter
        SparkContext._ensure_initialized()  # noqa: SLF001 - connects to the running JVM
        system = SparkContext._jvm.java.lang.System  # noqa: SLF001 - py4j's handle to the JVM
        found = {key: system.getProperty(key) for key in keys}
        return {key: str(value) for key, value in found.items() if value}
    return {key: value for key, value in _spark_defaults().items() if key in keys}


def _spark_defaults() -> dict[str, str]:
    """``spark-defaults.conf`` of ``SPARK_CONF_DIR``, else of ``SPARK_HOME/conf`` (pyspark's own
    directory when ``SPARK_HOME`` is unset), as Spark reads it: ``key value`` lines (or
    ``key=value``), ``#`` comments."""
    from pyspark.find_spark_home import _find_spark_home  # noqa: PLC0415 - pyspark's own lookup

    directory = os.environ.get("SPARK_CONF_DIR") or os.path.join(_find_spark_home(), "conf")
    try:
        with open(os.path.join(directory, "spark-defaults.conf"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            key, value = ([*re.split(r"\s*[=:]\s*|\s+", line, maxsplit=1), ""])[:2]
            found[key] = value.strip()
    return found


def _with_ours(regex: str | None) -> str:
    """A ``spark.redaction.regex`` that redacts what *regex* does and :data:`REDACTION_REGEX`."""
    if not regex or regex == REDACTION_REGEX:
        return REDACTION_REGEX
    return f"(?:{regex})|(?:{REDACTION_REGEX})"


def _set_worker_python(sc: SparkContext) -> None:
    """Points a new application's Python workers at the interpreter :func:`session` documents."""
    # PySpark reads only PYSPARK_PYTHON, once, when the context starts (sc.pythonExec); every
    # Python function shipped to executors afterwards carries sc.pythonExec.
    chosen = sc.getConf().get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON")
    if not chosen and sc.master.startswith("local"):
        chosen = sys.executable
    if chosen and chosen != sc.pythonExec:
        _log.info("Spark's Python workers run %s", chosen)
        sc.pythonExec = chosen


def ensure_jar(spark: Any) -> None:
    """Makes the formats usable in a running session that was started without the jar.

    Accepts a SparkSession or SparkContext. Does nothing when the driver already loads the
    formats (for example under ``spark-submit --jars`` or after :func:`session`), except ship
    the bundled jar to the executors of an application whose driver loads the formats from it
    without shipping it (one started after another that this function gave the jar, in the
    same driver JVM).
    """
    sc = spark_context(spark)
    jvm = sc._jvm  # noqa: SLF001 - py4j gateway
    if _driver_loads(jvm, INPUT_FORMAT):
        _ship_bundled_jar(sc)
        return
    jar = jar_path()
    _log.info("Adding %s to the running Spark application", jar)
    _load_on_driver(sc._gateway, jar)  # noqa: SLF001 - py4j gateway
    sc._jsc.addJar(jar)  # noqa: SLF001 - ships it to executors
    if not _driver_loads(jvm, INPUT_FORMAT):
        raise JarNotFoundError(f"the Spark driver cannot load {INPUT_FORMAT} from {jar}")


def _ship_bundled_jar(sc: Any) -> None:
    """Ships the bundled jar to *sc*'s executors when the driver loads the formats from it but
    the application does not ship it: an application started after one that :func:`ensure_jar`
    gave the jar, in the same JVM (its driver still loads them; its executors do not)."""
    try:
        jar = jar_path()
    except JarNotFoundError:
        return  # the formats come from another jar
    jvm = sc._jvm  # noqa: SLF001 - py4j gateway
    source = jvm.org.apache.spark.util.Utils.classForName(INPUT_FORMAT, True, False) \
        .getProtectionDomain().getCodeSource()
    if source is None or source.getLocation() is None:
        return
    loaded = str(jvm.java.io.File(source.getLocation().toURI()).getCanonicalPath())
    if loaded != os.path.realpath(jar):
        return
    shipped = sc._jsc.sc().listJars()  # noqa: SLF001 - the Scala SparkContext
    name = "/" + os.path.basename(jar)
    if not any(str(shipped.apply(i)).endswith(name) for i in range(shipped.size())):
        _log.info("Adding %s to the Spark application's executors", jar)
        sc._jsc.addJar(jar)  # noqa: SLF001 - ships it to executors


def _load_on_driver(gateway: Any, jar: str) -> None:
    """Adds *jar* to the class loader of the driver's JVM that py4j's calls use (the context
    class loader of this thread's JVM thread)."""
    jvm = gateway.jvm
    url = jvm.java.io.File(jar).toURI().toURL()
    thread = jvm.java.lang.Thread.currentThread()
    loader = thread.getContextClassLoader()
    if loader is not None and loader.getClass().getName().endswith("MutableURLClassLoader"):
        loader.addURL(url)
    else:
        urls = gateway.new_array(jvm.java.net.URL, 1)  # py4j's gateway makes Java arrays
        urls[0] = url
        thread.setContextClassLoader(jvm.java.net.URLClassLoader(urls, loader))


def spark_context(spark: Any) -> SparkContext:
    """The SparkContext of a SparkSession (or the SparkContext itself)."""
    return getattr(spark, "sparkContext", spark)


def java_class(sc: Any, name: str) -> Any:
    """The py4j handle of the Java class *name* (fully qualified) in the driver's JVM."""
    return functools.reduce(getattr, name.split("."), sc._jvm)  # noqa: SLF001 - py4j gateway


def max_concurrent_tasks(sc: Any) -> int:
    """Task slots of the executors registered now: what Spark's barrier stage check counts
    (the JVM ``SparkContext.maxNumConcurrentTasks``, which PySpark does not expose)."""
    jsc = sc._jsc.sc()  # noqa: SLF001 - the Scala SparkContext
    profile = jsc.resourceProfileManager().defaultResourceProfile()
    return int(jsc.maxNumConcurrentTasks(profile))


def replace_executor(sc: Any, executor: str) -> bool:
    """Have Spark kill *executor* and ask its cluster manager for another in its place
    (the JVM ``SparkContext.killAndReplaceExecutor``, what Spark's heartbeat receiver does with
    an executor it stopped hearing from): its task slots stop counting at once. Whether Spark
    took the request."""
    jsc = sc._jsc.sc()  # noqa: SLF001 - the Scala SparkContext
    return bool(jsc.killAndReplaceExecutor(str(executor)))


def jobs_with_tag(sc: Any, tag: str) -> list[int]:
    """The ids of the jobs carrying the job tag *tag* that Spark's status tracker knows of
    (submitted: queued, running or ended; the tracker learns of a job a moment after its
    submission). PySpark's ``StatusTracker`` asks only by job group."""
    tracker = sc._jsc.sc().statusTracker()  # noqa: SLF001 - the Scala SparkContext
    return [int(i) for i in tracker.getJobIdsForTag(tag)]


def executor_losses(sc: Any) -> Any:
    """The jar's :data:`EXECUTOR_LOSSES_CLASS` listener of *sc*: added to Spark's listener bus
    on the first call (later calls return the same one). It records, from then on, which
    executor runs each task and why Spark removed an executor."""
    jsc = sc._jsc.sc()  # noqa: SLF001 - the Scala SparkContext
    return java_class(sc, EXECUTOR_LOSSES_CLASS).register(jsc)


def executor_loss(listener: Any, task_id: int, timeout: float) -> dict[str, str] | None:
    """What *listener* (from :func:`executor_losses`) knows of the executor that ran the task
    *task_id* (``TaskContext.taskAttemptId()``), waiting up to *timeout* seconds for the reason
    Spark removed it.

    Returns:
        None for a task it never saw; else ``executor`` and, when known, ``host``,
        ``container`` (a YARN container id) and ``reason`` (Spark's text: on YARN the
        container's exit status and YARN's diagnostic).
    """
    loss = listener.lossOfTask(int(task_id), max(0, int(timeout * 1000)))
    return None if loss is None else {str(k): str(loss[k]) for k in loss}


def is_dataframe(data: Any) -> bool:
    """Whether *data* is a Spark DataFrame of a classic session (it has a Java Dataset)."""
    return hasattr(data, "_jdf") and hasattr(data, "schema")


def is_connect(data: Any) -> bool:
    """Whether *data* (a session, DataFrame, Column...) belongs to a Spark Connect client:
    there is no JVM behind it in this process, only the DataFrame API and SQL."""
    return type(data).__module__.startswith("pyspark.sql.connect.")


def is_stopped(sc: Any) -> bool:
    """Whether the classic SparkContext *sc* was stopped (``SparkContext.stop()``): it has no
    JVM context any more."""
    return getattr(sc, "_jsc", None) is None


def java_dataset(df: Any) -> Any:
    """The Java ``Dataset<Row>`` behind the DataFrame *df*."""
    return df._jdf  # noqa: SLF001 - py4j's handle


def java_records(rdd: Any) -> Any:
    """An RDD of ``bytes`` records as a ``JavaRDD<byte[]>``: each record crosses from the
    Python worker as it is (never pickled). Raises TypeError, when computed, for a record
    that is not bytes-like."""
    from pyspark.serializers import NoOpSerializer  # noqa: PLC0415 - pyspark, the `spark` extra

    framed = rdd.map(_as_bytes)
    framed._jrdd_deserializer = NoOpSerializer()  # noqa: SLF001 - how the worker writes them
    return framed._jrdd  # noqa: SLF001 - the JavaRDD behind it


def records_frame(rdd: Any) -> Any:
    """An RDD of ``bytes`` records as a DataFrame of one binary column ``record`` (partition
    for partition, made in the JVM from :func:`java_records`: no record is pickled), which
    ``record_type="ByteArray"`` writes or feeds as the records they are."""
    from pyspark.sql import DataFrame, SparkSession  # noqa: PLC0415 - pyspark, the `spark` extra

    sc = rdd.context
    ensure_jar(sc)
    spark = SparkSession.builder.getOrCreate()
    jdf = call(java_class(sc, FEED_BATCHES_CLASS).recordsFrame,
               spark._jsparkSession, java_records(rdd))  # noqa: SLF001 - py4j's handle
    return DataFrame(jdf, spark)


def _as_bytes(record: Any) -> bytes:
    if type(record) is bytes:
        return record
    if isinstance(record, (bytearray, memoryview)):
        return bytes(record)
    raise TypeError(f"an RDD of records must hold bytes records, not {type(record)}")


def codec_class(compression: str | None) -> str | None:
    """The Hadoop codec class of a ``compression`` argument: ``"gzip"``, ``"zlib"`` or its
    other name ``"deflate"`` (:data:`CODECS`); None for None, ``"none"`` or ``""`` (no
    compression). Names in any case (TensorFlow's ``"GZIP"``, ``"ZLIB"``, ``"NONE"`` too).

    Raises:
        ValueError: another compression name.
    """
    if compression is None:
        return None
    name = str(compression).lower()
    if name in _NO_CODEC:
        return None
    codec = CODECS.get(name)
    if codec is None:
        raise ValueError(
            f"compression must be 'gzip', 'zlib' (or 'deflate'), 'none' or None, not "
            f"{compression!r}"
        )
    return codec


def as_hadoop_conf(conf: Mapping[str, Any] | None) -> dict[str, str]:
    """*conf* (the ``conf`` argument of the RDD and DataFrame functions) as the strings a Hadoop
    ``Configuration`` and Spark's data source options hold: booleans as ``"true"`` and
    ``"false"`` (Hadoop's spelling), numbers in decimal (``1 << 30`` as ``"1073741824"``; a
    whole float too, as Hadoop's ``getLong`` reads it: ``1e9`` as ``"1000000000"``),
    strings as they are. The JVM side takes a ``Map<String, String>``: any other value would
    cross py4j as a Java ``Integer`` or ``Boolean`` and fail there with a ClassCastException.

    Raises:
        TypeError: a value that is None or of another type (a list, a dict, bytes...), which
            Hadoop has no form of; the message names its key and the value's type, never the
            value (which may be a secret).
    """
    converted = {}
    for key, value in (conf or {}).items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, numbers.Integral):
            text = str(int(value))
        elif isinstance(value, numbers.Real):
            number = float(value)
            # A whole number (a size as 1e9, 64e6) as Hadoop's getInt and getLong read it:
            # "1000000000.0" fails them in every task; getFloat and getDouble read "1" too.
            whole = number.is_integer() and abs(number) < 2**63
            text = str(int(number)) if whole else str(number)
        elif isinstance(value, str):
            text = str(value)
        else:
            # The value itself is never shown: it may be a secret (fs.s3a.secret.key read from
            # a file as bytes), and the message reaches logs and tracebacks.
            raise TypeError(
                f"conf[{key!r}] is a {type(value).__name__}: Hadoop settings take a string, a "
                "bool or a number; give the value as Hadoop reads it (a string), or leave the "
                "key out"
            )
        converted[str(key)] = text
    return converted


def _driver_loads(jvm: Any, class_name: str) -> bool:
    try:
        jvm.org.apache.spark.util.Utils.classForName(class_name, True, False)
        return True
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException
        return False


def input_paths(path: InputPaths) -> list[str]:
    """The paths an input names: a comma-separated list cut at its commas outside braces, as
    Hadoop's ``FileInputFormat`` cuts one (``"/a,/b/{x,y}"`` is ``/a`` and ``/b/{x,y}``), or
    the items of a list or tuple, each one path (as Spark's ``DataFrameReader.load`` takes
    them).

    Raises:
        ValueError: no paths; an item of a list holding a comma outside braces, which Hadoop
            would read as two paths.
    """
    if isinstance(path, (list, tuple)):
        items = [os.fspath(p) for p in path]
        for item in items:
            if len(split_list(item)) > 1:
                raise ValueError(f"the path {item!r} holds a comma outside braces, which "
                                 "Hadoop reads as two paths; rename it, or give its files "
                                 "as a glob")
    else:
        items = split_list(os.fspath(path))
    if not items:
        raise ValueError("no input paths given")
    return items


def qualify(sc: Any, path: InputPaths, *, output: bool = False) -> str:
    """Resolves a path the way Hadoop does on the driver, so executors agree on it.

    An input (see :func:`input_paths`) is qualified path by path, then given to the jar as a
    comma-separated list. An *output* is one path, whose commas are part of its name.

    Raises:
        ValueError: a path that Hadoop cannot name (an empty one; a relative one whose first
            part holds a colon, ``a:b``), as a Spark Connect server reports it.
    """
    jvm = sc._jvm  # noqa: SLF001 - py4j's handle to the JVM
    hadoop_conf = sc._jsc.hadoopConfiguration()  # noqa: SLF001 - the JavaSparkContext (py4j)
    qualified = []
    for part in [os.fspath(path)] if output else input_paths(path):  # type: ignore[arg-type]
        try:
            # Hadoop's refusal (an IllegalArgumentException) as call() translates it.
            p = call(jvm.org.apache.hadoop.fs.Path, part)
        except ValueError as e:
            raise ValueError(f"{part!r} is not a path Hadoop can name ({e}): give a "
                             "non-empty path (a relative one whose first part holds a colon "
                             "as ./NAME) or a URL") from None
        qualified.append(p.getFileSystem(hadoop_conf).makeQualified(p).toString())
    return ",".join(qualified)


def call(method: Any, *args: Any) -> Any:
    """Calls a method of the jar, turning its Java errors into Python ones.

    :data:`SCHEMA_EXCEPTION` becomes :class:`SchemaError`, ``FileNotFoundException``
    :class:`FileNotFoundError`, a top-level ``IllegalArgumentException`` :class:`ValueError`.
    PySpark's py4j hook already turns some Java exceptions (IllegalArgumentException and its
    subclasses, among others) into ``pyspark.errors`` exceptions that keep the Java one as
    ``_origin``; others arrive as ``Py4JJavaError`` with ``java_exception``.
    """
    try:
        return method(*args)
    except Exception as e:
        java = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
        translated = _translate(java) if java is not None else None
        if translated is None:
            raise
        raise translated from None


def call_remote(action: Callable[[], Any]) -> Any:
    """Runs *action* (DataFrame calls of a Spark Connect client), turning the jar's errors that
    the server reports into the Python ones :func:`call` gives: :data:`SCHEMA_EXCEPTION`
    :class:`SchemaError`, ``FileNotFoundException`` :class:`FileNotFoundError`,
    ``IllegalArgumentException`` :class:`ValueError`."""
    try:
        return action()
    except Exception as e:
        translated = _translate_remote(e)
        if translated is None:
            raise
        raise translated from None


def _translate_remote(error: Exception) -> Exception | None:
    """The Python exception for a Spark Connect error, from the Java classes that the server's
    stack trace names (a Spark 4 server sends it unless
    ``spark.sql.connect.serverStacktrace.enabled`` is off). Spark 3.5's Connect client keeps no
    stack trace: there the top Java class is the first of the classes that the server's gRPC
    status names, and the causes are found in the message, which holds a failed task's text
    (abbreviated by the server)."""
    trace = str(getattr(error, "_stacktrace", None) or "")
    message = str(getattr(error, "_message", None) or error).strip()
    top = trace.split("\n", 1)[0].strip() if trace else next(iter(_remote_classes(error)), "")
    causes = trace or message
    for name, kind, nested in (
        (SCHEMA_EXCEPTION, SchemaError, True),
        ("java.io.FileNotFoundException", FileNotFoundError, True),
        (_FILE_EXISTS_EXCEPTION, FileExistsError, True),
        ("java.lang.IllegalArgumentException", ValueError, False),
    ):
        if top == name:
            return kind(message)
        match = re.search(re.escape(name) + r": (.*)", causes) if nested else None
        if match:
            return kind(match.group(1).strip())
    return None


def _remote_classes(error: BaseException) -> list[str]:
    """The Java classes (the thrown one first, then its superclasses) that a Spark Connect
    server named in the gRPC status of *error*: Spark 3.5's client raises its exception while
    handling the gRPC error, which stays its ``__context__``. Empty when there is none."""
    call = error.__context__
    if call is None or not hasattr(call, "trailing_metadata"):
        return []
    try:
        from google.rpc import error_details_pb2  # noqa: PLC0415 - the Connect client's deps
        from grpc_status import rpc_status  # noqa: PLC0415 - the Connect client's deps

        status = rpc_status.from_call(call)
    except Exception:  # noqa: BLE001 - not a gRPC call after all, or no client dependencies
        return []
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            try:
                classes = json.loads(info.metadata.get("classes", "[]"))
            except ValueError:
                return []
            return [str(c) for c in classes] if isinstance(classes, list) else []
    return []


def _translate(java: Any) -> Exception | None:
    """The Python exception for a Java one: SchemaError, FileNotFoundError, FileExistsError
    (an output directory that exists), or None."""
    for depth, cause in enumerate(_causes(java)):
        name = cause.getClass().getName()
        if name == SCHEMA_EXCEPTION:
            return SchemaError(cause.getMessage())
        if name == "java.io.FileNotFoundException":
            return FileNotFoundError(cause.getMessage())
        if name == _FILE_EXISTS_EXCEPTION:
            return FileExistsError(cause.getMessage())
        if name == "java.lang.IllegalArgumentException" and depth == 0:
            return ValueError(cause.getMessage())
    # A task's exception may reach the driver only as text in the job failure's message.
    match = re.search(re.escape(SCHEMA_EXCEPTION) + r": (.*)", str(java.toString()))
    if match:
        return SchemaError(match.group(1).strip())
    return None


# How deep a Java exception's causes are followed: to the root cause, not forever (a cycle).
_MAX_CAUSES = 20


def _causes(java: Any) -> list[Any]:
    """A Java throwable and its causes, outermost first (at most :data:`_MAX_CAUSES`)."""
    chain = []
    while java is not None and len(chain) < _MAX_CAUSES:
        chain.append(java)
        java = java.getCause()
    return chain


#: Top-level packages whose exceptions are Spark's: pyspark's own (PySparkException, captured
#: JVM exceptions) and py4j's (Py4JJavaError: a JVM exception; Py4JNetworkError: the JVM gone).
_SPARK_PACKAGES = ("pyspark", "py4j")
# How a Python traceback starts, and its last "Type: message" line: a task's error, inside a
# Java exception's message.
_TRACEBACK = "Traceback (most recent call last):"
_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)\b.*)$", re.MULTILINE)


def describe_failure(exc: BaseException) -> str | None:
    """A one-line description of a failure that pyspark or py4j raised, for a person: the Java
    exception's class and message (its first line), with its root cause if it has another, and
    for a task that failed in Python, that task's error. None for an exception of anything
    else. A failure whose JVM is gone is described from its text. Exceptions are recognised by
    the modules of their classes: this needs neither pyspark nor py4j installed.

    Example: ``org.apache.spark.SparkException: Job aborted due to stage failure: ... (caused
    by java.io.IOException: No space left on device)``.
    """
    if not any(
        cls.__module__.split(".", 1)[0] in _SPARK_PACKAGES for cls in type(exc).__mro__
    ):
        return None
    throwable = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    texts = _java_texts(throwable) if throwable is not None else []
    if not texts:
        try:
            text = str(exc)
        except Exception:  # noqa: BLE001 - its JVM may be gone: the class name is left
            text = ""
        # A Py4JJavaError whose JVM is gone: "An error occurred while calling o1.save.\n: ..."
        java = [line[2:] for line in text.splitlines() if line.startswith(": ")]
        texts = java[:1] or [f"{type(exc).__name__}: {text}" if text else type(exc).__name__]
    first = [_first_line(text) for text in texts]
    message = first[0]
    if len(first) > 1 and first[-1] not in message:
        message += f" (caused by {first[-1]})"
    if any("PythonException" in line for line in first):  # a task failed in Python: how
        found = [error for text in texts
                 for error in _PYTHON_ERROR.findall(text.split("\n\tat ", 1)[0])]
        if found and found[-1].strip() not in message:
            message += f": {found[-1].strip()}"
    return message


def _java_texts(throwable: Any) -> list[str]:
    """``toString()`` of a Java throwable and of its root cause, if it has another; empty if
    the JVM cannot be asked."""
    try:
        chain = _causes(throwable)
        # "java.io.IOException: message"
        return [str(cause.toString()) for cause in (chain[:1] + chain[1:][-1:])]
    except Exception:  # noqa: BLE001 - the JVM may be gone
        return []


def _first_line(text: str) -> str:
    """The first line of a Java exception's text, without the start of a Python traceback that
    a task's error has there."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), text.strip())
    if line.endswith(_TRACEBACK):
        line = line[:-len(_TRACEBACK)].rstrip(" :")
    return line
