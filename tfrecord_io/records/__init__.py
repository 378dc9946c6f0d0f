"""Pure-Python TFRecord framing: fast reading and writing of TFRecord files.

A TFRecord file is a sequence of records, each framed as::

    uint64 length          (little-endian)
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

where ``masked_crc32c(b) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32)`` with
``c = crc32c(b)``. Files may be wrapped whole in a GZIP or ZLIB stream, as TensorFlow's
``compression_type`` does.

Sources and targets can be binary file objects or any path or URL that :func:`tfrecord_io.fs.open`
opens: local paths (``str``, :class:`os.PathLike` or ``file://`` URLs), ``hdfs://`` /
``webhdfs://`` and ``s3://`` URLs, and ``http(s)://`` URLs for reading. This module never imports
TensorFlow.

Main entry points: :func:`read` / :class:`RecordReader` and :func:`write` / :class:`RecordWriter`.
"""

from tfrecord_io.framing import DEFAULT_MAX_RECORD_BYTES, masked_crc32c
from tfrecord_io.records.batches import BATCH_FORMATS, read_batches
from tfrecord_io.records.reader import DEFAULT_BUFFER_SIZE, Chunk, RecordReader, Source, read
from tfrecord_io.records.writer import RecordWriter, write

__all__ = [
    "BATCH_FORMATS",
    "DEFAULT_BUFFER_SIZE",
    "DEFAULT_MAX_RECORD_BYTES",
    "Chunk",
    "RecordReader",
    "RecordWriter",
    "Source",
    "masked_crc32c",
    "read",
    "read_batches",
    "write",
]
