"""The ``tfrecord-io`` command: convert MNIST, inspect and check TFRecord files.

Commands (``tfrecord-io COMMAND --help`` for details)::

    mnist INPUT OUTPUT     MNIST IDX files -> OUTPUT/train, OUTPUT/test as TFRecord shards
    count PATH...          records per file, and the total
    head PATH... [-n N]    the first records, decoded, as JSON lines
    schema PATH...         inferred TensorFlow feature spec and Spark schema
    verify PATH...         check every CRC; one line per damaged stretch
    index PATH...          write missing split indexes (e.g. for files TensorFlow wrote)

A PATH is a file, a directory (its files, recursively; names starting with ``_`` or ``.``
are skipped, as Hadoop does), or a glob, local or ``hdfs://``. Compression is taken from the
file name (``.gz``, ``.deflate``/``.zlib``/``.zz``) unless ``--compression`` says otherwise.

Results go to stdout, diagnostics to stderr. Exit status: 0 success, 1 damaged data found,
2 usage or input error (missing file, malformed input...). TensorFlow is never imported.
"""

from __future__ import annotations

import argparse
import base64
import glob as _glob
import json
import logging
import math
import os
import posixpath
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tfrecord_io import __version__
from tfrecord_io import records as _records
from tfrecord_io.errors import CorruptRecordError, SchemaError, TFRecordError

__all__ = ["main", "expand_paths", "EXIT_OK", "EXIT_CORRUPT", "EXIT_USAGE"]

log = logging.getLogger("tfrecord_io.cli")  # not __name__: that is __main__ under -m

#: Exit status: success.
EXIT_OK = 0
#: Exit status: damaged data was found.
EXIT_CORRUPT = 1
#: Exit status: bad usage, or an input that is missing or malformed.
EXIT_USAGE = 2

_GLOB_CHARS = frozenset("*?[")
_PROG = "tfrecord-io"


class InputError(TFRecordError):
    """A command-line input cannot be used: no such file, no match, not a TFRecord..."""


# --------------------------------------------------------------------------------------------
# Paths


def expand_paths(patterns: Sequence[str]) -> list[str]:
    """Expand command-line PATHs into data files, in a stable order.

    Each pattern is a file (taken as is), a directory (its files, recursively, sorted; names
    starting with ``_`` or ``.`` -- ``_SUCCESS``, indexes, ``.crc`` files -- are skipped) or a
    glob (``*``, ``?``, ``[...]``; matched directories are expanded too). Local paths,
    ``file:`` URLs and ``hdfs://``/``webhdfs://`` URLs are accepted. Duplicates are dropped.

    Raises:
        InputError: a pattern that matches no file, naming it.
    """
    files: list[str] = []
    for pattern in patterns:
        try:
            kind, resolved = _records._classify(pattern)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        found = _expand_hdfs(resolved) if kind == "hdfs" else _expand_local(resolved)
        if not found:
            raise InputError(f"{pattern}: no data files (names starting with _ or . are skipped)")
        files.extend(found)
    return list(dict.fromkeys(files))


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _expand_local(path: str) -> list[str]:
    if _GLOB_CHARS.intersection(path):
        matches = sorted(_glob.glob(path))
        if not matches:
            raise InputError(f"{path}: no files match")
    elif os.path.exists(path):
        matches = [path]
    else:
        raise InputError(f"{path}: no such file or directory")
    files = []
    for match in matches:
        if os.path.isdir(match):
            for root, dirs, names in os.walk(match):
                dirs[:] = sorted(d for d in dirs if not _hidden(d))
                files.extend(os.path.join(root, n) for n in sorted(names) if not _hidden(n))
        else:
            files.append(match)
    return files


