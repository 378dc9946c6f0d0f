"""A trained TensorFlow model as a Spark ML ``Model``: :class:`TFModel`, with the
:class:`TFTrainingSummary` of the fit that made it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pyspark
from pyspark import keyword_only
from pyspark.ml import Model
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.util import (
    DefaultParamsReader,
    DefaultParamsWriter,
    MLReadable,
    MLReader,
    MLWritable,
    MLWriter,
)

from tfrecord_io.cluster import MetricRecord, Metrics, Result
from tfrecord_io.ml.inference import predict
from tfrecord_io.ml.loading import absolute
from tfrecord_io.ml.params import InferenceParams
from tfrecord_io.spark.jvm import is_connect

__all__ = ["TFModel", "TFTrainingSummary", "TFModelWriter", "TFModelReader", "SUMMARY_DIR"]

#: The subdirectory of a saved :class:`TFModel` that holds its training summary (a JSON line).
SUMMARY_DIR = "summary"


@dataclass(frozen=True)
class TFTrainingSummary:
    """How a :class:`TFModel` was trained (``model.summary``): what the nodes reported with
    ``ctx.report`` or ``ctx.keras_callback()``, how many attempts the cluster took, how long.

    Attributes:
        metrics: every reported record in the order the driver received it, of every attempt
            (``metrics.to_pandas()`` for a table of them).
        attempts: attempts the cluster took (1: no failure).
        elapsed: seconds from the cluster's start to its end.
    """

    metrics: Metrics = field(default_factory=Metrics)
    attempts: int = 1
    elapsed: float = 0.0

    @classmethod
    def of(cls, result: Result) -> TFTrainingSummary:
        """The summary of a finished cluster's :class:`~tfrecord_io.cluster.Result`."""
        return cls(Metrics(result.metrics), result.attempts, result.elapsed)

    def history(self, name: str, node: str | None = None) -> list[float]:
        """The values of metric *name* in the order reported (those of *node*, e.g.
        ``"worker:0"``, when given): e.g. ``summary.history("loss")`` per epoch with
        ``ctx.keras_callback()`` on one worker."""
        return [r.values[name] for r in self.metrics
                if name in r.values and (node is None or r.node == node)]

    def to_json(self) -> str:
        """This summary as one line of JSON (what :class:`TFModel`'s writer stores)."""
        records = [{"node": r.node, "attempt": r.attempt, "step": r.step, "time": r.time,
                    "values": r.values} for r in self.metrics]
        return json.dumps({"attempts": self.attempts, "elapsed": self.elapsed,
                           "metrics": records}, allow_nan=True)

    @classmethod
    def from_json(cls, text: str) -> TFTrainingSummary:
        """A summary written by :meth:`to_json`."""
        data = json.loads(text)
        metrics = Metrics(
            MetricRecord(r["node"], int(r["attempt"]), r["step"], float(r["time"]),
                         {k: float(v) for k, v in r["values"].items()})
            for r in data["metrics"]
        )
        return cls(metrics, int(data["attempts"]), float(data["elapsed"]))


def _location(value: Any) -> str:
    """The type converter of :attr:`TFModel.modelDir`: a string, a relative local path made
    absolute (:func:`tfrecord_io.ml.loading.absolute`)."""
    return absolute(TypeConverters.toString(value))


