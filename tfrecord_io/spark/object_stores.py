"""Object stores in Spark: Hadoop's S3A connector configured from the same settings that
tfrecord-io's ``s3://`` uses in Python and TensorFlow (:mod:`tfrecord_io.fs.s3`: the standard
AWS environment), so that one configuration serves every side and an ``s3://`` URL names the
same object in Spark, in Python, in TensorFlow and on the command line.

Spark reaches object stores through Hadoop's connectors, which pyspark does not bundle. S3A is
``org.apache.hadoop:hadoop-aws`` of the very Hadoop version that Spark bundles (with the AWS
SDK bundle it depends on), e.g. as a package that Spark resolves from Maven Central at start::

    from tfrecord_io import spark as tfs

    spark = tfs.session("local[2]", **tfs.s3a_conf(),
                        **{"spark.jars.packages": tfs.hadoop_aws_package()})
    tfs.save_dataframe(df, "s3://bucket/data")      # the same URL TensorFlow reads
    spark.read.format("tfrecord").load("s3a://bucket/data")

:func:`s3a_conf` maps ``s3://`` to S3A (Spark's open-source Hadoop has no ``s3://`` of its own),
and passes the endpoint, region, addressing style, timeouts (in plain milliseconds, which the
S3A of Hadoop 3.3.4, pyspark 3.5's, and of Hadoop 3.4 and later all read; S3A connects for 15 s
at least) and attempts on; credentials stay with the AWS chain of each JVM (environment,
profile, instance role: S3A's default providers) unless asked for. Writes go through S3A's
"magic" committer: each task uploads its files once, as multipart uploads that only the job's
commit completes, so nothing is visible at the destination before the job commits and nothing
after a failed task or job, and no file is copied (S3 has no rename). DataFrame writes reach it
through tfrecord-io's jar's commit protocol (:data:`COMMIT_PROTOCOL`; Spark's own stages files
only for ``FileOutputCommitter``). ``s3a_conf(committer="file")`` keeps Hadoop's
``FileOutputCommitter`` instead: the same guarantees, each task's files promoted by a copy and a
delete per file when the task commits, and again when the job does.

Azure Blob Storage and ADLS Gen2 go through Hadoop's ABFS connector (``hadoop-azure`` of the
same Hadoop version, :func:`hadoop_azure_package`), whose URLs are the ones tfrecord-io's
``abfs[s]://`` reads in Python and TensorFlow (``abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/
KEY``; ``az://`` has no account in it and is not Hadoop's). :func:`abfs_conf` configures it from
the settings ``az://`` and ``abfs://`` use (:mod:`tfrecord_io.fs.azure`: the account, its shared
key, a Blob endpoint)::

    spark = tfs.session("local[2]", **tfs.abfs_conf(),
                        **{"spark.jars.packages": tfs.hadoop_azure_package()})
    tfs.save_dataframe(df, "abfs://data@myaccount.dfs.core.windows.net/people")

ABFS takes a shared key only from the Hadoop configuration (it has no credential chain of the
environment), so :func:`abfs_conf` passes the account's key there. Spark's default
``spark.redaction.regex`` does not cover ABFS's key names (``fs.azure.account.key.*``), and an
application's redaction is fixed when it starts: the key is redacted in Spark's UI and event
logs only in an application started with a regex that covers it, :data:`REDACTION_REGEX`
(which :func:`abfs_conf` gives for a new session's configuration, and
:func:`tfrecord_io.spark.session` sets for every application it starts). In an application
started without it, :func:`configure_abfs` puts the key in clear wherever Spark shows the
session's or the Hadoop configuration. With a Blob endpoint of its own (an emulator such as
Azurite, or a private endpoint) and no Data Lake one, the account is reached as a flat-namespace
account through its Blob endpoint, which ABFS supports since Hadoop 3.4.2. DataFrame writes
commit through ABFS's own committer, Hadoop's manifest committer, staged by tfrecord-io's
:data:`COMMIT_PROTOCOL` (Spark's own protocol would let tasks write straight to the
destination): nothing is visible before the job commits, and a failed job leaves no file.

Google Cloud Storage (``gs://``) goes through Google's connector for Hadoop, whose shaded jar
(``com.google.cloud.bigdataoss:gcs-connector``, classifier ``shaded``, version
:data:`GCS_CONNECTOR_VERSION`: Google's libraries relocated inside it) must be on the
application's classpath (``spark.jars``, or ``--jars``: Spark's ``spark.jars.packages`` takes
no classifier, and the unshaded artifact's dependencies clash with Spark's).
:func:`gcs_conf` configures it from the settings tfrecord-io's own ``gs://`` uses
(:mod:`tfrecord_io.fs.gcs`: Application Default Credentials, ``GOOGLE_CLOUD_PROJECT``,
``STORAGE_EMULATOR_HOST``)::

    spark = tfs.session("local[2]", **tfs.gcs_conf(),
                        **{"spark.jars": "/path/to/gcs-connector-3.0.4-shaded.jar"})
    tfs.save_dataframe(df, "gs://bucket/data")      # the same URL Python reads

Hadoop 3.5 (Spark 4.1's and later) names a GCS connector of its own, ``hadoop-gcp``, in its
defaults; it has no endpoint setting and no unauthenticated access, so it cannot reach an
emulator, and its defaults give sizes with units (``64m``) that Google's connector reads as
plain numbers. :func:`gcs_conf` points ``gs://`` at Google's connector and gives those sizes
as numbers. Its default committer for ``gs://``, the manifest committer, is not one Spark's
own commit protocol stages through (that takes a protocol like :data:`COMMIT_PROTOCOL`, which
:func:`gcs_conf` does not set and which is not tested on GCS): tasks would write straight to
the destination, and a failed task would leave its part file there. :func:`gcs_conf` sets
``FileOutputCommitter`` for ``gs://``: a task's output is staged and promoted only when it
commits (each promotion a copy).
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, TypeVar

from tfrecord_io.errors import MissingDependencyError
from tfrecord_io.fs.azure import AzureFileSystem, AzureSettings
from tfrecord_io.fs.gcs import GcsFileSystem, GcsSettings
from tfrecord_io.fs.registry import filesystem
from tfrecord_io.fs.s3 import S3FileSystem, S3Settings
from tfrecord_io.spark.jvm import REDACTION_REGEX, is_connect

__all__ = ["COMMIT_PROTOCOL", "GCS_CONNECTOR_VERSION", "GCS_FILE_SYSTEM", "S3A_COMMITTERS",
           "S3A_FILE_SYSTEM", "abfs_conf", "configure_abfs", "configure_gcs", "configure_s3a",
           "abfs_url", "gcs_conf", "hadoop_aws_package", "hadoop_azure_package",
           "hadoop_version", "s3a_conf"]

#: Hadoop's S3A file system class (``s3a://``), which :func:`s3a_conf` also gives ``s3://``.
S3A_FILE_SYSTEM = "org.apache.hadoop.fs.s3a.S3AFileSystem"
_S3A_ABSTRACT = "org.apache.hadoop.fs.s3a.S3A"
#: The commit protocol (in tfrecord-io's jar) that stages a DataFrame write's files where the
#: destination's Hadoop committer says (``spark.sql.sources.commitProtocolClass``).
COMMIT_PROTOCOL = "org.tfrecordio.spark.PathOutputCommitProtocol"
#: The committers :func:`s3a_conf` sets up: S3A's ``magic`` (no copies), Hadoop's ``file``.
S3A_COMMITTERS = ("magic", "file")
_S3A_COMMITTER_FACTORY = "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory"
_HADOOP_CLIENT = re.compile(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar$")
# S3A raises a shorter connect timeout to this (with a warning), since Hadoop 3.4.
_S3A_MIN_CONNECT_TIMEOUT = 15.0
# Java's Integer.MAX_VALUE: the largest value Configuration.getInt reads.
_INT_MAX = 2**31 - 1

_Store = TypeVar("_Store", S3FileSystem, GcsFileSystem, AzureFileSystem)

# The host under which ABFS looks up an account's settings (the one its URLs name).
_ABFS_HOST = "{account}.dfs.core.windows.net"

#: The version of Google's Cloud Storage connector that the project tests (its shaded jar).
GCS_CONNECTOR_VERSION = "3.0.4"
#: Google's connector's file system class, which :func:`gcs_conf` gives ``gs://``.
GCS_FILE_SYSTEM = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
_GCS_ABSTRACT = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS"
_FILE_OUTPUT_COMMITTER_FACTORY = "org.apache.hadoop.mapreduce.lib.output.FileOutputCommitterFactory"
# Hadoop 3.5's defaults for its own hadoop-gcp, with units; the same sizes in bytes, which
# Google's connector reads (as plain numbers).
_GCS_SIZES = {
    "fs.gs.block.size": 64 << 20,
    "fs.gs.outputstream.buffer.size": 8 << 20,
    "fs.gs.inputstream.inplace.seek.limit": 8 << 20,
    "fs.gs.inputstream.min.range.request.size": 2 << 20,
    "fs.gs.rewrite.max.chunk.size": 512 << 20,
}


def _milliseconds(seconds: float) -> str:
    """*seconds* as S3A's connection timeouts must be spelled for every Hadoop that pyspark
    bundles: a plain number of milliseconds, no unit. Hadoop 3.3.4 (pyspark 3.5) reads
    ``fs.s3a.connection.establish.timeout`` and ``fs.s3a.connection.timeout`` with
    ``Configuration.getInt`` (``"15000ms"`` is a NumberFormatException there); Hadoop 3.4 and
    later (pyspark 4) read them as durations whose unit, when none is given, is milliseconds.
    At most ``Integer.MAX_VALUE``, what ``getInt`` takes."""
    return str(min(_INT_MAX, max(1, round(seconds * 1000))))


def s3a_conf(
    settings: S3Settings | None = None, *, credentials: bool = False,
    prefix: str = "spark.hadoop.", committer: str = "magic",
) -> dict[str, str]:
    """The Spark configuration that makes S3A use *settings* (default: what ``s3://`` uses in
    this process now, :meth:`~tfrecord_io.fs.s3.S3FileSystem.settings`) and serve ``s3://``
    URLs too.

    Args:
        settings: the S3 configuration to pass on.
        credentials: also pass the settings' explicit keys (``fs.s3a.access.key``,
            ``fs.s3a.secret.key``, ``fs.s3a.session.token``): for a driver whose executors do
            not share its environment and have no role of their own. Spark redacts these keys
            in its UI and event logs (``spark.redaction.regex``), but they travel in the
            application's configuration; by default each JVM finds its own credentials.
        prefix: ``"spark.hadoop."`` for a new session's configuration; ``""`` for the keys of
            a running session's ``spark.conf.set`` (its DataFrame reads and writes take them,
            Spark Connect sessions included) or of a Hadoop ``Configuration``.
        committer: ``"magic"``: S3A's magic committer (``fs.s3a.committer.name``), for
            ``s3a://`` and ``s3://``, and :data:`COMMIT_PROTOCOL` for DataFrame writes, which
            then needs tfrecord-io's jar in the application (as ``format("tfrecord")`` does)
            and applies to the session's writes to every scheme (elsewhere it uses the
            committer Hadoop names for the scheme, as Spark's own protocol does; dynamic
            partition overwrite stays with Spark's). ``"file"``: Hadoop's
            ``FileOutputCommitter`` through Spark's own protocol.

    Returns:
        The settings, as strings, keyed with *prefix* (but for the commit protocol, a Spark
        setting: ``spark.sql.sources.commitProtocolClass``).
    """
    if committer not in S3A_COMMITTERS:
        raise ValueError(f"committer must be one of {S3A_COMMITTERS}, not {committer!r}")
    if settings is None:
        settings = _serving("s3", S3FileSystem).settings()
    conf = {
        "fs.s3.impl": S3A_FILE_SYSTEM,
        "fs.AbstractFileSystem.s3.impl": _S3A_ABSTRACT,
        "fs.s3a.path.style.access": str(settings.addressing == "path").lower(),
        "fs.s3a.connection.establish.timeout": _milliseconds(
            max(settings.connect_timeout, _S3A_MIN_CONNECT_TIMEOUT)),
        "fs.s3a.connection.timeout": _milliseconds(settings.request_timeout),
        # S3A's setting counts the retries after the first attempt
        "fs.s3a.attempts.maximum": str(max(0, settings.max_attempts - 1)),
        "fs.s3a.committer.name": committer,
        "fs.s3a.committer.magic.enabled": "true",  # Hadoop 3.3.4's default was false
        # A task's list of uploads stays in its own memory until it commits, not in a .pending
        # object per file written, read back and deleted: a Spark task commits what it wrote.
        "fs.s3a.committer.magic.track.commits.in.memory.enabled": str(
            committer == "magic").lower(),
        "mapreduce.outputcommitter.factory.scheme.s3a": _S3A_COMMITTER_FACTORY,
        "mapreduce.outputcommitter.factory.scheme.s3": _S3A_COMMITTER_FACTORY,
    }
    if settings.endpoint is not None:
        conf["fs.s3a.endpoint"] = settings.endpoint
        conf["fs.s3a.connection.ssl.enabled"] = str(
            settings.endpoint.startswith("https://")).lower()
    if settings.region is not None:
        conf["fs.s3a.endpoint.region"] = settings.region
    if credentials and settings.access_key and settings.secret_key:
        conf["fs.s3a.access.key"] = settings.access_key
        conf["fs.s3a.secret.key"] = settings.secret_key
        if settings.session_token:
            conf["fs.s3a.session.token"] = settings.session_token
            conf["fs.s3a.aws.credentials.provider"] = (
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider")
    keyed = {prefix + key: value for key, value in conf.items()}
    if committer == "magic":
        keyed["spark.sql.sources.commitProtocolClass"] = COMMIT_PROTOCOL
    return keyed


def hadoop_version() -> str:
    """The Hadoop version that the installed pyspark bundles (its ``hadoop-client-api`` jar):
    the version every Hadoop connector added to it must have.

    Raises:
        MissingDependencyError: pyspark is not installed, or is the client-only
            ``pyspark-client`` (no jars: the cluster's Spark decides).
    """
    try:
        import pyspark  # noqa: PLC0415 - the `spark` extra
    except ImportError as e:
        raise MissingDependencyError("pyspark", "spark", "tfrecord_io.spark") from e
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    for path in sorted(glob.glob(os.path.join(jars, "hadoop-client-api-*.jar"))):
        found = _HADOOP_CLIENT.search(path)
        if found:
            return found.group(1)
    raise MissingDependencyError("pyspark", "spark", "hadoop_version() (pyspark with its jars)")


def hadoop_aws_package() -> str:
    """``org.apache.hadoop:hadoop-aws:VERSION`` for ``spark.jars.packages``, VERSION the
    Hadoop that the installed pyspark bundles (:func:`hadoop_version`)."""
    return f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"


def configure_s3a(spark: Any, *, credentials: bool = False, committer: str = "magic") -> None:
    """Configures S3A in the running session *spark* as :func:`s3a_conf` gives it: in the
    session's configuration (its DataFrame reads and writes, Spark Connect sessions included)
    and, on a classic session, in the SparkContext's Hadoop configuration (RDD reads and
    writes: :func:`tfrecord_io.spark.save_records`). The connector must already be on the
    application's classpath (:func:`hadoop_aws_package` at its start)."""
    _configure(spark, s3a_conf(credentials=credentials, prefix="", committer=committer))


