"""Batch inference over a DataFrame: :func:`predict` (``tfrecord_io.ml.predict``).

The model runs in Spark's Python workers as a scalar-iterator Arrow UDF
(``pyspark.sql.functions.arrow_udf``, ``SCALAR_ITER``, pyspark 4.1 and later; before 4.1, which
has no ``arrow_udf``, a scalar-iterator ``pandas_udf`` whose pandas batches are turned back into
Arrow arrays of the columns' own types): only the mapped columns cross to Python, as Arrow batches
(of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, 10,000 by default), each cut into batches
of ``batch_size`` rows (the last piece of each Arrow batch may be shorter); each batch's columns
become the model's input tensors (:mod:`tfrecord_io.ml.tensors`), the model runs once on the batch,
and only its outputs come back, as one struct that is then spread into the new columns. The
DataFrame's other columns never leave the JVM. No TensorFlow cluster, no row-at-a-time Python.

The model is loaded once per Python worker process (:func:`tfrecord_io.ml.loading.cached`):
Spark reuses its Python workers across tasks (``spark.python.worker.reuse``, on by default), so
a worker loads the model on its first non-empty batch and keeps it. The driver loads it
too, once, to read its inputs and outputs and so the type of each new column. The cache key
includes a fingerprint of the model's files taken by the driver when :func:`predict` is called,
so a model replaced at the same location is loaded again by the next :func:`predict`; a worker
that has not loaded it yet checks that the files still have that fingerprint, and fails the job
(:class:`~tfrecord_io.errors.ModelError`) when the model was replaced after :func:`predict` was
called, rather than score some rows with one model and some with the other.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from tfrecord_io import fs
from tfrecord_io.errors import ModelError
from tfrecord_io.example.spec import sql_identifier
from tfrecord_io.ml import loading, tensors

__all__ = ["predict", "chunks", "DEFAULT_BATCH_SIZE"]

#: Rows per model call unless told otherwise.
DEFAULT_BATCH_SIZE = 256

_VECTOR_COLUMN = "__tfrecord_io_vector_{}"
_OUTPUTS = "__tfrecord_io_outputs"
#: Input types that take an ML vector as float32 (vector_to_array's narrower precision); every
#: other input takes its doubles as they are.
_FLOATS32 = ("float32", "float16", "bfloat16")


def chunks(arrays: list[pa.Array], size: int) -> Iterator[list[pa.Array]]:
    """Equal slices of *arrays* (columns of one batch), *size* rows each (the last may be
    shorter)."""
    rows = len(arrays[0]) if arrays else 0
    for start in range(0, rows, size):
        yield [array.slice(start, size) for array in arrays]


class _BatchPredictor:
    """The scalar-iterator Arrow UDF the executors run: plain data only, so it pickles small;
    the model is looked up (or loaded) in the Python worker's own cache. It takes the mapped
    columns only, and gives back one struct of the new columns: the DataFrame's other columns
    stay in the JVM."""

    def __init__(
        self,
        location: str,
        signature: str,
        version: str,
        feeds: list[tuple[str, str]],
        results: list[tuple[str, str]],
        batch_size: int,
        environment: dict[str, str],
    ) -> None:
        self.location = location
        self.signature = signature
        self.version = version
        self.feeds = feeds  # (the user's column, model input), in the UDF's argument order
        self.results = results  # (model output, new column)
        self.batch_size = batch_size
        # The driver's object-store settings (fs.environment()), so that a model on s3:// is
        # found as the driver found it; they may hold credentials, so they stay out of repr.
        self._environment = environment

    def __call__(self, batches: Iterable[Any]) -> Iterator[pa.Array]:
        model = None
        names = [column for _, column in self.results]
        for batch in batches:
            arrays = list(batch) if isinstance(batch, tuple) else [batch]
            if model is None:
                os.environ.update(self._environment)
                model = loading.cached(self.location, self.signature, self.version, verify=True)
            pieces: list[list[pa.Array]] = [[] for _ in self.results]
            for part in chunks(arrays, self.batch_size):
                for i, piece in enumerate(self._run(model, part)):
                    pieces[i].append(piece)
            columns = [pa.concat_arrays(p) for p in pieces]
            yield pa.StructArray.from_arrays(columns, names=names)

    def _run(self, model: loading.ServingModel, part: list[pa.Array]) -> list[pa.Array]:
        rows = len(part[0])
        inputs = {
            name: tensors.to_input(
                array, model.inputs[name],
                f"column {column!r} (input {name!r} of the model at {self.location})",
            )
            for array, (column, name) in zip(part, self.feeds, strict=True)
        }
        outputs = model.predict(inputs)
        new = []
        for name, _column in self.results:
            values = np.asarray(outputs[name])
            if values.ndim == 0 or values.shape[0] != rows:
                got = ("one value without a batch dimension" if values.ndim == 0 else
                       f"{values.shape[0]} rows (shape {list(values.shape)})")
                raise ModelError(
                    f"output {name!r} of the model at {self.location} has {got} for a batch "
                    f"of {rows} rows: it must keep the batch dimension, one row per input row "
                    "(e.g. tf.squeeze(y, axis=-1), not tf.squeeze(y), which drops it for a "
                    "batch of 1)"
                )
            new.append(tensors.to_column(values, model.outputs[name]))
        return new


class _PandasBatches:
    """The same predictor as a scalar-iterator pandas UDF, for pyspark before 4.1 (no
    ``arrow_udf``): each batch's pandas Series become Arrow arrays of the columns' Arrow types
    again, and the struct of new columns a pandas DataFrame."""

    def __init__(self, predictor: _BatchPredictor, types: list[pa.DataType]) -> None:
        self.predictor = predictor
        self.types = types  # the Arrow type of each fed column

    def _arrow(self, batch: Any) -> tuple[pa.Array, ...]:
        series = batch if isinstance(batch, tuple) else (batch,)
        typed = zip(series, self.types, strict=True)
        return tuple(pa.Array.from_pandas(s, type=t) for s, t in typed)

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        import pandas as pd  # noqa: PLC0415 - on the executors, with pyspark's pandas UDFs

        for struct in self.predictor(map(self._arrow, batches)):
            yield pd.DataFrame({
                field.name: struct.field(i).to_pandas() for i, field in enumerate(struct.type)
            })


def _scalar_iter_udf(predictor: _BatchPredictor, struct: Any, fed: list[Any]) -> Any:
    """*predictor* as a scalar-iterator UDF returning *struct*: an Arrow UDF where pyspark has
    them (4.1 and later), else a pandas UDF (*fed*: the Spark types of the fed columns)."""
    with warnings.catch_warnings():  # Spark prefers type hints; a callable object has none
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        try:
            from pyspark.sql.functions import ArrowUDFType, arrow_udf  # noqa: PLC0415 - pyspark, on use
        except ImportError:
            from pyspark.sql.functions import PandasUDFType, pandas_udf  # noqa: PLC0415 - pyspark, on use
            from pyspark.sql.pandas.types import to_arrow_type  # noqa: PLC0415 - pyspark, on use

            return pandas_udf(
                _PandasBatches(predictor, [to_arrow_type(t) for t in fed]),
                returnType=struct, functionType=PandasUDFType.SCALAR_ITER,
            )
        return arrow_udf(predictor, returnType=struct, functionType=ArrowUDFType.SCALAR_ITER)


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


def _leaf_type(data_type: Any) -> Any:
    """The type of the values of a Spark column type, inside any arrays."""
    from pyspark.sql import types as T  # noqa: PLC0415 - pyspark, on use

    while isinstance(data_type, T.ArrayType):
        data_type = data_type.elementType
    return data_type


def _holds_text(data_type: Any) -> bool | None:
    """Whether a Spark column type holds strings/bytes (True), numbers (False), or neither
    (decimals among them: no model input takes them)."""
    from pyspark.sql import types as T  # noqa: PLC0415 - pyspark, on use

    data_type = _leaf_type(data_type)
    if isinstance(data_type, T.DecimalType):
        return None
    if isinstance(data_type, (T.StringType, T.BinaryType)):
        return True
    if isinstance(data_type, (T.NumericType, T.BooleanType)):
        return False
    return None


def _double_type(data_type: Any) -> str:
    """The type that *data_type* (decimals, maybe inside arrays) should be cast to:
    ``double``, ``array<double>``, ..."""
    from pyspark.sql import types as T  # noqa: PLC0415 - pyspark, on use

    if isinstance(data_type, T.ArrayType):
        return f"array<{_double_type(data_type.elementType)}>"
    return "double"


def _case_sensitive(df: Any) -> bool:
    """Whether the session of *df* tells column names apart by case
    (``spark.sql.caseSensitive``, false by default)."""
    return str(df.sparkSession.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"


def predict(
    df: Any,
    model_dir: str | os.PathLike[str],
    input_mapping: Mapping[str, str] | None = None,
    output_mapping: Mapping[str, str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    signature: str = loading.DEFAULT_SIGNATURE,
) -> Any:
    """*df* with the outputs of the model at *model_dir* appended as new columns.

    ::

        from tfrecord_io import ml

        scored = ml.predict(df, "hdfs://nn:8020/models/mnist",
                            input_mapping={"image": "image"},       # column -> model input
                            output_mapping={"dense_1": "scores"})   # model output -> column

    Args:
        df: a Spark DataFrame.
        model_dir: a SavedModel directory or a Keras file (``.keras``, ``.h5``), local,
            ``hdfs://`` or ``s3://`` (see :mod:`tfrecord_io.ml.loading`). Every executor must
            reach it: a local path works only when the executors share the driver's disk; a
            relative one is taken from this process's working directory (the executors get it
            made absolute). The executors' Python workers take this process's object-store
            settings (:func:`tfrecord_io.fs.environment`) before they load it.
        input_mapping: DataFrame column -> model input name; every input of the model must be
            fed. Default: each input from the column of the same name.
        output_mapping: model output name -> new column name; outputs not named are not
            kept. Default: every output, in a column of its own name.
        batch_size: rows per model call.
        signature: the SavedModel signature to call (ignored for Keras files).

    Returns:
        A DataFrame of *df*'s columns (all of them, two of one name included) followed by the
        new ones (types in
        :mod:`tfrecord_io.ml.tensors`), one row per input row, in the same partitions. It is
        lazy, like any DataFrame: the model runs when an action runs.

    Raises:
        ModelError: no model at *model_dir*, mapped names that the model or *df* does not have,
            a model input left unmapped or mapped from two columns, a mapped column that *df*
            has twice (columns only passed through may share a name), a column whose type the
            input cannot take (text for numbers or numbers for text; decimals, which must be
            cast to double), or a new column name already in *df* (names compared as the
            session compares them: ignoring case unless ``spark.sql.caseSensitive`` is true).
            Errors in the data itself (nulls, null vectors, ragged arrays, integers out of the
            range of an integer input's type, fractions for an integer input), an output that
            loses the batch dimension, and a model replaced at *model_dir* after this call and
            before the job loaded it are raised by the Spark job, as a ``ModelError`` naming
            the column or the output and the model, when it runs.
        ValueError: a bad *batch_size* or mapping.
    """
    from pyspark.ml.functions import vector_to_array  # noqa: PLC0415 - pyspark, on use
    from pyspark.ml.linalg import VectorUDT  # noqa: PLC0415 - pyspark, on use
    from pyspark.sql import functions as F  # noqa: PLC0415 - pyspark, on use
    from pyspark.sql import types as T  # noqa: PLC0415 - pyspark, on use

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, not {batch_size!r}")
    inputs_of = _mapping(input_mapping, "input_mapping")
    outputs_of = _mapping(output_mapping, "output_mapping")
    location = loading.absolute(model_dir)
    version = loading.fingerprint(location)
    model = loading.cached(location, signature, version)

    by_default = inputs_of is None
    if inputs_of is None:
        inputs_of = {name: name for name in model.inputs}
    if outputs_of is None:
        outputs_of = {name: name for name in model.outputs}
    fields = {f.name: f for f in df.schema.fields}
    case_sensitive = _case_sensitive(df)

    def spark_name(column: str) -> str:
        """*column* as the session compares column names."""
        return column if case_sensitive else column.lower()

    taken = {spark_name(column): column for column in fields}
    # A DataFrame may have two columns of one name (after a join): those it only passes
    # through are kept as they are, but a column fed to the model must be one column.
    named = [spark_name(column) for column in df.columns]
    fed_by: dict[str, list[str]] = {}  # model input -> the columns mapped to it
    for column, name in inputs_of.items():
        if column not in fields and by_default:
            raise ModelError(
                f"the model at {location} takes the input {name!r}, which is fed from the "
                f"column of that name when no input_mapping is given, but the DataFrame has no "
                f"column {column!r} (it has {list(fields)}): pass input_mapping="
                f"{{column: {name!r}}} naming the column to feed it"
            )
        if column not in fields:
            raise ModelError(
                f"input_mapping names column {column!r}, which the DataFrame does not have "
                f"(it has {list(fields)})"
            )
        if named.count(spark_name(column)) > 1:
            raise ModelError(
                f"input_mapping names column {column!r}, which the DataFrame has "
                f"{named.count(spark_name(column))} times"
                + ("" if case_sensitive else " (Spark column names ignore case)")
                + f": rename or drop the others before feeding it to the model at {location}"
            )
        if name not in model.inputs:
            raise ModelError(
                f"input_mapping maps {column!r} to {name!r}, but the model at {location} has "
                f"the inputs {list(model.inputs)}"
            )
        fed_by.setdefault(name, []).append(column)
    for name, columns in fed_by.items():
        if len(columns) > 1:
            raise ModelError(
                f"input_mapping maps the columns {columns} to one input {name!r} of the model "
                f"at {location}: map one column to each input"
            )
    unfed = [name for name in model.inputs if name not in fed_by]
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
        existing = taken.get(spark_name(column))
        if existing is not None:
            raise ModelError(
                f"output_mapping would add column {column!r}, which the DataFrame already has"
                + ("" if existing == column else
                   f" as {existing!r} (Spark column names ignore case unless "
                   "spark.sql.caseSensitive is true)")
                + ": choose another name"
            )
    if len({spark_name(column) for column in outputs_of.values()}) != len(outputs_of):
        raise ModelError(f"output_mapping gives two outputs one column name: {outputs_of}"
                         + ("" if case_sensitive else " (Spark column names ignore case)"))

    hidden_columns: list[str] = []  # the vectors as arrays, dropped from the result
    feeds: list[tuple[str, str]] = []  # (column, model input), the column as the user names it
    fed: list[str] = []  # the column of the DataFrame each feed reads
    source = df
    for i, (column, name) in enumerate(inputs_of.items()):
        data_type = fields[column].dataType
        if isinstance(data_type, VectorUDT):
            # An array of the vector's doubles, as they are unless the input takes 32 bits or
            # fewer; a null vector a null array, which the workers refuse naming the column
            # (vector_to_array itself fails on a null in the JVM, naming nothing).
            hidden = _VECTOR_COLUMN.format(i)
            vector = F.col(sql_identifier(column))
            precision = "float32" if model.inputs[name].dtype in _FLOATS32 else "float64"
            source = source.withColumn(
                hidden, F.when(vector.isNull(), F.lit(None))
                .otherwise(vector_to_array(vector, precision))
            )
            feeds.append((column, name))
            fed.append(hidden)
            hidden_columns.append(hidden)
            continue
        if isinstance(_leaf_type(data_type), T.DecimalType):
            raise ModelError(
                f"column {column!r} ({data_type.simpleString()}) holds decimals, which no model "
                f"input takes (input {name!r} of the model at {location} is "
                f"{model.inputs[name].dtype}): cast the column to double first "
                f"(F.col(...).cast({_double_type(data_type)!r}))"
            )
        text = _holds_text(data_type)
        wants_text = model.inputs[name].dtype == "string"
        if text is None or text != wants_text:
            raise ModelError(
                f"column {column!r} ({data_type.simpleString()}) cannot feed input {name!r} "
                f"({model.inputs[name].dtype}) of the model at {location}"
            )
        feeds.append((column, name))
        fed.append(column)
    results = list(outputs_of.items())
    struct = T.StructType(
        [T.StructField(column, tensors.spark_type(model.outputs[name])) for name, column in results]
    )
    run = _scalar_iter_udf(
        _BatchPredictor(location, signature, version, feeds, results, batch_size,
                        fs.environment()), struct,
        [source.schema[column].dataType for column in fed],
    )
    scored = source.withColumn(
        _OUTPUTS, run(*[source[sql_identifier(column)] for column in fed])
    )
    # The new columns appended and the helpers dropped, by name: *df*'s own columns are not
    # named again, so that two of one name (after a join) stay as they are.
    outputs = F.col(_OUTPUTS)
    return scored.withColumns(
        {column: outputs.getField(column) for _, column in results}
    ).drop(_OUTPUTS, *hidden_columns)
