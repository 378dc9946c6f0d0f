"""Batch inference over a DataFrame: :func:`predict` (``tfrecord_io.ml.predict``).

The model is run by Spark's Python workers through ``DataFrame.mapInArrow``: each task streams
its partition as Arrow batches, which are cut into batches of exactly ``batch_size`` rows (the
last of a partition may be shorter); each batch's mapped columns become the model's input
tensors (:mod:`tfrecord_io.ml.tensors`), the model runs once on the batch, and its outputs are
appended to the batch as new columns. No TensorFlow cluster, no row-at-a-time Python.

The model is loaded once per Python worker process (:func:`tfrecord_io.ml.models.cached`):
Spark reuses its Python workers across tasks (``spark.python.worker.reuse``, on by default), so
a worker loads the model on its first non-empty partition and keeps it. The driver loads it
too, once, to read its inputs and outputs and so the type of each new column. The cache key
includes a fingerprint of the model's files taken by the driver when :func:`predict` is called,
so a model replaced at the same location is loaded again by the next :func:`predict`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from tfrecord_io.errors import ModelError
from tfrecord_io.ml import models, tensors

__all__ = ["predict", "rebatch", "DEFAULT_BATCH_SIZE"]

#: Rows per model call unless told otherwise.
DEFAULT_BATCH_SIZE = 256

_VECTOR_COLUMN = "__tfrecord_io_vector_{}"


def rebatch(batches: Iterable[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    """*batches* cut and joined into batches of *size* rows (the last may be shorter), in
    order."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        offset = 0
        while offset < batch.num_rows:
            take = min(size - count, batch.num_rows - offset)
            pending.append(batch.slice(offset, take))
            count += take
            offset += take
            if count == size:
                yield _joined(pending)
                pending, count = [], 0
    if count:
        yield _joined(pending)