class TFModel(Model, InferenceParams, MLReadable, MLWritable):
    """A SavedModel or Keras model as a Spark ML ``Model``: :meth:`transform` is
    :func:`tfrecord_io.ml.predict` with this model's params.

    ::

        model = TFModel(modelDir="hdfs://nn:8020/models/mnist",
                        inputMapping={"image": "image"}, outputMapping={"dense_1": "scores"})
        scored = model.transform(df)                      # df's columns + "scores"
        pipeline = Pipeline(stages=[assembler, model])    # a stage like any other

    :meth:`TFEstimator.fit <tfrecord_io.ml.TFEstimator.fit>` returns one; one can also be made
    for any model already saved.

    **Training summary.** A model made by :class:`~tfrecord_io.ml.TFEstimator` keeps how it was
    trained: ``model.hasSummary`` is True and ``model.summary`` is a
    :class:`TFTrainingSummary` (the metrics the nodes reported, the attempts, the time), e.g.
    ``cv_model.bestModel.summary.history("loss")`` after a ``CrossValidator``.

    Persistence: ``model.write().save(path)`` / ``TFModel.load(path)`` (and a
    ``PipelineModel`` or ``CrossValidatorModel`` holding it) store the params, as Spark ML's
    default params writer does, and the training summary (``PATH/summary``, JSON;
    ``write().overwrite()`` replaces both, over Spark Connect too): **the
    model itself is not copied**. ``modelDir`` must still hold it when the loaded ``TFModel``
    is used.

    Params: ``modelDir`` (required; a relative local path is made absolute, from the working
    directory, when it is set, so that the executors and a ``TFModel`` loaded elsewhere find the
    same model), ``inputMapping``, ``outputMapping``, ``batchSize`` (256),
    ``signature`` (``"serving_default"``): see :func:`tfrecord_io.ml.predict`.
    """

    modelDir: Param[str] = Param(
        Params._dummy(), "modelDir",
        "the model: a SavedModel directory or a Keras file, local or a URL (hdfs://, s3://, "
        "gs://, ...); a relative local path is made absolute when set",
        typeConverter=_location,
    )

    @keyword_only
    def __init__(
        self,
        *,
        modelDir: str | None = None,
        inputMapping: dict[str, str] | None = None,
        outputMapping: dict[str, str] | None = None,
        batchSize: int | None = None,
        signature: str | None = None,
    ) -> None:
        super().__init__()
        self._set(**{k: v for k, v in self._input_kwargs.items() if v is not None})
        self._summary: TFTrainingSummary | None = None

    @property
    def hasSummary(self) -> bool:
        """Whether this model has a training summary (it came from a fit)."""
        return self._summary is not None

    @property
    def summary(self) -> TFTrainingSummary:
        """The :class:`TFTrainingSummary` of the fit that made this model.

        Raises:
            RuntimeError: it has none (:attr:`hasSummary` is False), as Spark ML's models do.
        """
        if self._summary is None:
            raise RuntimeError(f"No training summary available for this {type(self).__name__}: "
                               "only models made by TFEstimator.fit have one")
        return self._summary

    def setSummary(self, summary: TFTrainingSummary | None) -> TFModel:
        """Sets the training summary (None: none); :meth:`TFEstimator.fit` does."""
        self._summary = summary
        return self

    def write(self) -> MLWriter:
        """A writer of the params and the training summary (not of the model itself)."""
        return TFModelWriter(self)

    @classmethod
    def read(cls) -> MLReader[TFModel]:
        """A reader of what :meth:`write` saved (also ``TFModel.load(path)``)."""
        return TFModelReader(cls)

    def getModelDir(self) -> str:
        """The value of :attr:`modelDir`."""
        return self.getOrDefault(self.modelDir)

    def setModelDir(self, value: str) -> TFModel:
        """Sets :attr:`modelDir`."""
        return self._set(modelDir=value)

    def _transform(self, dataset: Any) -> Any:
        if not self.isDefined(self.modelDir):
            raise ValueError("TFModel has no modelDir: set it to the model's location")
        return predict(
            dataset,
            self.getModelDir(),
            input_mapping=self.getInputMapping(),
            output_mapping=self.getOutputMapping(),
            batch_size=self.getBatchSize(),
            signature=self.getSignature(),
        )

    def __repr__(self) -> str:
        where = self.getModelDir() if self.isDefined(self.modelDir) else "no modelDir"
        return f"TFModel({self.uid}, {where})"


