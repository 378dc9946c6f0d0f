"""The ``tfrecord-io`` argument parser and entry point (:func:`main`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from tfrecord_io import __version__
from tfrecord_io.cli import commands
from tfrecord_io.cli.commands import EXIT_CORRUPT, EXIT_OK, EXIT_USAGE
from tfrecord_io.errors import CorruptRecordError, TFRecordError

__all__ = ["main"]

log = logging.getLogger("tfrecord_io.cli")  # not __name__: one logger for the command line

_PROG = "tfrecord-io"
# What --spark can write to: what Hadoop names (az:// is tfrecord_io.fs's alone).
_SPARK_OUTPUT = ("Spark writes the output through Hadoop: hdfs://, s3://, gs://, "
                 "abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/... (not az://) or local")


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _positive_int(text: str) -> int:
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = _whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, not {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), not {value}")
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
    where = "local or a URL (hdfs://, s3://, gs://, ...)"
    paths_help = f"file, directory of shards, or glob; {where}"

    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Convert MNIST or image folders to TFRecords; inspect and check TFRecord files "
                    "(local, or any URL tfrecord_io.fs reads: hdfs://, s3://, gs://, az://, ...). "
                    "Exit status: 0 ok, 1 damaged data, 2 usage or "
                    "input error (also a failure of Spark, for --spark).",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "mnist", parents=[common], help="convert the MNIST IDX files to TFRecord shards",
        description="Read the MNIST IDX files (gzipped or not) from INPUT -- a local "
                    "directory, a directory URL (hdfs://, s3://, ...), or an http(s) base "
                    "URL -- and write OUTPUT/train and "
                    "OUTPUT/test (whichever sets are present) as TFRecord shards of "
                    "tf.train.Example with features label, image, height and width.",
    )
    p.add_argument("input", metavar="INPUT", help="directory or http(s) base URL of the IDX files")
    p.add_argument("output", metavar="OUTPUT", help=f"output directory, {where}")
    p.add_argument("--shards", type=_positive_int, default=1, metavar="N",
                   help="shards per set, each a contiguous range of records (default: 1)")
    p.add_argument("--compression", choices=["none", "gzip", "zlib"], default="none",
                   help="compress the shards (default: none, which also writes split indexes)")
    p.add_argument("--image-format", choices=["int64", "bytes", "float"], default="int64",
                   help="image feature: 784 int64 pixels (default, as TensorFlowOnSpark's "
                        "example expects), the raw 784-byte string, or float32 scaled to [0, 1]")
    p.add_argument("--spark", metavar="MASTER",
                   help="run the conversion as a Spark job on this master (local[4], yarn, ...); "
                        f"{_SPARK_OUTPUT}")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUTPUT/train and OUTPUT/test if they exist")
    p.set_defaults(func=commands.cmd_mnist)

    p = sub.add_parser(
        "images", parents=[common], help="convert a class-per-folder image tree to TFRecord shards",
        description="Read the JPEG and PNG files of SRC/CLASS/... -- a local or remote "
                    "(hdfs://, s3://, ...) directory with one folder per class -- and write "
                    "OUT/train (and OUT/validation) as TFRecord shards of tf.train.Example in "
                    "build_image_data.py's layout (image/encoded as stored, image/format, "
                    "image/height, image/width, image/channels, image/class/label, "
                    "image/class/text, image/filename), and the label map OUT/labels.txt "
                    "(LABEL:CLASS lines). Exit status 1: a damaged image under --on-corrupt fail.",
    )
    p.add_argument("input", metavar="SRC", help=f"directory of the class folders, {where}")
    p.add_argument("output", metavar="OUT", help=f"output directory, {where}")
    p.add_argument("--shards", type=_positive_int, default=1, metavar="N",
                   help="shards of the training set (default: 1)")
    p.add_argument("--validation-fraction", type=_fraction, default=0.0, metavar="F",
                   help="part of the images, in [0, 1), for OUT/validation, chosen by a hash of "
                        "each file's path below SRC: the same on every run (default: 0, none)")
    p.add_argument("--validation-shards", type=_positive_int, default=None, metavar="N",
                   help="shards of the validation set (default: shards of about the training "
                        "shards' size)")
    p.add_argument("--first-label", type=_non_negative_int, default=0, metavar="L",
                   help="label of the first class folder in name order (default: 0, as TF-slim "
                        "and Keras; 1 as build_image_data.py)")
    p.add_argument("--on-corrupt", choices=["fail", "skip"], default="fail",
                   help="a truncated or non-image file: fail, naming it, writing nothing "
                        "(default), or skip it, logging and counting it")
    p.add_argument("--compression", choices=["none", "gzip", "zlib"], default="none",
                   help="compress the shards (default: none, which also writes split indexes)")
    p.add_argument("--spark", metavar="MASTER",
                   help="convert as a Spark job on this master (local[4], yarn, ...), one task "
                        f"per shard; {_SPARK_OUTPUT}")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUT/train, OUT/validation and OUT/labels.txt if they exist")
    p.set_defaults(func=commands.cmd_images)

    p = sub.add_parser("count", parents=[common, compression],
                       help="count the records of each file, and the total")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.set_defaults(func=commands.cmd_count)

    p = sub.add_parser("head", parents=[common, compression, record_type],
                       help="print the first records, decoded, as JSON lines")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.add_argument("-n", type=_non_negative_int, default=10, metavar="N",
                   help="how many records (default: 10)")
    p.add_argument("--raw", action="store_true",
                   help="print the records' bytes instead of decoding them")
    p.set_defaults(func=commands.cmd_head)

    p = sub.add_parser("schema", parents=[common, compression, record_type],
                       help="infer the TensorFlow feature spec and the Spark schema")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.add_argument("--sample", type=_non_negative_int, default=10000, metavar="N",
                   help="look at the first N records only (default: 10000; 0: all)")
    p.add_argument("--json", action="store_true", help="print JSON instead of Python")
    p.set_defaults(func=commands.cmd_schema)

    p = sub.add_parser("verify", parents=[common, compression],
                       help="check every record's CRCs; report each damaged stretch")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.set_defaults(func=commands.cmd_verify)

    p = sub.add_parser("index", parents=[common],
                       help="write the split index of uncompressed files that lack a valid one")
    p.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    p.set_defaults(func=commands.cmd_index)
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
    status = _main(argv)
    try:
        # Output still buffered (stdout is block-buffered on a pipe) is written here, where a
        # reader that went away is noticed, not by the interpreter at exit (exit status 120).
        if sys.stdout is not None:  # None: started with stdout closed
            sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
    return status


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except BrokenPipeError:  # --help | head -1, when the help fills stdout's buffer
        _discard_stdout()
        return EXIT_OK
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
        status = args.func(args)
        commands.flush_output()  # here, where a failure to write the results is reported
        return status
    except BrokenPipeError:
        # Whoever read our stdout went away (`... | head`): stop quietly. For verify, what it
        # was reading were problem lines.
        _discard_stdout()
        return EXIT_CORRUPT if args.command == "verify" else EXIT_OK
    except CorruptRecordError as exc:
        log.error("%s", commands.describe_damage(exc), exc_info=args.verbose)
        return EXIT_CORRUPT
    except (TFRecordError, OSError, ValueError) as exc:
        log.error("%s", exc, exc_info=args.verbose)
        return EXIT_USAGE
    except KeyboardInterrupt:
        log.error("interrupted")
        return 130
    except Exception as exc:
        # Spark's failures (pyspark and py4j are optional: recognised without them).
        from tfrecord_io.spark.jvm import describe_failure  # noqa: PLC0415 - on failure only

        failure = describe_failure(exc)
        if failure is None:
            raise
        log.error("%s", failure, exc_info=args.verbose)
        return EXIT_USAGE
    finally:
        package_log.removeHandler(handler)
        package_log.setLevel(saved_level)


def _discard_stdout() -> None:
    """Point stdout's file descriptor at the null device, so that what is still buffered for a
    reader that went away can be flushed (at exit) without failing."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (captured, replaced)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