def _joined(pieces: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(pieces) == 1:
        return pieces[0]
    table = pa.Table.from_batches(pieces).combine_chunks()
    return pa.RecordBatch.from_arrays(
        [column.chunk(0) for column in table.columns], schema=table.schema
    )


class _BatchPredictor:
    """The function ``mapInArrow`` runs on the executors: plain data only, so it pickles
    small; the model is looked up (or loaded) in the worker's own cache."""

    def __init__(
        self,
        location: str,
        signature: str,
        version: str,
        feeds: list[tuple[str, str]],
        results: list[tuple[str, str]],
        keep: list[str],
        batch_size: int,
    ) -> None:
        self.location = location
        self.signature = signature
        self.version = version
        self.feeds = feeds  # (column, model input)
        self.results = results  # (model output, new column)
        self.keep = keep
        self.batch_size = batch_size

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        model = None
        names = self.keep + [column for _, column in self.results]
        for batch in rebatch(batches, self.batch_size):
            if model is None:
                model = models.cached(self.location, self.signature, self.version)
            inputs = {
                name: tensors.to_input(
                    batch.column(column), model.inputs[name],
                    f"column {column!r} (input {name!r} of the model at {self.location})",
                )
                for column, name in self.feeds
            }
            outputs = model.predict(inputs)
            new = []
            for name, column in self.results:
                values = outputs[name]
                if len(values) != batch.num_rows:
                    raise ModelError(
                        f"output {name!r} of the model at {self.location} has {len(values)} "
                        f"rows for a batch of {batch.num_rows}: it must keep the batch dimension"
                    )
                new.append(tensors.to_column(values, model.outputs[name]))
            kept = [batch.column(column) for column in self.keep]
            yield pa.RecordBatch.from_arrays(kept + new, names=names)


def _mapping(value: Mapping[str, str] | None, what: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{what} must map str to str, not {value!r}")
    if not value:
        raise ValueError(f"{what} is empty: map at least one name")
    return dict(value)


def _holds_text(data_type: Any) -> bool | None:
    """Whether a Spark column type holds strings/bytes (True), numbers (False), or neither."""
    from pyspark.sql import types as T  # noqa: PLC0415, N812

    while isinstance(data_type, T.ArrayType):
        data_type = data_type.elementType
    if isinstance(data_type, (T.StringType, T.BinaryType)):
        return True
    if isinstance(data_type, (T.NumericType, T.BooleanType)):
        return False
    return None


def predict(
    df: Any,
    model_dir: str | os.PathLike[str],
    input_mapping: Mapping[str, str] | None = None,
    output_mapping: Mapping[str, str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    signature: str = models.DEFAULT_SIGNATURE,
) -> Any:
    """*df* with the outputs of the model at *model_dir* appended as new columns.

    ::

        from tfrecord_io import ml

        scored = ml.predict(df, "hdfs://nn:8020/models/mnist",
                            input_mapping={"image": "image"},       # column -> model input
                            output_mapping={"dense_1": "scores"})   # model output -> column

    Args:
        df: a Spark DataFrame.
        model_dir: a SavedModel directory or a Keras file (``.keras``, ``.h5``), local or
            ``hdfs://`` (see :mod:`tfrecord_io.ml.models`). Every executor must reach it: a
            local path works only when the executors share the driver's disk.
        input_mapping: DataFrame column -> model input name; every input of the model must be
            fed. Default: each input from the column of the same name.
        output_mapping: model output name -> new column name; outputs not named are not
            kept. Default: every output, in a column of its own name.
        batch_size: rows per model call.
        signature: the SavedModel signature to call (ignored for Keras files).

    Returns:
        A DataFrame of *df*'s columns followed by the new ones (types in
        :mod:`tfrecord_io.ml.tensors`), one row per input row, in the same partitions. It is
        lazy, like any DataFrame: the model runs when an action runs.

    Raises:
        ModelError: no model at *model_dir*, mapped names that the model or *df* does not have,
            a model input left unmapped, a column whose type the input cannot take, or a new
            column name already in *df*. Errors in the data itself (nulls, ragged arrays) are
            raised by the Spark job, as a ``ModelError`` naming the column, when it runs.
        ValueError: a bad *batch_size* or mapping.
    """
    from pyspark.ml.functions import vector_to_array  # noqa: PLC0415
    from pyspark.ml.linalg import VectorUDT  # noqa: PLC0415
    from pyspark.sql import functions as F  # noqa: PLC0415, N812
    from pyspark.sql import types as T  # noqa: PLC0415, N812

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, not {batch_size!r}")
    inputs_of = _mapping(input_mapping, "input_mapping")
    outputs_of = _mapping(output_mapping, "output_mapping")
    location = os.fspath(model_dir)
    version = models.fingerprint(location)
    model = models.cached(location, signature, version)

    if inputs_of is None:
        inputs_of = {name: name for name in model.inputs}
    if outputs_of is None:
        outputs_of = {name: name for name in model.outputs}
    fields = {f.name: f for f in df.schema.fields}
    for column, name in inputs_of.items():
        if column not in fields:
            raise ModelError(
                f"input_mapping names column {column!r}, which the DataFrame does not have "
                f"(it has {list(fields)})"
            )
        if name not in model.inputs:
            raise ModelError(
                f"input_mapping maps {column!r} to {name!r}, but the model at {location} has "
                f"the inputs {list(model.inputs)}"
            )
    unfed = [name for name in model.inputs if name not in inputs_of.values()]
    if unfed:
        raise ModelError(
            f"the model at {location} also needs the inputs {unfed}: map a column to each in "
            "input_mapping"
        )
    for name, column in outputs_of.items():
        if name not in model.outputs:
            raise ModelError(
                f"output_mapping names output {name!r}, but the model at {location} has the "
                f"outputs {list(model.outputs)}"
            )
        if column in fields:
            raise ModelError(
                f"output_mapping would add column {column!r}, which the DataFrame already has: "
                "choose another name"
            )
    if len(set(outputs_of.values())) != len(outputs_of):
        raise ModelError(f"output_mapping gives two outputs one column name: {outputs_of}")

    keep = list(fields)
    feeds: list[tuple[str, str]] = []
    source = df
    for i, (column, name) in enumerate(inputs_of.items()):
        data_type = fields[column].dataType
        if isinstance(data_type, VectorUDT):
            hidden = _VECTOR_COLUMN.format(i)
            source = source.withColumn(hidden, vector_to_array(F.col(column), "float32"))
            feeds.append((hidden, name))
            continue
        text = _holds_text(data_type)
        wants_text = model.inputs[name].dtype == "string"
        if text is None or text != wants_text:
            raise ModelError(
                f"column {column!r} ({data_type.simpleString()}) cannot feed input {name!r} "
                f"({model.inputs[name].dtype}) of the model at {location}"
            )
        feeds.append((column, name))
    results = list(outputs_of.items())
    schema = T.StructType(
        [fields[column] for column in keep]
        + [
            T.StructField(column, tensors.spark_type(model.outputs[name]))
            for name, column in results
        ]
    )
    run = _BatchPredictor(location, signature, version, feeds, results, keep, batch_size)
    return source.mapInArrow(run, schema)
