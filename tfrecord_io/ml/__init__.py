"""TensorFlow models in Spark ML: batch inference over DataFrames, and Estimators that train on
the Spark cluster.

::

    from tfrecord_io import ml

    # inference: the model runs in Spark's Python workers, loaded once per process
    scored = ml.predict(df, "hdfs://nn:8020/models/mnist", input_mapping={"image": "image"},
                        output_mapping={"dense_1": "scores"}, batch_size=256)

    # training: a TensorFlow cluster on the executors, fed from the DataFrame
    estimator = ml.TFEstimator(train_fn, {"learning_rate": 0.01}, numWorkers=2, epochs=3,
                               exportDir="hdfs://nn:8020/models",
                               outputMapping={"dense_1": "scores"})
    model = estimator.fit(train_df)          # an ml.TFModel
    scored = model.transform(test_df)        # ml.predict with the model's settings
    model.summary.history("loss")            # what the nodes reported (ctx.keras_callback())

Modules: :mod:`~tfrecord_io.ml.inference` (:func:`predict`), :mod:`~tfrecord_io.ml.loading`
(loading SavedModels and Keras files, the per-process cache), :mod:`~tfrecord_io.ml.tensors`
(columns <-> tensors, the output column types), :mod:`~tfrecord_io.ml.params` (the shared Spark
ML params), :mod:`~tfrecord_io.ml.estimator` (:class:`TFEstimator`) and
:mod:`~tfrecord_io.ml.model` (:class:`TFModel`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tfrecord_io.ml.inference import predict

if TYPE_CHECKING:
    from tfrecord_io.ml.estimator import TFEstimator
    from tfrecord_io.ml.model import TFModel, TFTrainingSummary

__all__ = ["predict", "TFEstimator", "TFModel", "TFTrainingSummary"]

_HOMES = {
    "TFEstimator": "tfrecord_io.ml.estimator",
    "TFModel": "tfrecord_io.ml.model",
    "TFTrainingSummary": "tfrecord_io.ml.model",
}


def __getattr__(name: str) -> Any:
    # Lazy: pyspark.ml loads only when used (TensorFlow only when a model is loaded).
    if name in _HOMES:
        import importlib  # noqa: PLC0415 - keeps the module's names its API

        from tfrecord_io.extras import require  # noqa: PLC0415 - keeps the module's names its API

        require("pyspark.ml", f"tfrecord_io.ml.{name}")
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