class TFModelWriter(MLWriter):
    """Saves a :class:`TFModel`: Spark ML's params metadata, and its training summary as one
    JSON line in ``PATH/summary`` when it has one (``hasSummary`` in the metadata says so)."""

    def __init__(self, instance: TFModel) -> None:
        super().__init__()
        self.instance = instance
        self._replace = False  # overwrite() over Spark Connect: replace each file written

    def _handleOverwrite(self, path: str) -> None:
        # Spark ML deletes *path* through the JVM, which a Spark Connect client does not have:
        # there, saveImpl writes each of its files replacing the one already there instead.
        if is_connect(self.sparkSession):
            self._replace = True
        else:
            super()._handleOverwrite(path)

    def saveImpl(self, path: str) -> None:
        summary = self.instance._summary  # noqa: SLF001 - the writer of its own class
        extra = {"hasSummary": summary is not None}
        io = _metadata_io(self.sparkSession)
        if self._replace:
            # What saveMetadata writes, without its refusal of an existing file.
            metadata = DefaultParamsWriter._get_metadata_to_save(  # noqa: SLF001 - as saveMetadata
                self.instance, io, extraMetadata=extra)
            self._write_line(metadata, os.path.join(path, "metadata"))
        else:
            DefaultParamsWriter.saveMetadata(self.instance, path, io, extraMetadata=extra)
        if summary is not None:
            self._write_line(summary.to_json(), f"{path.rstrip('/')}/{SUMMARY_DIR}")

    def _write_line(self, line: str, directory: str) -> None:
        """*line* as a text file in *directory*, written by the DataFrame API (Spark Connect has
        no RDDs), replacing what is there after ``overwrite()``."""
        writer = self.sparkSession.createDataFrame([(line,)], "value string").coalesce(1).write
        (writer.mode("overwrite") if self._replace else writer).text(directory)


class TFModelReader(MLReader["TFModel"]):
    """Loads what :class:`TFModelWriter` saved (also a ``TFModel`` saved with params only)."""

    def __init__(self, cls: type[TFModel]) -> None:
        super().__init__()
        self.cls = cls

    def load(self, path: str) -> TFModel:
        metadata = DefaultParamsReader.loadMetadata(path, _metadata_io(self.sparkSession))
        model = self.cls()
        model._resetUid(metadata["uid"])  # noqa: SLF001 - as DefaultParamsReader does
        DefaultParamsReader.getAndSetParams(model, metadata)
        if metadata.get("hasSummary"):
            lines = self.sparkSession.read.text(f"{path.rstrip('/')}/{SUMMARY_DIR}").collect()
            model.setSummary(TFTrainingSummary.from_json("".join(r.value for r in lines)))
        return model


def _metadata_io(spark: Any) -> Any:
    """What Spark ML's metadata helpers take: the SparkContext of a classic session (pyspark 3.5
    takes no session there), the session itself over Spark Connect (which has no context) on
    pyspark 4, and over Spark Connect on pyspark 3.5 a :class:`_ConnectMetadataIO` of it."""
    if not is_connect(spark):
        return spark.sparkContext
    return spark if int(pyspark.__version__.split(".", 1)[0]) >= 4 else _ConnectMetadataIO(spark)


class _ConnectMetadataIO:
    """What pyspark 3.5's ``DefaultParamsWriter.saveMetadata`` and
    ``DefaultParamsReader.loadMetadata`` use of a SparkContext (``version``, a one-line text
    file written by ``parallelize([line], 1).saveAsTextFile(path)`` and read by
    ``textFile(path, 1).first()``), done with a Spark Connect session's DataFrame API: the same
    files as a classic session writes."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self._lines: list[str] = []
        self.version = spark.version

    def parallelize(self, lines: list[str], _slices: int = 1) -> _ConnectMetadataIO:
        self._lines = list(lines)
        return self

    def saveAsTextFile(self, path: str) -> None:
        self._spark.createDataFrame([(line,) for line in self._lines], "value string") \
            .coalesce(1).write.text(path)

    def textFile(self, path: str, _partitions: int = 1) -> _ConnectMetadataIO:
        self._lines = [row.value for row in self._spark.read.text(path).collect()]
        return self

    def first(self) -> str:
        return self._lines[0]