def abfs_conf(settings: AzureSettings | None = None, *,
              prefix: str = "spark.hadoop.") -> dict[str, str]:
    """The Spark configuration that makes Hadoop's ABFS connector reach *settings*' account
    (default: what ``az://`` and ``abfs://`` use in this process now,
    :meth:`~tfrecord_io.fs.azure.AzureFileSystem.settings`) with its shared key; with a Blob
    endpoint of their own and no Data Lake one (an emulator such as Azurite), as a
    flat-namespace account through that endpoint (``fs.azure.abfs.endpoint``: path-style URLs,
    the account the first segment of each path, as Azurite serves them); writes committed by
    ABFS's manifest committer through :data:`COMMIT_PROTOCOL`.

    Args:
        settings: the Azure configuration to pass on; it must name the account.
        prefix: ``"spark.hadoop."`` for a new session's configuration, which then also holds
            ``spark.redaction.regex`` (:data:`REDACTION_REGEX`: the key redacted wherever Spark
            shows the configuration, if the application starts with these settings; an
            ``spark.redaction.regex`` given after them replaces it); ``""`` for a running
            session's ``spark.conf.set`` or a Hadoop ``Configuration`` (:func:`configure_abfs`),
            without a redaction setting, which a running application cannot change.

    Returns:
        The settings, as strings, keyed with *prefix* (but for the commit protocol and the
        redaction, Spark settings).

    Raises:
        ValueError: the settings name no account (``AZURE_STORAGE_ACCOUNT_NAME``).
    """
    if settings is None:
        settings = _serving("abfs", AzureFileSystem).settings()
    if not settings.account_name:
        raise ValueError("abfs_conf needs the storage account: set AZURE_STORAGE_ACCOUNT_NAME "
                         "(or AccountName in AZURE_STORAGE_CONNECTION_STRING)")
    host = _ABFS_HOST.format(account=settings.account_name)
    conf: dict[str, str] = {}
    if settings.account_key:
        conf[f"fs.azure.account.auth.type.{host}"] = "SharedKey"
        conf[f"fs.azure.account.key.{host}"] = settings.account_key
    endpoint = settings.dfs_endpoint or settings.blob_endpoint
    if endpoint is not None:
        scheme, _, authority = endpoint.partition("://")
        conf["fs.azure.abfs.endpoint"] = authority
        if scheme == "http":
            conf["fs.azure.always.use.https"] = "false"
            # ABFS's Apache HTTP client refuses plain HTTP ("SSL socket factory may not be
            # null"); the JDK's serves it.
            conf["fs.azure.networking.library"] = "JDK_HTTP_URL_CONNECTION"
        if settings.dfs_endpoint is None:
            conf["fs.azure.account.hns.enabled"] = "false"
            conf["fs.azure.fns.account.service.type"] = "BLOB"
        # ABFS reports its client metrics to the store when a file system closes, which an
        # emulator does not answer: each JVM's exit then waited 30 s for its shutdown hook.
        conf["fs.azure.metrics.collection.enabled"] = "false"
    keyed = {prefix + key: value for key, value in conf.items()}
    keyed["spark.sql.sources.commitProtocolClass"] = COMMIT_PROTOCOL
    if prefix:
        keyed["spark.redaction.regex"] = REDACTION_REGEX
    return keyed


