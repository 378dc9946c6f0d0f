"""Exception types raised by tfrecord-io.

Every error the package raises on purpose derives from :class:`TFRecordError`, so callers can
catch the whole family at once or one specific kind.
"""

from __future__ import annotations

import io

__all__ = [
    "TFRecordError",
    "CorruptRecordError",
    "SchemaError",
    "MissingDependencyError",
    "HdfsError",
    "HdfsFileNotFoundError",
    "HdfsPermissionError",
    "HdfsFileExistsError",
    "HdfsIsADirectoryError",
    "HdfsNotADirectoryError",
    "HttpError",
    "HttpFileNotFoundError",
    "HttpPermissionError",
    "ObjectStoreError",
    "ObjectStoreFileNotFoundError",
    "ObjectStorePermissionError",
    "ObjectStoreFileExistsError",
    "BucketNotFoundError",
    "InputNotFoundError",
    "SpecialFileError",
    "FileChangedError",
    "UnsupportedURLError",
    "UnsupportedCompressionError",
    "UnsupportedOperationError",
    "JarNotFoundError",
    "SparkConnectError",
    "PluginNotBuiltError",
    "InputError",
    "OutputError",
    "MnistError",
    "ImageError",
    "DamagedImageError",
    "MiniHdfsError",
    "MiniYarnError",
    "StandaloneClusterError",
    "PostgresError",
    "ConnectServerError",
    "S3ServerError",
    "AzuriteError",
    "GcsServerError",
    "ModelError",
    "TensorBoardError",
    "ClusterError",
    "ChannelError",
    "ResizeInterrupt",
]


class TFRecordError(Exception):
    """Base class of all errors raised by tfrecord-io."""


class CorruptRecordError(TFRecordError):
    """A TFRecord file is damaged: bad CRC, impossible length, or truncated record.

    Attributes:
        path: the file (path or URL) in which the damage was found.
        offset: byte offset, in the uncompressed stream, of the record that is damaged.
        reason: what exactly is wrong.
    """

    #: What the message advises by default.
    ADVICE = ("Check the file with `tfrecord-io verify`, or read past damage with "
              "on_corrupt='skip'.")

    def __init__(self, path: str, offset: int, reason: str, advice: str = ADVICE) -> None:
        self.path = path
        self.offset = offset
        self.reason = reason
        self.advice = advice
        super().__init__(f"corrupt TFRecord in {path} at byte offset {offset}: {reason}. {advice}")

    def __reduce__(self) -> tuple[type, tuple[str, int, str, str]]:
        # Pickled as its fields (to a process pool, a Spark worker's driver): not as its message.
        return type(self), (self.path, self.offset, self.reason, self.advice)


class SchemaError(TFRecordError):
    """Data does not fit a schema: unsupported column type, or a feature of the wrong kind."""


# -- what is installed: the optional dependencies (tfrecord_io.extras) -------------------------


class MissingDependencyError(TFRecordError, ImportError):
    """An optional dependency (pyspark, TensorFlow, tf-keras, TensorBoard) that a feature needs is
    not installed. The message names the extra that installs it, e.g.
    ``pip install 'tfrecord-io[spark]'``.

    Attributes:
        module: the module that could not be imported (``"pyspark"``).
        extra: the tfrecord-io extra that installs it (``"spark"``).
        feature: what needed it, if said (``"tfrecord_io.spark"``).
    """

    def __init__(self, module: str, extra: str, feature: str | None = None) -> None:
        self.module = module
        self.extra = extra
        self.feature = feature
        needs = f"{feature} needs" if feature else "this needs"
        super().__init__(
            f"{needs} the Python module {module!r}, which is not installed: "
            f"pip install 'tfrecord-io[{extra}]'",
            name=module,
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, str | None]]:
        # Pickles whole (e.g. from a Spark executor to the driver).
        return type(self), (self.module, self.extra, self.feature)


# -- where bytes live: paths and URLs (tfrecord_io.fs and its backends) -------------------------
#
# Failures of file system operations are OSErrors, whatever the scheme: a missing path is a
# FileNotFoundError, a denied one a PermissionError, an existing one a FileExistsError. Local
# files raise Python's own; HDFS, HTTP and object stores raise the subclasses below, which are
# also TFRecordErrors and name the URL in their message.


class HdfsError(TFRecordError, OSError):
    """An HDFS operation failed (``hdfs://``, ``webhdfs://`` in :mod:`tfrecord_io.fs`): missing
    path, permission denied, unreachable NameNode."""


class HdfsFileNotFoundError(HdfsError, FileNotFoundError):
    """An HDFS path does not exist."""


