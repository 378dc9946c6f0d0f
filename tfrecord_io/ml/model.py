"""A trained TensorFlow model as a Spark ML ``Model``: :class:`TFModel`."""

from __future__ import annotations

from typing import Any

from pyspark import keyword_only
from pyspark.ml import Model
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from tfrecord_io.ml.inference import predict
from tfrecord_io.ml.params import InferenceParams

__all__ = ["TFModel"]


class TFModel(Model, InferenceParams, DefaultParamsReadable, DefaultParamsWritable):
    """A SavedModel or Keras model as a Spark ML ``Model``: :meth:`transform` is
    :func:`tfrecord_io.ml.predict` with this model's params.

    ::

        model = TFModel(modelDir="hdfs://nn:8020/models/mnist",
                        inputMapping={"image": "image"}, outputMapping={"dense_1": "scores"})
        scored = model.transform(df)                      # df's columns + "scores"
        pipeline = Pipeline(stages=[assembler, model])    # a stage like any other

    :meth:`TFEstimator.fit <tfrecord_io.ml.TFEstimator.fit>` returns one; one can also be made
    for any model already saved.

    Persistence: ``model.write().save(path)`` / ``TFModel.load(path)`` (and a
    ``PipelineModel`` holding it) store the params only, as Spark ML's default params writer
    does: **the model itself is not copied**. ``modelDir`` must still hold it when the loaded
    ``TFModel`` is used.

    Params: ``modelDir`` (required), ``inputMapping``, ``outputMapping``, ``batchSize`` (256),
    ``signature`` (``"serving_default"``): see :func:`tfrecord_io.ml.predict`.
    """

    modelDir: Param[str] = Param(
        Params._dummy(), "modelDir",
        "the model: a SavedModel directory or a Keras file, local or hdfs://",
        typeConverter=TypeConverters.toString,
    )

    @keyword_only
    def __init__(
        self,
        *,
        modelDir: str | None = None,  # noqa: N803 - Spark ML's style
        inputMapping: dict[str, str] | None = None,  # noqa: N803
        outputMapping: dict[str, str] | None = None,  # noqa: N803
        batchSize: int | None = None,  # noqa: N803
        signature: str | None = None,
    ) -> None:
        super().__init__()
        self._set(**{k: v for k, v in self._input_kwargs.items() if v is not None})

    def getModelDir(self) -> str:  # noqa: N802 - Spark ML's style
        """The value of :attr:`modelDir`."""
        return self.getOrDefault(self.modelDir)

    def setModelDir(self, value: str) -> TFModel:  # noqa: N802
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