def abfs_url(url: str) -> str | None:
    """The URL by which Hadoop's ABFS connector (and so Spark) names the place that *url*
    names, when *url* is one that Hadoop cannot use: ``az://CONTAINER/KEY`` (a scheme of
    tfrecord-io's alone) becomes ``abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/KEY``, and an
    ``abfs[s]://CONTAINER/KEY`` without the account, which ABFS needs, gets it. ACCOUNT is the
    account that ``az://`` uses in this process (``AZURE_STORAGE_ACCOUNT_NAME``), or the
    placeholder ``ACCOUNT`` when none is configured.

    Returns:
        That URL, or None for a URL that Hadoop names as it is (any other scheme, or an
        ``abfs[s]://`` URL with the account).
    """
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if not rest or scheme not in ("az", "abfs", "abfss"):
        return None
    container, _, key = rest.partition("/")
    if scheme != "az" and "@" in container:
        return None
    account = _serving("abfs", AzureFileSystem).settings().account_name or "ACCOUNT"
    hadoop_scheme = "abfs" if scheme == "az" else scheme
    return f"{hadoop_scheme}://{container}@{_ABFS_HOST.format(account=account)}/{key}"


def hadoop_azure_package() -> str:
    """``org.apache.hadoop:hadoop-azure:VERSION`` for ``spark.jars.packages``, VERSION the
    Hadoop that the installed pyspark bundles (:func:`hadoop_version`)."""
    return f"org.apache.hadoop:hadoop-azure:{hadoop_version()}"