class HdfsPermissionError(HdfsError, PermissionError):
    """HDFS denied access to a path for the current user."""


class HdfsFileExistsError(HdfsError, FileExistsError):
    """An HDFS path exists where it should not."""


class HdfsIsADirectoryError(HdfsError, IsADirectoryError):
    """An HDFS path is a directory where a file is needed: opening it to read, writing over it."""


class HdfsNotADirectoryError(HdfsError, NotADirectoryError):
    """What a path on HDFS goes through is a file: making a file or directory under it, or
    renaming into it (the NameNode's ``ParentNotDirectoryException``)."""


class HttpError(TFRecordError, OSError):
    """An ``http(s)://`` request failed: unreachable server, timeout, an HTTP error status."""


class HttpFileNotFoundError(HttpError, FileNotFoundError):
    """The server says the URL is not there (HTTP 404 or 410)."""


class HttpPermissionError(HttpError, PermissionError):
    """The server refuses the request (HTTP 401 or 403; S3 also says 403 for a missing key)."""


class ObjectStoreError(TFRecordError, OSError):
    """An object store operation (``s3://``) failed: an unreachable or stalled endpoint after
    the retries, a connection lost in the middle of a read, an upload that did not complete.
    The message names the URL."""


class ObjectStoreFileNotFoundError(ObjectStoreError, FileNotFoundError):
    """No object (and no "directory": no key below it) at an ``s3://`` URL whose bucket
    exists."""


class ObjectStorePermissionError(ObjectStoreError, PermissionError):
    """The object store refuses the request: wrong or missing credentials (an unknown access
    key, a secret that does not match it, an expired token) or no permission for the bucket
    or key (S3 also says 403 for a missing key when the caller may not list the bucket)."""


class ObjectStoreFileExistsError(ObjectStoreError, FileExistsError):
    """An object or "directory" exists at an ``s3://`` URL where it should not."""


class BucketNotFoundError(ObjectStoreError):
    """The bucket of an ``s3://`` URL does not exist. Not a ``FileNotFoundError``: a wrong
    bucket name is a configuration error, so :func:`tfrecord_io.fs.exists` and globs raise it
    rather than answer "nothing there"."""


class InputNotFoundError(TFRecordError, FileNotFoundError):
    """An input path does not exist, a glob matches no file, or a directory holds no data files
    (:func:`tfrecord_io.fs.expand`)."""


class SpecialFileError(TFRecordError, OSError):
    """A FIFO, socket or device where a listing expects data files (an input directory or glob of
    :func:`tfrecord_io.fs.expand`): damaged input, never opened, since reading it could block
    forever or never end. The message names it and says what it is."""


class FileChangedError(TFRecordError, OSError):
    """A file or object ended before the size it had when it was opened: it was replaced or
    cut short while being read. The message names it and the byte where it ended; read it
    again once its writer is done."""


class InheritedFileError(TFRecordError, OSError):
    """A file that TensorFlow opened through tfrecord-io's plugin before ``os.fork()``, used in
    the forked child: the open file is the parent's, and the child has none of its own. The
    message names it; open it again in the child."""


class UnsupportedURLError(TFRecordError, ValueError):
    """A URL whose scheme no file system is registered for, or a malformed ``file:`` URL."""


class UnsupportedCompressionError(TFRecordError, ValueError):
    """A file whose name says it is compressed with a codec that TFRecord readers cannot read
    (bzip2, Snappy, LZ4, zstd: Hadoop codecs Spark may be set to write): TensorFlow and the
    Python readers read gzip and zlib only. The message names the file and what to do."""


class UnsupportedOperationError(TFRecordError, io.UnsupportedOperation):
    """The file system of a URL cannot do what was asked (e.g. list or write ``https://``)."""


class JarNotFoundError(TFRecordError):
    """The bundled tfrecord-io jar is missing from the installed package."""


class SparkConnectError(TFRecordError, TypeError):
    """A Spark Connect session or DataFrame was given to an entry point that needs the Spark
    driver in this process (a SparkContext, RDDs, py4j): the RDD helpers. The message names the
    DataFrame equivalent, which works over Spark Connect."""


class PluginNotBuiltError(TFRecordError):
    """The TensorFlow ``hdfs://`` file system plugin is missing from the installed package."""


class InputError(TFRecordError):
    """A command-line input cannot be used: no such file, no match, not a TFRecord..."""


class OutputError(TFRecordError):
    """The command line cannot write its results: its standard output is closed, or writing to
    it fails (a full disk, an I/O error). Not an :class:`OSError`, so that it is never taken
    for a failure to read an input."""


