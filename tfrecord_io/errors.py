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
    "HdfsError",
    "HdfsFileNotFoundError",
    "HdfsPermissionError",
    "HdfsFileExistsError",
    "HttpError",
    "HttpFileNotFoundError",
    "HttpPermissionError",
    "InputNotFoundError",
    "UnsupportedURLError",
    "UnsupportedOperationError",
    "JarNotFoundError",
    "PluginNotBuiltError",
    "InputNotFoundError",
    "InputError",
    "MnistError",
    "MiniHdfsError",
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


# -- where bytes live: paths and URLs (tfrecord_io.fs, tfrecord_io.hdfs) -----------------------
#
# Failures of file system operations are OSErrors, whatever the scheme: a missing path is a
# FileNotFoundError, a denied one a PermissionError, an existing one a FileExistsError. Local
# files raise Python's own; HDFS and HTTP raise the subclasses below, which are also
# TFRecordErrors and name the URL in their message.


class HdfsError(TFRecordError, OSError):
    """An HDFS operation failed: missing path, permission denied, unreachable NameNode."""


class HdfsFileNotFoundError(HdfsError, FileNotFoundError):
    """An HDFS path does not exist."""


class HdfsPermissionError(HdfsError, PermissionError):
    """HDFS denied access to a path for the current user."""


class HdfsFileExistsError(HdfsError, FileExistsError):
    """An HDFS path exists where it should not."""


class HttpError(TFRecordError, OSError):
    """An ``http(s)://`` request failed: unreachable server, timeout, an HTTP error status."""


class HttpFileNotFoundError(HttpError, FileNotFoundError):
    """The server says the URL is not there (HTTP 404 or 410)."""


class HttpPermissionError(HttpError, PermissionError):
    """The server refuses the request (HTTP 401 or 403; S3 also says 403 for a missing key)."""


class InputNotFoundError(TFRecordError, FileNotFoundError):
    """An input path does not exist, a glob matches no file, or a directory holds no data files
    (:func:`tfrecord_io.fs.expand`)."""


class UnsupportedURLError(TFRecordError, ValueError):
    """A URL whose scheme no file system is registered for, or a malformed ``file:`` URL."""


class UnsupportedOperationError(TFRecordError, io.UnsupportedOperation):
    """The file system of a URL cannot do what was asked (e.g. list or write ``https://``)."""


class JarNotFoundError(TFRecordError):
    """The bundled tfrecord-io jar is missing from the installed package."""


class PluginNotBuiltError(TFRecordError):
    """The TensorFlow ``hdfs://`` file system plugin is missing from the installed package."""


class InputNotFoundError(TFRecordError, FileNotFoundError):
    """A local input path does not exist, or a glob matches no file."""


class InputError(TFRecordError):
    """A command-line input cannot be used: no such file, no match, not a TFRecord..."""


class MnistError(TFRecordError):
    """An MNIST input is missing or malformed, or the output cannot be written as asked.

    The message names the file or directory concerned.
    """


class MiniHdfsError(TFRecordError):
    """The mini HDFS could not be started, or a command to it failed."""
