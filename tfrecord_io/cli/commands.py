"""The ``tfrecord-io`` commands: each takes the parsed arguments and returns the exit status.

They call the layers below (records, index, example, datasets) and print with
:mod:`tfrecord_io.cli.render`; inputs are expanded by :mod:`tfrecord_io.cli.paths`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from tfrecord_io import compression as codec
from tfrecord_io import fs, index
from tfrecord_io import records as _records
from tfrecord_io.cli import render
from tfrecord_io.cli.paths import expand_paths
from tfrecord_io.errors import (
    CorruptRecordError,
    DamagedImageError,
    InputError,
    OutputError,
    SchemaError,
    TFRecordError,
)
from tfrecord_io.extras import require

__all__ = [
    "EXIT_OK",
    "EXIT_CORRUPT",
    "EXIT_USAGE",
    "cmd_count",
    "cmd_head",
    "cmd_schema",
    "cmd_verify",
    "cmd_index",
    "cmd_mnist",
    "cmd_images",
    "describe_damage",
    "emit",
    "flush_output",
]

log = logging.getLogger("tfrecord_io.cli")  # one logger for the whole command line

#: Exit status: success.
EXIT_OK = 0
#: Exit status: damaged data was found.
EXIT_CORRUPT = 1
#: Exit status: bad usage, or an input that is missing or malformed.
EXIT_USAGE = 2


def infer_spec(sample: list[bytes], record_type: str) -> Any:
    """:func:`tfrecord_io.example.spec.infer_spec`, imported on first use (pyarrow is heavy)."""
    from tfrecord_io.example.spec import infer_spec as infer  # noqa: PLC0415 - pyarrow is heavy: on first use

    return infer(sample, record_type)


def emit(line: str, *, flush: bool = False) -> None:
    """Write one line of results to stdout (every command's results go through here), and
    flush it if *flush*.

    Raises:
        BrokenPipeError: the reader of stdout went away (:func:`~tfrecord_io.cli.main` stops
            quietly).
        OutputError: stdout is closed or cannot be written: never taken for a failure of the
            input being read when the line is written.
    """
    stream = sys.stdout
    if stream is None:  # the command was started with its stdout closed (`>&-`)
        raise OutputError("standard output is closed, so the results have nowhere to go; "
                          "redirect it to a file (or to /dev/null)")
    try:
        stream.write(line + "\n")
        if flush:
            stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _output_error(exc) from exc


def flush_output() -> None:
    """Flush what is buffered for stdout.

    Raises:
        BrokenPipeError: the reader of stdout went away.
        OutputError: stdout cannot be written.
    """
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _output_error(exc) from exc


def _output_error(error: OSError) -> OutputError:
    return OutputError(f"cannot write the results to standard output: {error}; what it holds "
                       "is incomplete: make room where stdout goes, or redirect it")


def describe_damage(error: CorruptRecordError, outcome: str = "") -> str:
    """*error* as the command line says it: the file, the byte offset and what is wrong, then
    *outcome* (what the command did about it) and the command that lists every damaged stretch
    (the library's own message ends with advice for its callers instead)."""
    outcome = f" ({outcome})" if outcome else ""
    return (
        f"corrupt TFRecord in {error.path} at byte offset {error.offset}: {error.reason}"
        f"{outcome}; `tfrecord-io verify` lists every damaged stretch"
    )


def _records_of(files: Sequence[str], compression: str | None
                ) -> Iterator[tuple[str, int, int, bytes]]:
    """(file, offset, index in the file, record) for every record of every file, in order."""
    for path in files:
        with _records.RecordReader(path, compression) as reader:
            for i, record in enumerate(reader):
                yield path, reader.offset or 0, i, record


def cmd_count(args: argparse.Namespace) -> int:
    """``tfrecord-io count``: records per file (from the index when there is a valid one), and the
    total -- or, when some files are damaged, a diagnostic saying why there is none."""
    files = expand_paths(args.paths)
    total = damaged = 0
    for path in files:
        try:
            entries = None
            if codec.resolve(args.compression, path) == codec.NONE:
                entries = index.load_index(path)
            n = len(entries) if entries is not None else _count_records(path, args.compression)
        except CorruptRecordError as exc:
            log.error("%s", describe_damage(exc, "not counted"))
            damaged += 1
            continue
        total += n
        emit(f"{n}\t{path}")
    if damaged and len(files) > 1:
        log.error("no total: %d of the %d files %s damaged (the other %d hold %d records)",
                  damaged, len(files), "is" if damaged == 1 else "are", len(files) - damaged,
                  total)
    elif len(files) > 1:
        emit(f"{total}\ttotal")
    return EXIT_CORRUPT if damaged else EXIT_OK


def _count_records(path: str, compression: str | None) -> int:
    """The records of one file, read without their data CRCs (the slow part); every length's
    CRC is checked all the same, so damage is reported at the record it is in."""
    with _records.RecordReader(path, compression, verify=False) as reader:
        return sum(1 for _ in reader)


def cmd_head(args: argparse.Namespace) -> int:
    """``tfrecord-io head``: the first records, decoded (or raw), as JSON lines."""
    files = expand_paths(args.paths)
    if args.n == 0:
        return EXIT_OK
    shown = 0
    try:
        for path, offset, _, record in _records_of(files, args.compression):
            if args.raw:
                value: Any = render.json_bytes(record)
            else:
                try:
                    value = render.decoded_record(record, args.type)
                except SchemaError:
                    raise InputError(
                        f"{path}: the record at byte offset {offset} is not a tf.train."
                        f"{'SequenceExample' if args.type == 'sequence' else 'Example'}; "
                        "use --raw to print the records' bytes"
                    ) from None
            emit(json.dumps(value, ensure_ascii=True, separators=(", ", ": ")))
            shown += 1
            if shown >= args.n:
                break
    except CorruptRecordError as exc:
        log.error("%s", describe_damage(
            exc, f"stopped there, after {shown} record{'' if shown == 1 else 's'} printed"))
        return EXIT_CORRUPT
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    """``tfrecord-io schema``: the feature spec and Spark schema of sampled records."""
    files = expand_paths(args.paths)
    limit = None if args.sample == 0 else args.sample
    sample: list[bytes] = []
    where: list[tuple[str, int, int]] = []  # (file, byte offset, index in the file) of each
    try:
        for path, offset, i, record in _records_of(files, args.compression):
            sample.append(record)
            where.append((path, offset, i))
            if limit is not None and len(sample) >= limit:
                break
    except CorruptRecordError as exc:
        outcome = "no schema inferred"
        if sample:
            outcome += f"; --sample {len(sample)} infers it from the records before the damage"
        log.error("%s", describe_damage(exc, outcome))
        return EXIT_CORRUPT
    if not sample:
        raise InputError(f"{' '.join(args.paths)}: no records to infer a schema from")
    record_type = {"auto": "auto", "example": "Example", "sequence": "SequenceExample"}[args.type]
    try:
        description = render.schema_description(infer_spec(sample, record_type))
    except SchemaError as exc:
        raise _schema_error(exc, sample, where, record_type, args.paths) from None
    description["records_sampled"] = len(sample)
    emit(json.dumps(description, indent=2) if args.json else render.schema_source(description))
    return EXIT_OK


def _schema_error(error: SchemaError, sample: list[bytes], where: list[tuple[str, int, int]],
                  record_type: str, paths: Sequence[str]) -> InputError:
    """The error for a sample whose spec cannot be inferred: a record that is not of the type,
    named by its file, byte offset and index in the file, as ``head`` names it; else (a feature
    of different kinds in different records) the inference's message, naming the files."""
    from tfrecord_io import example  # noqa: PLC0415 - the example layer, for `schema` only
    from tfrecord_io.example.spec import has_feature_lists  # noqa: PLC0415 - pyarrow is heavy

    if record_type == "auto":  # as infer_spec decides it
        record_type = "SequenceExample" if any(map(has_feature_lists, sample)) else "Example"
    decode = (example.decode_sequence_example if record_type == "SequenceExample"
              else example.decode_example)
    for record, (path, offset, i) in zip(sample, where, strict=True):
        try:
            decode(record)
        except SchemaError:
            return InputError(
                f"{path}: the record at byte offset {offset} (record {i} of the file) is not "
                f"a tf.train.{record_type}; `tfrecord-io head --raw` prints the records' bytes"
            )
    files = sorted({path for path, _, _ in where})
    return InputError(f"{files[0] if len(files) == 1 else ' '.join(paths)}: {error}")


# -- verify, index ----------------------------------------------------------------------------


def cmd_verify(args: argparse.Namespace) -> int:
    """``tfrecord-io verify``: check every CRC and index; one line per damaged stretch."""
    files = expand_paths(args.paths)
    problems = damaged_files = total = unreadable = 0

    def report(error: CorruptRecordError) -> None:
        nonlocal problems
        problems += 1
        emit(f"{error.path}: byte offset {error.offset}: {error.reason}", flush=True)

    # The reader reports each damaged stretch once, to report() alone.
    for path in files:
        before = problems
        indexed: list[tuple[int, int]] | None = None
        index_problem = None
        n = 0  # records read
        try:
            if codec.resolve(args.compression, path) == codec.NONE:
                ipath = index.index_path(path)
                try:
                    indexed = index.read_index(ipath)
                except FileNotFoundError:
                    pass
                except ValueError as exc:
                    index_problem = f"bad index: {exc}"
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
        except (BrokenPipeError, OutputError):
            raise  # writing stdout failed (its reader went away...): not the file's fault
        except CorruptRecordError as exc:
            # Damage the reader cannot skip past (resynchronising given up): the rest of the
            # file is its last damaged stretch.
            report(exc)
        except (OSError, TFRecordError, ValueError) as exc:
            log.error("%s: %s", path, exc)
            unreadable += 1
            continue
        total += n
        if problems == before and index_problem is not None:
            emit(f"{path}: {index_problem}", flush=True)
            problems += 1
        if problems > before:
            damaged_files += 1
    read = len(files) - unreadable
    if problems:
        log.info("%d problem%s in %d of %d file%s", problems, "" if problems == 1 else "s",
                 damaged_files, read, "" if read == 1 else "s")
    elif read:
        log.info("%d file%s, %d records: every checksum is correct", read,
                 "" if read == 1 else "s", total)
    if unreadable:
        log.error("%d file%s not verified: %s could not be read (see above)", unreadable,
                  "" if unreadable == 1 else "s", "it" if unreadable == 1 else "they")
        return EXIT_USAGE
    return EXIT_CORRUPT if problems else EXIT_OK


def _stale(ipath: str, i: int, indexed: list[tuple[int, int]], entry: tuple[int, int]) -> str:
    if i >= len(indexed):
        return f"stale index {ipath}: it lists {len(indexed)} records, the file has more"
    return (
        f"stale index {ipath}: line {i + 1} says {indexed[i][0]} {indexed[i][1]}, but the "
        f"record there is at byte offset {entry[0]}, {entry[1]} bytes long"
    )


def cmd_index(args: argparse.Namespace) -> int:
    """``tfrecord-io index``: write the missing split indexes of uncompressed files."""
    files = expand_paths(args.paths)
    status = EXIT_OK
    for path in files:
        other = codec.unreadable_codec(path)
        if other is not None:
            log.info("%s: compressed (%s), so not indexed", path, other)
            continue
        if codec.detect(path) != codec.NONE:
            log.info("%s: compressed, so not splittable: no index", path)
            continue
        if index.load_index(path) is not None:
            log.info("%s: its index is up to date", path)
            continue
        try:
            entries = list(index.scan(path, "none"))
            ipath = index.write_index(path, entries)
        except CorruptRecordError as exc:
            log.error("%s", describe_damage(exc, "no index written"))
            status = EXIT_CORRUPT
            continue
        emit(f"{ipath}\t{len(entries)} records")
    return status


def cmd_mnist(args: argparse.Namespace) -> int:
    """``tfrecord-io mnist``: convert MNIST IDX files, locally or on Spark executors."""
    from tfrecord_io.datasets import mnist  # noqa: PLC0415 - loaded by this command only

    splits = mnist.load(args.input)  # every input checked before Spark starts or we write
    spark, running = _spark_for(args, "tfrecord-io mnist")
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
    emit(result.summary())
    return EXIT_OK


def _spark_for(args: argparse.Namespace, app_name: str) -> tuple[Any, Any]:
    """The SparkSession of ``--spark MASTER`` (None without it) and the session that was already
    running, if any (not to be stopped)."""
    if not args.spark:
        return None, None
    _check_hadoop_output(args.output)
    if not args.spark.startswith("local") and fs.is_local(args.output):
        log.warning(
            "The output %s is a local path: executors on other machines would write to their "
            "own disks; give an hdfs:// OUTPUT", args.output,
        )
    from tfrecord_io import spark as tfs  # noqa: PLC0415 - pyspark, the `spark` extra

    require("pyspark", f"{app_name} --spark")
    from pyspark.sql import SparkSession  # noqa: PLC0415 - pyspark, the `spark` extra

    schemes = {fs.split_url(str(url))[0] for url in (args.input, args.output)}
    on_s3, on_gcs = "s3" in schemes, "gs" in schemes
    on_abfs = bool(schemes & {"abfs", "abfss"})
    running = SparkSession.getActiveSession()
    if running is not None:  # main() called inside a Spark application: use its session
        log.info("Using the running Spark session (master %s)", running.sparkContext.master)
        spark = tfs.session(args.spark, app_name=app_name)
        if on_s3:
            tfs.configure_s3a(spark, credentials=True)
        if on_abfs:
            tfs.configure_abfs(spark)
        if on_gcs:
            tfs.configure_gcs(spark)
        return spark, running
    # S3A and ABFS as the settings of this process's s3:// and abfs:// say, their connectors
    # fetched from Maven Central, and this process's explicit keys, if any (Spark redacts
    # them): what reaches the store here reaches it from the executors. Google's connector as
    # gs:// is set here; its shaded jar cannot come from spark.jars.packages (no classifiers
    # there), so it must be on the application's classpath already (--jars in
    # PYSPARK_SUBMIT_ARGS, or Spark's jars).
    conf: dict[str, str] = {}
    packages = []
    if on_s3:
        conf.update(tfs.s3a_conf(credentials=True))
        packages.append(tfs.hadoop_aws_package())
    if on_abfs:
        conf.update(tfs.abfs_conf())
        packages.append(tfs.hadoop_azure_package())
    if packages:
        conf["spark.jars.packages"] = ",".join(packages)
    if on_gcs:
        conf.update(tfs.gcs_conf())
    spark = tfs.session(args.spark, app_name=app_name, **conf)
    spark.sparkContext.setLogLevel("WARN")
    return spark, running


def _check_hadoop_output(output: str) -> None:
    """Refuse, before Spark starts, an output that Spark's Hadoop cannot name (``az://``, and
    ``abfs[s]://`` without the account); the message gives the URL of the same place that
    Spark can write.

    Raises:
        InputError: such an output.
    """
    from tfrecord_io.spark.object_stores import abfs_url  # noqa: PLC0415 - with --spark only

    same = abfs_url(output)
    if same is None:
        return
    scheme = fs.split_url(output)[0]
    if scheme == "az":
        why = "az:// is not a Hadoop URL scheme (Spark writes through Hadoop's ABFS connector)"
    else:
        why = f"Hadoop's ABFS connector needs the storage account in {scheme}:// URLs"
    raise InputError(f"{output}: --spark cannot write there: {why}; give the same location as "
                     f"{same}")


def cmd_images(args: argparse.Namespace) -> int:
    """``tfrecord-io images``: convert a class-per-folder image tree, locally or on Spark
    executors; exit status 1 for a damaged image under ``--on-corrupt fail``."""
    from tfrecord_io.datasets import images  # noqa: PLC0415 - loaded by this command only

    if args.spark and not args.spark.startswith("local") and fs.is_local(args.input):
        log.warning("SRC %s is a local path: executors on other machines read their own disks; "
                    "give an hdfs:// SRC", args.input)
    spark, running = _spark_for(args, "tfrecord-io images")
    try:
        result = images.convert(
            args.input,
            args.output,
            shards=args.shards,
            validation_fraction=args.validation_fraction,
            validation_shards=args.validation_shards,
            first_label=args.first_label,
            on_corrupt=args.on_corrupt,
            compression=args.compression,
            spark=spark,
            overwrite=args.overwrite,
            progress=sys.stderr.isatty() and not args.quiet,
        )
    except DamagedImageError as exc:
        log.error("%s (nothing written; --on-corrupt skip converts the other images)", exc)
        return EXIT_CORRUPT
    finally:
        if spark is not None and running is None:
            spark.stop()
    emit(result.summary())
    return EXIT_OK