class MnistError(TFRecordError):
    """An MNIST input is missing or malformed, or the output cannot be written as asked.

    The message names the file or directory concerned.
    """


class ImageError(TFRecordError):
    """An image tree cannot be converted as asked: no class folders, an output that exists
    without ``overwrite``, a bad argument. The message names the directory concerned."""


class DamagedImageError(ImageError):
    """An image file is cut short, damaged, or not a JPEG or PNG. The message names the file;
    ``on_corrupt="skip"`` (``--on-corrupt skip``) converts the others and lists it instead."""


class MiniHdfsError(TFRecordError):
    """The mini HDFS could not be started, or a command to it failed."""


class MiniYarnError(TFRecordError):
    """The test YARN cluster (:mod:`tfrecord_io.testing.miniyarn`) could not be started, or a
    command to it failed. The message names its log."""


class StandaloneClusterError(TFRecordError):
    """The test Spark standalone cluster (:mod:`tfrecord_io.testing.standalone`) could not be
    set up: not root, no ``ip`` command, a Master or Worker that did not start. The message says
    which and where its log is."""


class PostgresError(TFRecordError):
    """The test PostgreSQL server (:mod:`tfrecord_io.testing.postgres`) could not be started: no
    PostgreSQL installed (``apt-get install postgresql``), no ``postgres`` OS user to run it as
    root, or a server that did not come up. The message says which and where its log is."""


class ConnectServerError(TFRecordError):
    """The test Spark Connect server (:mod:`tfrecord_io.testing.connect`) could not be started.
    The message has the tail of its log."""


class S3ServerError(TFRecordError):
    """The test S3 server (:mod:`tfrecord_io.testing.s3`) could not be started: moto's server
    is not installed (the ``test`` extra), or it did not come up. The message has the tail of
    its log."""


class AzuriteError(TFRecordError):
    """The test Azure Blob server (:mod:`tfrecord_io.testing.azurite`: Azurite) could not be
    started: Azurite is not installed (``make setup`` installs it with npm into
    ``.tools/azurite``), or it did not come up. The message has the tail of its log."""


class GcsServerError(TFRecordError):
    """The test GCS server (:mod:`tfrecord_io.testing.gcs`: fake-gcs-server) could not be
    started: it is not installed (``make setup`` builds it with ``go install`` into
    ``.tools/bin``), or it did not come up. The message has the tail of its log."""


class ModelError(TFRecordError):
    """A model for inference (:mod:`tfrecord_io.ml`) cannot be used as asked: nothing loadable
    at ``model_dir``, an unknown signature, mapped inputs or outputs the model does not have, or
    a DataFrame column whose values cannot become the model input it is mapped to.

    The message names the model location and the column or tensor concerned.
    """


class TensorBoardError(TFRecordError):
    """TensorBoard could not be started for a log directory, or did not answer HTTP in time.

    The message carries the end of TensorBoard's own output, which says why.
    """


class ClusterError(TFRecordError):
    """A distributed TensorFlow cluster (:mod:`tfrecord_io.cluster`) failed or could not start.

    Raised by ``cluster.run`` (bad arguments aside) and ``Cluster.wait``: too few Spark task
    slots, nodes that did not register in time, an exception in ``main_fun`` on a node (the
    message names the node, e.g. ``worker:1``, and carries its traceback), a node process that
    was killed (the message names the signal) or stopped sending heartbeats.

    Attributes:
        node: the node that failed first (``"worker:1"``), or None when no single node is to
            blame (reservation, slots).
    """

    def __init__(self, message: str, node: str | None = None) -> None:
        self.node = node
        super().__init__(message)


class ResizeInterrupt(BaseException):
    """Not an error: ``main_fun`` leaves so that the gang restarts larger
    (``cluster.run(min_workers=...)``, after task slots came back).

    Raised inside ``main_fun`` by ``ctx.resize_point()`` and by ``ctx.keras_callback()`` once
    every worker agreed at the same boundary; the node then reports that it left for a resize
    and the gang restarts from the latest checkpoint with more workers. It derives from
    BaseException, as KeyboardInterrupt does, so that ``except Exception`` lets it pass: let it
    propagate out of ``main_fun``.
    """


class ChannelError(TFRecordError, ConnectionError):
    """A connection of the cluster's protocol (:mod:`tfrecord_io.cluster.protocol`: the control
    channel or the feed) ended: the peer closed it, or sent something that does not decrypt
    (a wrong secret, a message replayed, reordered, reflected, altered or cut short), that is
    over the protocol's limits, or that does not parse.

    The cluster handles it (the connection is closed, the rest goes on). If it names a peer
    that does not speak the protocol, install the same tfrecord-io on the driver and executors.
    """