def configure_abfs(spark: Any) -> None:
    """Configures ABFS in the running session *spark* as :func:`abfs_conf` gives it, as
    :func:`configure_s3a` does for S3A. The connector must already be on the application's
    classpath.

    The account key goes into the session's configuration and, on a classic session, the
    SparkContext's Hadoop configuration. Spark redacts it wherever it shows them (its UI, its
    event log) only if the application (for a Spark Connect session, the Connect server) was
    started with a ``spark.redaction.regex`` that covers ``fs.azure.account.key.*``, such as
    :data:`REDACTION_REGEX`, which :func:`tfrecord_io.spark.session` sets for every application
    it starts (unless given another). Spark's default regex does not cover it, and a running
    application's regex cannot be changed: in an application started otherwise (by
    ``SparkSession.builder`` alone, a notebook's own session, a Connect server's defaults) the
    key shows in clear. There, start the application with ``spark.redaction.regex`` set to
    :data:`REDACTION_REGEX` (``--conf`` of ``spark-submit``, or the builder's ``config``), or
    pass the credentials when the session is built, ``session(..., **abfs_conf())``, instead of
    calling this function."""
    _configure(spark, abfs_conf(prefix=""))


def gcs_conf(settings: GcsSettings | None = None, *,
             prefix: str = "spark.hadoop.") -> dict[str, str]:
    """The Spark configuration that makes Google's Cloud Storage connector serve ``gs://``
    with *settings* (default: what ``gs://`` uses in this process now,
    :meth:`~tfrecord_io.fs.gcs.GcsFileSystem.settings`): an emulator
    (``STORAGE_EMULATOR_HOST``) as the connector's root URL, reached unauthenticated as
    Google's client libraries reach it; else Google's service with Application Default
    Credentials, the chain tfrecord-io's ``gs://`` uses (each JVM finds its own); the project.

    Args:
        settings: the GCS configuration to pass on.
        prefix: ``"spark.hadoop."`` for a new session's configuration; ``""`` for a running
            session's ``spark.conf.set`` or a Hadoop ``Configuration``.

    Returns:
        The settings, as strings, keyed with *prefix*.
    """
    if settings is None:
        settings = _serving("gs", GcsFileSystem).settings()
    conf = {
        "fs.gs.impl": GCS_FILE_SYSTEM,
        "fs.AbstractFileSystem.gs.impl": _GCS_ABSTRACT,
        **{key: str(size) for key, size in _GCS_SIZES.items()},
        # Hadoop 3.5's default for gs:// is the manifest committer, which Spark's own commit
        # protocol does not stage through (that needs spark-hadoop-cloud's, which pyspark does
        # not ship): tasks would write to the destination itself, and a failed task's output
        # would stay there. FileOutputCommitter stages every task's output and promotes it on
        # commit.
        "mapreduce.outputcommitter.factory.scheme.gs": _FILE_OUTPUT_COMMITTER_FACTORY,
    }
    if settings.emulator is not None:
        conf["fs.gs.storage.root.url"] = settings.emulator
        conf["fs.gs.auth.type"] = "UNAUTHENTICATED"
    else:
        conf["fs.gs.auth.type"] = "APPLICATION_DEFAULT"
    if settings.project is not None:
        conf["fs.gs.project.id"] = settings.project
    return {prefix + key: value for key, value in conf.items()}


def configure_gcs(spark: Any) -> None:
    """Configures Google's Cloud Storage connector in the running session *spark* as
    :func:`gcs_conf` gives it, as :func:`configure_s3a` does for S3A. The connector's shaded
    jar must already be on the application's classpath."""
    _configure(spark, gcs_conf(prefix=""))


def _serving(scheme: str, kind: type[_Store]) -> _Store:
    """The file system that serves *scheme* in this process (one registered with
    ``fs.register``) when it is a *kind*, else a *kind* reading the environment."""
    backend, _ = filesystem(f"{scheme}://bucket")
    return backend if isinstance(backend, kind) else kind()


def _configure(spark: Any, conf: dict[str, str]) -> None:
    """Sets *conf* in *spark*'s session configuration and, on a classic session, in the
    SparkContext's Hadoop configuration."""
    for key, value in conf.items():
        spark.conf.set(key, value)
    if not is_connect(spark):
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 - py4j's own
        for key, value in conf.items():
            hadoop.set(key, value)