def _expand_hdfs(url: str) -> list[str]:
    from tfrecord_io import hdfs  # noqa: PLC0415 - optional, heavier dependency

    authority_end = url.find("/", url.find("://") + 3)
    if _GLOB_CHARS.intersection(url[authority_end:] if authority_end >= 0 else ""):
        matches = hdfs.glob(url)
        if not matches:
            raise InputError(f"{url}: no files match")
    else:
        matches = [url]
    files = []
    for match in matches:
        try:
            status = hdfs.stat(match)
        except FileNotFoundError:
            raise InputError(f"{match}: no such file or directory") from None
        if status.is_dir:
            files.extend(_walk_hdfs(hdfs, match))
        else:
            files.append(match)
    return files


def _walk_hdfs(hdfs: Any, url: str) -> Iterator[str]:
    for status in hdfs.ls(url):
        if _hidden(posixpath.basename(status.url.rstrip("/"))):
            continue
        if status.is_dir:
            yield from _walk_hdfs(hdfs, status.url)
        else:
            yield status.url


# --------------------------------------------------------------------------------------------
# JSON rendering of decoded records


def _json_bytes(value: bytes) -> Any:
    """UTF-8 text as a JSON string; anything else as ``{"base64": "..."}``."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def _json_float(value: float) -> Any:
    """A float32 value by its shortest float32 repr (0.1, not 0.10000000149011612); NaN and
    the infinities, which JSON lacks, as the strings "NaN", "Infinity", "-Infinity"."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(str(np.float32(value)))


def _json_values(values: list[Any]) -> list[Any]:
    if not values:
        return []
    first = values[0]
    if isinstance(first, bytes):
        return [_json_bytes(v) for v in values]
    if isinstance(first, float):
        return [_json_float(v) for v in values]
    return list(values)


def _json_features(features: dict[str, list[Any]]) -> dict[str, Any]:
    return {name: _json_values(values) for name, values in features.items()}


def _decode(record: bytes, record_type: str) -> dict[str, Any]:
    """Decode one record for ``head``. Raises SchemaError if it is not of the type."""
    from tfrecord_io import example  # noqa: PLC0415

    if record_type == "example":
        return _json_features(example.decode_example(record))
    context, lists = example.decode_sequence_example(record)
    if record_type == "auto" and not lists:
        return _json_features(context)
    return {
        "context": _json_features(context),
        "feature_lists": {name: [_json_values(step) for step in steps] for name, steps in lists.items()},
    }


# --------------------------------------------------------------------------------------------
# Commands


def _records_of(files: Sequence[str], compression: str | None) -> Iterator[tuple[str, int, bytes]]:
    """(file, offset, record) for every record of every file, in order."""
    for path in files:
        with _records.RecordReader(path, compression) as reader:
            for record in reader:
                yield path, reader.offset or 0, record


def _cmd_count(args: argparse.Namespace) -> int:
    from tfrecord_io import _compression, index  # noqa: PLC0415

    files = expand_paths(args.paths)
    total = 0
    status = EXIT_OK
    for path in files:
        try:
            entries = None
            if _compression.resolve(args.compression, path) == _compression.NONE:
                entries = index.load_index(path)
            if entries is not None:
                n = len(entries)
            else:
                with _records.RecordReader(path, args.compression, verify=False) as reader:
                    n = sum(1 for _ in reader)
        except CorruptRecordError as exc:
            log.error("%s", exc)
            status = EXIT_CORRUPT
            continue
        total += n
        print(f"{n}\t{path}")
    if len(files) > 1 and status == EXIT_OK:
        print(f"{total}\ttotal")
    return status


def _cmd_head(args: argparse.Namespace) -> int:
    files = expand_paths(args.paths)
    if args.n == 0:
        return EXIT_OK
    shown = 0
    for path, offset, record in _records_of(files, args.compression):
        if args.raw:
            value: Any = _json_bytes(record)
        else:
            try:
                value = _decode(record, args.type)
            except SchemaError:
                raise InputError(
                    f"{path}: the record at byte offset {offset} is not a tf.train."
                    f"{'SequenceExample' if args.type == 'sequence' else 'Example'}; "
                    "use --raw to print the records' bytes"
                ) from None
        sys.stdout.write(json.dumps(value, ensure_ascii=True, separators=(", ", ": ")) + "\n")
        shown += 1
        if shown >= args.n:
            break
    return EXIT_OK


