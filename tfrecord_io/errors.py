"""Exception types raised by tfrecord-io.

Every error the package raises on purpose derives from :class:`TFRecordError`, so callers can
catch the whole family at once or one specific kind.
"""

from __future__ import annotations

__all__ = [
    "TFRecordError",
    "CorruptRecordError",
    "SchemaError",
    "HdfsError",
    "JarNotFoundError",
    "PluginNotBuiltError",
    "TensorBoardError",
    "ClusterError",
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

    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path = path
        self.offset = offset
        self.reason = reason
        super().__init__(
            f"corrupt TFRecord in {path} at byte offset {offset}: {reason}. "
            "Check the file with `tfrecord-io verify`, or read past damage with "
            "on_corrupt='skip'."
        )


class SchemaError(TFRecordError):
    """Data does not fit a schema: unsupported column type, or a feature of the wrong kind."""


class HdfsError(TFRecordError):
    """An HDFS operation failed: missing path, permission denied, unreachable NameNode."""


class JarNotFoundError(TFRecordError):
    """The bundled tfrecord-io jar is missing from the installed package."""


class PluginNotBuiltError(TFRecordError):
    """The TensorFlow ``hdfs://`` file system plugin is missing from the installed package."""


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
