"""The ``tfrecord-io`` command: convert MNIST, inspect and check TFRecord files.

Commands (``tfrecord-io COMMAND --help`` for details)::

    mnist INPUT OUTPUT     MNIST IDX files -> OUTPUT/train, OUTPUT/test as TFRecord shards
    images SRC OUT         class-per-folder images -> OUT/train, OUT/validation, OUT/labels.txt
    count PATH...          records per file, and the total
    head PATH... [-n N]    the first records, decoded, as JSON lines
    schema PATH...         inferred TensorFlow feature spec and Spark schema
    verify PATH...         check every CRC; one line per damaged stretch
    index PATH...          write missing split indexes (e.g. for files TensorFlow wrote)

A PATH is a file, a directory (its files, recursively; names starting with ``_`` or ``.``
are skipped, as Hadoop does), or a glob, local or ``hdfs://``. Compression is taken from the
file name (``.gz``, ``.deflate``/``.zlib``/``.zz``) unless ``--compression`` says otherwise.

Results go to stdout, diagnostics to stderr. Exit status: 0 success, 1 damaged data found,
2 usage or input error (missing file, malformed input, a failure of Spark under ``--spark``...).
TensorFlow is never imported.

The package: :mod:`~tfrecord_io.cli.main` (argument parsing, :func:`main`),
:mod:`~tfrecord_io.cli.commands` (dispatch to the layers below), :mod:`~tfrecord_io.cli.render`
(what is printed) and :mod:`~tfrecord_io.cli.paths` (PATH expansion).
"""

from __future__ import annotations

from tfrecord_io.cli.commands import EXIT_CORRUPT, EXIT_OK, EXIT_USAGE
from tfrecord_io.cli.main import main
from tfrecord_io.cli.paths import expand_paths
from tfrecord_io.errors import InputError

__all__ = ["main", "expand_paths", "EXIT_OK", "EXIT_CORRUPT", "EXIT_USAGE", "InputError"]