# -- schema -----------------------------------------------------------------------------------

_TF_DTYPES = {"int64": "tf.int64", "float": "tf.float32", "string": "tf.string", "binary": "tf.string"}
_SPARK_TYPES = {"int64": "BIGINT", "float": "FLOAT", "string": "STRING", "binary": "BINARY", "null": "VOID"}
_PLAIN_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _has_feature_lists(record: bytes) -> bool:
    from tfrecord_io.proto import example_pb2  # noqa: PLC0415

    try:
        return len(example_pb2.SequenceExample.FromString(record).feature_lists.feature_list) > 0
    except Exception:  # noqa: BLE001 - not parseable: infer_schema will say so
        return False


def _leaf(t: Any) -> Any:
    import pyarrow as pa  # noqa: PLC0415

    while pa.types.is_list(t):
        t = t.value_type
    return t


def _spark_type(t: Any) -> str:
    import pyarrow as pa  # noqa: PLC0415

    if pa.types.is_list(t):
        return f"ARRAY<{_spark_type(t.value_type)}>"
    return _SPARK_TYPES[str(t)]


def _ddl_name(name: str) -> str:
    if name and not name[0].isdigit() and _PLAIN_NAME.issuperset(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def _lengths_range(column: Any) -> tuple[int, int] | None:
    """(min, max) of the list lengths of a list column's non-null cells; None if none."""
    import pyarrow.compute as pc  # noqa: PLC0415

    lengths = pc.list_value_length(column)
    bounds = pc.min_max(lengths).as_py()
    if bounds["min"] is None:
        return None
    return bounds["min"], bounds["max"]


def _context_spec(column: Any, t: Any) -> str | None:
    """The tf.io parsing spec of an Example (or context) feature, from its Arrow column."""
    import pyarrow as pa  # noqa: PLC0415

    leaf = _leaf(t)
    if pa.types.is_null(leaf):
        return None
    dtype = _TF_DTYPES[str(leaf)]
    if column.null_count == 0:
        if not pa.types.is_list(t):
            return f"tf.io.FixedLenFeature([], {dtype})"
        bounds = _lengths_range(column)
        if bounds is not None and bounds[0] == bounds[1] > 0:
            return f"tf.io.FixedLenFeature([{bounds[0]}], {dtype})"
    return f"tf.io.VarLenFeature({dtype})"


def _sequence_spec(column: Any, t: Any) -> str | None:
    """The tf.io parsing spec of a SequenceExample feature list, from its Arrow column."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    leaf = _leaf(t)
    if pa.types.is_null(leaf):
        return None
    dtype = _TF_DTYPES[str(leaf)]
    steps = pc.list_flatten(column)
    bounds = _lengths_range(steps) if len(steps) else None
    if bounds is not None and bounds[0] == bounds[1] > 0:
        shape = "[]" if bounds[0] == 1 else f"[{bounds[0]}]"
        missing = ", allow_missing=True" if column.null_count else ""
        return f"tf.io.FixedLenSequenceFeature({shape}, {dtype}{missing})"
    return f"tf.io.VarLenFeature({dtype})"


def _describe_schema(sample: list[bytes], record_type: str) -> dict[str, Any]:
    """The feature spec and Spark schema of sampled records, from :func:`example.infer_schema`.

    Raises:
        SchemaError: the records are not Examples/SequenceExamples, or conflict.
    """
    from tfrecord_io import example  # noqa: PLC0415

    if record_type == "auto":
        record_type = "sequence" if any(map(_has_feature_lists, sample)) else "example"
    arrow_type = "SequenceExample" if record_type == "sequence" else "Example"
    schema = example.infer_schema(sample, arrow_type)
    table = example.to_arrow(sample, schema, arrow_type)
    context: dict[str, str | None] = {}
    sequence: dict[str, str | None] = {}
    for field in schema:
        column = table.column(field.name).combine_chunks()
        is_feature_list = arrow_type == "SequenceExample" and _is_list_of_lists(field.type)
        if is_feature_list:
            sequence[field.name] = _sequence_spec(column, field.type)
        else:
            context[field.name] = _context_spec(column, field.type)
    ddl = ", ".join(f"{_ddl_name(f.name)} {_spark_type(f.type)}" for f in schema)
    description: dict[str, Any] = {"record_type": arrow_type}
    if arrow_type == "SequenceExample":
        description["context_features"] = context
        description["sequence_features"] = sequence
    else:
        description["feature_spec"] = context
    description["spark_schema"] = ddl
    return description


def _is_list_of_lists(t: Any) -> bool:
    import pyarrow as pa  # noqa: PLC0415

    return pa.types.is_list(t) and pa.types.is_list(t.value_type)


def _render_schema(description: dict[str, Any]) -> str:
    """The description as Python to paste next to ``import tensorflow as tf``."""
    lines = [f"# tf.train.{description['record_type']}, {description['records_sampled']} records sampled"]
    names = ["context_features", "sequence_features", "feature_spec"]
    for variable in (n for n in names if n in description):
        lines.append(f"{variable} = {{")
        for name, spec in description[variable].items():
            if spec is None:
                lines.append(f"    # {json.dumps(name)}: no values in the records sampled")
            else:
                lines.append(f"    {json.dumps(name)}: {spec},")
        lines.append("}")
    lines.append(f"spark_schema = {json.dumps(description['spark_schema'])}")
    return "\n".join(lines)


def _cmd_schema(args: argparse.Namespace) -> int:
    files = expand_paths(args.paths)
    limit = None if args.sample == 0 else args.sample
    sample: list[bytes] = []
    for _, _, record in _records_of(files, args.compression):
        sample.append(record)
        if limit is not None and len(sample) >= limit:
            break
    if not sample:
        raise InputError(f"{' '.join(args.paths)}: no records to infer a schema from")
    try:
        description = _describe_schema(sample, args.type)
    except SchemaError as exc:
        raise InputError(f"{' '.join(args.paths)}: {exc}") from None
    description["records_sampled"] = len(sample)
    print(json.dumps(description, indent=2) if args.json else _render_schema(description))
    return EXIT_OK


# -- verify, index ----------------------------------------------------------------------------


def _cmd_verify(args: argparse.Namespace) -> int:
    from tfrecord_io import _compression, index  # noqa: PLC0415

    files = expand_paths(args.paths)
    problems = damaged_files = total = 0
    unreadable = False

    last: list[Any] = [None]

    def report(error: CorruptRecordError) -> None:
        nonlocal problems
        if last[0] == (error.path, error.offset):
            return  # e.g. the record cut short where a compressed stream breaks: said already
        last[0] = (error.path, error.offset)
        problems += 1
        print(f"{error.path}: byte offset {error.offset}: {error.reason}", flush=True)

    records_log = logging.getLogger(_records.__name__)
    saved_level = records_log.level
    records_log.setLevel(logging.ERROR)  # its skip warnings would repeat our lines
    try:
        for path in files:
            before = problems
            indexed: list[tuple[int, int]] | None = None
            index_problem = None
            try:
                if _compression.resolve(args.compression, path) == _compression.NONE:
                    ipath = index.index_path(path)
                    try:
                        indexed = index.read_index(ipath)
                    except FileNotFoundError:
                        pass
                    except ValueError as exc:
                        index_problem = f"bad index: {exc}"
                n = 0
                with _records.RecordReader(
                    path, args.compression, on_corrupt="skip", on_skip=report
                ) as reader:
                    for record in reader:
                        if indexed is not None and index_problem is None:
                            entry = (reader.offset, len(record) + 16)
                            if n >= len(indexed) or indexed[n] != entry:
                                index_problem = _stale(ipath, n, indexed, entry)
                        n += 1
                if indexed is not None and index_problem is None and len(indexed) != n:
                    index_problem = (
                        f"stale index {ipath}: it lists {len(indexed)} records, the file has {n}"
                    )
            except (OSError, TFRecordError, ValueError) as exc:
                log.error("%s: %s", path, exc)
                unreadable = True
                continue
            total += n
            if problems == before and index_problem is not None:
                print(f"{path}: {index_problem}", flush=True)
                problems += 1
            if problems > before:
                damaged_files += 1
    finally:
        records_log.setLevel(saved_level)
    if problems:
        log.info("%d problem%s in %d of %d file%s", problems, "" if problems == 1 else "s",
                 damaged_files, len(files), "" if len(files) == 1 else "s")
    else:
        log.info("%d file%s, %d records: every checksum is correct", len(files),
                 "" if len(files) == 1 else "s", total)
    if unreadable:
        return EXIT_USAGE
    return EXIT_CORRUPT if problems else EXIT_OK


def _stale(ipath: str, i: int, indexed: list[tuple[int, int]], entry: tuple[int, int]) -> str:
    if i >= len(indexed):
        return f"stale index {ipath}: it lists {len(indexed)} records, the file has more"
    return (
        f"stale index {ipath}: line {i + 1} says {indexed[i][0]} {indexed[i][1]}, but the "
        f"record there is at byte offset {entry[0]}, {entry[1]} bytes long"
    )


def _cmd_index(args: argparse.Namespace) -> int:
    from tfrecord_io import _compression, index  # noqa: PLC0415

    files = expand_paths(args.paths)
    status = EXIT_OK
    for path in files:
        if _compression.detect(path) != _compression.NONE:
            log.info("%s: compressed, so not splittable: no index", path)
            continue
        if index.load_index(path) is not None:
            log.info("%s: its index is up to date", path)
            continue
        try:
            entries = list(index.scan(path, "none"))
            ipath = index.write_index(path, entries)
        except CorruptRecordError as exc:
            log.error("%s (no index written)", exc)
            status = EXIT_CORRUPT
            continue
        print(f"{ipath}\t{len(entries)} records")
    return status


# -- mnist ------------------------------------------------------------------------------------


def _cmd_mnist(args: argparse.Namespace) -> int:
    from tfrecord_io import mnist  # noqa: PLC0415

    splits = mnist.load(args.input)  # every input checked before Spark starts or we write
    spark = running = None
    if args.spark:
        if not args.spark.startswith("local") and _records._classify(args.output)[0] == "local":
            log.warning(
                "OUTPUT %s is a local path: executors on other machines would write to their "
                "own disks; give an hdfs:// OUTPUT", args.output,
            )
        from pyspark.sql import SparkSession  # noqa: PLC0415

        from tfrecord_io import spark as tfs  # noqa: PLC0415

        running = SparkSession.getActiveSession()
        if running is not None:  # main() called inside a Spark application: use its session
            log.info("Using the running Spark session (master %s)", running.sparkContext.master)
        spark = tfs.session(args.spark, app_name="tfrecord-io mnist")
        if running is None:
            spark.sparkContext.setLogLevel("WARN")
    try:
        result = mnist.convert(
            splits,
            args.output,
            shards=args.shards,
            compression=args.compression,
            image_format=args.image_format,
            spark=spark,
            overwrite=args.overwrite,
            progress=sys.stderr.isatty() and not args.quiet,
        )
    finally:
        if spark is not None and running is None:
            spark.stop()
    print(result.summary())
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# Command line


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, not {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log debugging details")
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="log only warnings and errors; no progress bar")
    compression = argparse.ArgumentParser(add_help=False)
    compression.add_argument(
        "--compression", choices=["auto", "none", "gzip", "zlib"], default="auto",
        help="compression of the files (default: auto, from the name: .gz gzip, "
             ".deflate/.zlib/.zz zlib, else none)",
    )
    record_type = argparse.ArgumentParser(add_help=False)
    record_type.add_argument(
        "--type", choices=["auto", "example", "sequence"], default="auto",
        help="record type: tf.train.Example, SequenceExample, or auto (SequenceExample when a "
             "record has feature lists)",
    )
    paths_help = "file, directory of shards, or glob; local or hdfs://"

    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Convert MNIST to TFRecords; inspect and check TFRecord files "
                    "(local or hdfs://). Exit status: 0 ok, 1 damaged data, 2 usage or "
                    "input error.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "mnist", parents=[common], help="convert the MNIST IDX files to TFRecord shards",
        description="Read the MNIST IDX files (gzipped or not) from INPUT -- a local or "
                    "hdfs:// directory, or an http(s) base URL -- and write OUTPUT/train and "
                    "OUTPUT/test (whichever sets are present) as TFRecord shards of "
                    "tf.train.Example with features label, image, height and width.",
    )
    p.add_argument("input", metavar="INPUT", help="directory or http(s) base URL of the IDX files")
    p.add_argument("output", metavar="OUTPUT", help="output directory, local or hdfs://")
    p.add_argument("--shards", type=_positive_int, default=1, metavar="N",
                   help="shards per set, each a contiguous range of records (default: 1)")
    p.add_argument("--compression", choices=["none", "gzip", "zlib"], default="none",
                   help="compress the shards (default: none, which also writes split indexes)")
    p.add_argument("--image-format", choices=["int64", "bytes", "float"], default="int64",
                   help="image feature: 784 int64 pixels (default, as TensorFlowOnSpark's "
                        "example expects), the raw 784-byte string, or float32 scaled to [0, 1]")
    p.add_argument("--spark", metavar="MASTER",
                   help="run the conversion as a Spark job on this master (local[4], yarn, ...)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUTPUT/train and OUTPUT/test if they exist")
    p.set_defaults(func=_cmd_mnist)

    p = sub.add_parser("count", parents=[common, compression],
                       help="count the records of each file, and the total")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.set_defaults(func=_cmd_count)

    p = sub.add_parser("head", parents=[common, compression, record_type],
                       help="print the first records, decoded, as JSON lines")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.add_argument("-n", type=_non_negative_int, default=10, metavar="N",
                   help="how many records (default: 10)")
    p.add_argument("--raw", action="store_true",
                   help="print the records' bytes instead of decoding them")
    p.set_defaults(func=_cmd_head)

    p = sub.add_parser("schema", parents=[common, compression, record_type],
                       help="infer the TensorFlow feature spec and the Spark schema")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.add_argument("--sample", type=_non_negative_int, default=10000, metavar="N",
                   help="look at the first N records only (default: 10000; 0: all)")
    p.add_argument("--json", action="store_true", help="print JSON instead of Python")
    p.set_defaults(func=_cmd_schema)

    p = sub.add_parser("verify", parents=[common, compression],
                       help="check every record's CRCs; report each damaged stretch")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("index", parents=[common],
                       help="write the split index of uncompressed files that lack a valid one")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.set_defaults(func=_cmd_index)
    return parser


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        if record.levelno >= logging.WARNING:
            return f"{_PROG}: {record.levelname.lower()}: {message}"
        return f"{_PROG}: {message}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tfrecord-io`` command line; returns the exit status.

    Args:
        argv: the arguments after the program name; None for ``sys.argv[1:]``.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if getattr(args, "compression", None) == "auto":
        args.compression = None  # detect from each file's name
    args.verbose = getattr(args, "verbose", False)
    args.quiet = getattr(args, "quiet", False)
    package_log = logging.getLogger("tfrecord_io")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    saved_level = package_log.level
    package_log.addHandler(handler)
    package_log.setLevel(
        logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    )
    try:
        return args.func(args)
    except BrokenPipeError:
        # Whoever read our stdout went away (`... | head`): stop quietly. For verify, what it
        # was reading were problem lines.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CORRUPT if args.command == "verify" else EXIT_OK
    except CorruptRecordError as exc:
        log.error("%s", exc)
        return EXIT_CORRUPT
    except (TFRecordError, OSError, ValueError) as exc:
        log.error("%s", exc, exc_info=args.verbose)
        return EXIT_USAGE
    except KeyboardInterrupt:
        log.error("interrupted")
        return 130
    finally:
        package_log.removeHandler(handler)
        package_log.setLevel(saved_level)


if __name__ == "__main__":
    sys.exit(main())
