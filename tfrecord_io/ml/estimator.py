"""Training a TensorFlow model on the Spark cluster as a Spark ML ``Estimator``:
:class:`TFEstimator`."""

from __future__ import annotations

import logging
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from pyspark import StorageLevel
from pyspark.ml import Estimator
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.sql import functions as F

from tfrecord_io import cluster, fs
from tfrecord_io.cluster import INPUT_MODES, KERAS, MODES
from tfrecord_io.errors import ModelError
from tfrecord_io.example.spec import sql_identifier
from tfrecord_io.ml.loading import absolute
from tfrecord_io.ml.model import TFModel, TFTrainingSummary
from tfrecord_io.ml.params import (
    InferenceParams,
    to_mapping,
    to_non_negative_int,
    to_positive_float,
    to_positive_int,
)
from tfrecord_io.spark import save_dataframe

__all__ = ["TFEstimator", "RESERVED_ARGS", "TRAIN_FEED", "VALIDATION_FEED"]

log = logging.getLogger(__name__)

#: The feed of the training rows, and of the validation rows (``validationIndicatorCol``).
TRAIN_FEED = "train"
VALIDATION_FEED = "validation"
#: Keys that :meth:`TFEstimator.fit` adds to ``train_fn``'s args (so not hyper-parameters).
RESERVED_ARGS = ("export_dir", "epochs", "batch_size", "feeds", "columns", "data_dirs")



def _left(deadline: float | None) -> float | None:
    """Seconds until *deadline* (a ``time.monotonic()``), at least 0; None for no deadline."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _location(value: Any) -> str:
    """The type converter of :attr:`TFEstimator.exportDir`: a string, a relative local path made
    absolute (:func:`tfrecord_io.ml.loading.absolute`), since the chief saves the model from a
    working directory of its own on an executor, and the driver looks for it there after."""
    text = TypeConverters.toString(value)
    if not text.strip():
        raise ValueError(f"exportDir must be a directory's path or URL, not {value!r}")
    return absolute(text)


def _discard(directory: str) -> None:
    """Deletes *directory*, the export directory of a failed fit, if it exists; a failure to
    delete it is logged, not raised (the fit's own error is the one to see)."""
    try:
        if fs.exists(directory):
            fs.delete(directory, recursive=True)
    except OSError as e:
        log.warning("could not delete %s, the export directory of a failed fit: %s",
                    directory, e)


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        text = TypeConverters.toString(value)
        if text not in choices:
            raise ValueError(f"expected one of {choices}, not {value!r}")
        return text

    return convert


class TFEstimator(Estimator, InferenceParams):
    """A Spark ML ``Estimator`` that trains a TensorFlow model on a cluster started on the
    executors (:func:`tfrecord_io.cluster.run` with ``input_mode="spark"``), fed from the
    DataFrame given to :meth:`fit`; the result is a :class:`~tfrecord_io.ml.TFModel` of the
    model that ``train_fn`` exported.

    ::

        def train_fn(args, ctx):                          # on every worker, like main_fun
            strategy = ctx.strategy()
            data = ctx.feed("train", features=spec, batch_size=args["batch_size"])
            ...                                           # args["learning_rate"], ...
            model.fit(data, epochs=args["epochs"])        # one fed epoch per dataset pass
            if ctx.is_chief:
                model.save(args["export_dir"])            # a SavedModel (or export())

        estimator = TFEstimator(train_fn, {"learning_rate": 0.01}, numWorkers=2, epochs=3,
                                outputMapping={"dense_1": "scores"})
        grid = ParamGridBuilder().addGrid(estimator.getParam("learning_rate"), [0.01, 0.1])

    **Hyper-parameters.** Each key of *args* becomes a param of this estimator (its value the
    default), so ``ParamGridBuilder``, ``CrossValidator`` and ``fit(df, {param: value})`` can
    vary it: ``estimator.getParam("learning_rate")``, ``estimator.set(param, value)``.

    **What train_fn gets.** ``train_fn(args, ctx)`` runs on each node as ``main_fun`` does
    (:class:`~tfrecord_io.cluster.NodeContext`); *args* is a dict of the hyper-parameters'
    values for this fit plus: ``export_dir`` (where the chief must save the model:
    a SavedModel directory, e.g. tf-keras ``model.save(dir)``, Keras 3 ``model.export(dir)``
    or ``tf.saved_model.save``), ``epochs``, ``batch_size``, ``feeds`` (the feed names:
    ``"train"``, and ``"validation"`` with ``validationIndicatorCol``) and ``columns`` (the
    fed columns). The rows are Examples with one feature per column (the codec of
    :func:`tfrecord_io.spark.save_dataframe`): read them with ``ctx.feed("train",
    features=spec)``. ``epochs`` epochs of ``"train"`` are fed, and ``validationEpochs`` of
    ``"validation"`` (in turns, so ``model.fit(..., validation_data=...)`` works with
    ``validationEpochs = epochs``); ``train_fn`` must read every fed epoch, or stop reading
    with ``ctx.stop_feed``.

    **Files instead of the feed.** With ``inputMode="tensorflow"``, each feed's rows are first
    written as TFRecord files of Examples (the same codec), one directory per feed in
    ``args["data_dirs"]`` (``{"train": ..., "validation": ...}``, under ``exportDir``, so
    on ``hdfs://`` on a real cluster), and ``train_fn`` reads them itself, e.g.
    ``ctx.dataset(args["data_dirs"]["train"])`` (each worker its exactly-once share), as many
    epochs as it wants; the files are deleted after the fit. With the feed
    (``inputMode="spark"``, the default) ``args["data_dirs"]`` is empty.

    **Attempts.** With ``maxAttempts`` > 1 a failed node restarts the whole cluster (as
    ``cluster.run(max_attempts=...)``) and every feed is fed again from its first epoch;
    ``train_fn`` resumes from its checkpoints in ``ctx.checkpoint_dir`` (under ``logDir``) or
    starts over. The training summary counts the attempts.

    **Each fit** writes under a directory of its own, ``EXPORT_DIR/<uid>-<random>``
    (``exportDir``, by default the driver's temporary directory, valid only when every
    executor shares the driver's disk: use ``hdfs://`` on a real cluster; a relative local
    path is made absolute, from the driver's working directory, when set), so that the fits
    of a grid search never overwrite each other's model; with ``logDir``, the cluster's
    log directory (checkpoints, TensorBoard) is ``LOG_DIR/<same name>``. An uncached
    DataFrame is cached for the fit (it is read once to count and once per epoch) and
    released after. A fit that fails (``train_fn`` raises, a node is lost past ``maxAttempts``,
    ``timeout``) deletes its export directory, with whatever the chief saved there, since no
    model refers to it; its log directory (checkpoints) is kept.

    **Persistence.** None: ``train_fn`` is code, which Spark ML's writers cannot store. The
    fitted :class:`~tfrecord_io.ml.TFModel` can be saved (params and training summary).

    **Training summary.** The fitted model's ``summary`` holds what the nodes reported
    (``ctx.report(step, loss=...)``, ``ctx.keras_callback()``), the attempts and the time:
    :class:`~tfrecord_io.ml.model.TFTrainingSummary`.

    **Parameter servers.** ``mode="ps"`` with ``numPs`` >= 1: ``train_fn`` runs on the chief
    (the coordinator, ``ParameterServerStrategy`` with a ``ClusterCoordinator``), which is the
    node fed; the ps and ``numWorkers`` workers serve. It needs ``1 + numPs + numWorkers``
    Spark task slots.

    Params: ``exportDir``, ``logDir``, ``numWorkers`` (2), ``numPs`` (0), ``epochs`` (1),
    ``mode`` (``"sync"``/``"ps"``), ``keras`` (``"default"``/``"legacy"``, see
    ``cluster.run``), ``featureCols`` (default: all but the indicator),
    ``validationIndicatorCol``, ``validationEpochs`` (1), ``timeout``
    (seconds for the whole fit, unset: no limit), ``tensorboard`` (False; needs ``logDir``),
    ``maxAttempts`` (1), ``inputMode`` (``"spark"``/``"tensorflow"``), ``env`` (``{}``), and
    the inference params handed to the model: ``inputMapping``, ``outputMapping``,
    ``batchSize`` (also ``args["batch_size"]``), ``signature``. Each has a ``getX`` and a
    ``setX``, as Spark ML's stages do. The DataFrame given to :meth:`fit` is the training
    data either way.
    """

    exportDir: Param[str] = Param(
        Params._dummy(), "exportDir",
        "where each fit's model goes, in a subdirectory of its own (local or a URL: hdfs://, "
        "s3://, gs://, ...); a relative local path is made absolute when set",
        typeConverter=_location,
    )
    logDir: Param[str] = Param(
        Params._dummy(), "logDir",
        "the cluster's log directories (checkpoints, TensorBoard): one subdirectory per fit",
        typeConverter=TypeConverters.toString,
    )
    numWorkers: Param[int] = Param(
        Params._dummy(), "numWorkers", "TensorFlow workers", typeConverter=to_positive_int
    )
    numPs: Param[int] = Param(
        Params._dummy(), "numPs", "parameter servers: at least 1 with mode='ps', 0 with 'sync'",
        typeConverter=to_non_negative_int,
    )
    epochs: Param[int] = Param(
        Params._dummy(), "epochs", "epochs of the training rows fed", typeConverter=to_positive_int
    )
    mode: Param[str] = Param(
        Params._dummy(), "mode", "'sync' (MultiWorkerMirroredStrategy) or 'ps'",
        typeConverter=_one_of(MODES),
    )
    keras: Param[str] = Param(
        Params._dummy(), "keras", "'default' (Keras 3) or 'legacy' (tf-keras, model.fit)",
        typeConverter=_one_of(KERAS),
    )
    featureCols: Param[list[str]] = Param(
        Params._dummy(), "featureCols", "the columns fed (default: all but the indicator)",
        typeConverter=TypeConverters.toListString,
    )
    validationIndicatorCol: Param[str] = Param(
        Params._dummy(), "validationIndicatorCol",
        "a boolean column: true rows go to the 'validation' feed, the others to 'train'",
        typeConverter=TypeConverters.toString,
    )
    validationEpochs: Param[int] = Param(
        Params._dummy(), "validationEpochs", "epochs of the validation rows fed",
        typeConverter=to_positive_int,
    )
    timeout: Param[float] = Param(
        Params._dummy(), "timeout",
        "seconds a fit may take at most (feeding and training); then the cluster is stopped",
        typeConverter=to_positive_float,
    )
    tensorboard: Param[bool] = Param(
        Params._dummy(), "tensorboard",
        "serve the fit's log directory with TensorBoard from the chief's executor (needs logDir)",
        typeConverter=TypeConverters.toBoolean,
    )
    maxAttempts: Param[int] = Param(
        Params._dummy(), "maxAttempts",
        "attempts of the fit's cluster in all: after a failure every node restarts and gets "
        "its data again from the first epoch (train_fn resumes from ctx.checkpoint_dir)",
        typeConverter=to_positive_int,
    )
    inputMode: Param[str] = Param(
        Params._dummy(), "inputMode",
        "'spark': the rows are fed (ctx.feed); 'tensorflow': they are written as TFRecord "
        "files first (args['data_dirs']) that train_fn reads itself (ctx.dataset)",
        typeConverter=_one_of(INPUT_MODES),
    )
    env: Param[dict[str, str]] = Param(
        Params._dummy(), "env",
        "extra environment variables of every node process, set before TensorFlow loads",
        typeConverter=to_mapping,
    )

    def __init__(
        self,
        train_fn: Callable[[dict[str, Any], Any], Any],
        args: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> None:
        """
        Args:
            train_fn: ``train_fn(args, ctx)``, run on the nodes (see the class docstring). It
                must be importable on the executors or defined in ``__main__``.
            args: hyper-parameters, each becoming a param of this estimator.
            **params: values of params, by name (``numWorkers=2``, ``learning_rate=0.1``).

        Raises:
            ValueError: *train_fn* is not callable, an *args* key is not a usable param name
                (not an identifier, starts with ``_``, a reserved key or an existing param),
                or *params* names an unknown param.
        """
        super().__init__()
        if not callable(train_fn):
            raise ValueError(f"train_fn must be callable, not {train_fn!r}")
        self.train_fn = train_fn
        self._setDefault(numWorkers=2, numPs=0, epochs=1, mode="sync", keras="default",
                         validationEpochs=1, tensorboard=False, env={}, maxAttempts=1,
                         inputMode="spark")
        hyper = dict(args or {})
        for name, value in hyper.items():
            if (not isinstance(name, str) or not name.isidentifier() or name.startswith("_")
                    or name in RESERVED_ARGS or hasattr(self, name)):
                raise ValueError(
                    f"args key {name!r} cannot be a hyper-parameter: use an identifier that is "
                    f"not private, not one of {RESERVED_ARGS} and not a param or attribute of "
                    "TFEstimator"
                )
            setattr(self, name, Param(self, name, f"hyper-parameter args[{name!r}] of train_fn"))
            self._setDefault(**{name: value})
        self._params = None  # Params.params lists the new params from now on
        self.hyperparameters: tuple[str, ...] = tuple(hyper)
        unknown = [name for name in params if not self.hasParam(name)]
        if unknown:
            raise ValueError(f"TFEstimator has no params {unknown}")
        self._set(**params)

    # -- getters and setters ------------------------------------------------------------------

    def _get(self, name: str) -> Any:
        param = self.getParam(name)
        return self.getOrDefault(param) if self.isDefined(param) else None

    def getArgs(self) -> dict[str, Any]:
        """The hyper-parameters' current values."""
        return {name: self._get(name) for name in self.hyperparameters}

    def getExportDir(self) -> str | None:
        """The value of :attr:`exportDir`, or None (unset)."""
        return self._get("exportDir")

    def setExportDir(self, value: str) -> TFEstimator:
        """Sets :attr:`exportDir`."""
        return self._set(exportDir=value)

    def getLogDir(self) -> str | None:
        """The value of :attr:`logDir`, or None (unset)."""
        return self._get("logDir")

    def setLogDir(self, value: str) -> TFEstimator:
        """Sets :attr:`logDir`."""
        return self._set(logDir=value)

    def getNumWorkers(self) -> int:
        """The value of :attr:`numWorkers`."""
        return self.getOrDefault(self.numWorkers)

    def setNumWorkers(self, value: int) -> TFEstimator:
        """Sets :attr:`numWorkers`."""
        return self._set(numWorkers=value)

    def getNumPs(self) -> int:
        """The value of :attr:`numPs`."""
        return self.getOrDefault(self.numPs)

    def setNumPs(self, value: int) -> TFEstimator:
        """Sets :attr:`numPs`."""
        return self._set(numPs=value)

    def getEpochs(self) -> int:
        """The value of :attr:`epochs`."""
        return self.getOrDefault(self.epochs)

    def setEpochs(self, value: int) -> TFEstimator:
        """Sets :attr:`epochs`."""
        return self._set(epochs=value)

    def getMode(self) -> str:
        """The value of :attr:`mode`."""
        return self.getOrDefault(self.mode)

    def setMode(self, value: str) -> TFEstimator:
        """Sets :attr:`mode`."""
        return self._set(mode=value)

    def getKeras(self) -> str:
        """The value of :attr:`keras`."""
        return self.getOrDefault(self.keras)

    def setKeras(self, value: str) -> TFEstimator:
        """Sets :attr:`keras`."""
        return self._set(keras=value)

    def getFeatureCols(self) -> list[str] | None:
        """The value of :attr:`featureCols`, or None (unset)."""
        return self._get("featureCols")

    def setFeatureCols(self, value: list[str]) -> TFEstimator:
        """Sets :attr:`featureCols`."""
        return self._set(featureCols=value)

    def getValidationIndicatorCol(self) -> str | None:
        """The value of :attr:`validationIndicatorCol`, or None (unset)."""
        return self._get("validationIndicatorCol")

    def setValidationIndicatorCol(self, value: str) -> TFEstimator:
        """Sets :attr:`validationIndicatorCol`."""
        return self._set(validationIndicatorCol=value)

    def getValidationEpochs(self) -> int:
        """The value of :attr:`validationEpochs`."""
        return self.getOrDefault(self.validationEpochs)

    def setValidationEpochs(self, value: int) -> TFEstimator:
        """Sets :attr:`validationEpochs`."""
        return self._set(validationEpochs=value)

    def getTimeout(self) -> float | None:
        """The value of :attr:`timeout`, or None (unset)."""
        return self._get("timeout")

    def setTimeout(self, value: float) -> TFEstimator:
        """Sets :attr:`timeout`."""
        return self._set(timeout=value)

    def getTensorboard(self) -> bool:
        """The value of :attr:`tensorboard`."""
        return self.getOrDefault(self.tensorboard)

    def setTensorboard(self, value: bool) -> TFEstimator:
        """Sets :attr:`tensorboard`."""
        return self._set(tensorboard=value)

    def getMaxAttempts(self) -> int:
        """The value of :attr:`maxAttempts`."""
        return self.getOrDefault(self.maxAttempts)

    def setMaxAttempts(self, value: int) -> TFEstimator:
        """Sets :attr:`maxAttempts`."""
        return self._set(maxAttempts=value)

    def getInputMode(self) -> str:
        """The value of :attr:`inputMode`."""
        return self.getOrDefault(self.inputMode)

    def setInputMode(self, value: str) -> TFEstimator:
        """Sets :attr:`inputMode`."""
        return self._set(inputMode=value)

    def getEnv(self) -> dict[str, str]:
        """The value of :attr:`env`."""
        return self.getOrDefault(self.env)

    def setEnv(self, value: Mapping[str, str]) -> TFEstimator:
        """Sets :attr:`env`."""
        return self._set(env=value)

    # -- fitting ------------------------------------------------------------------------------

    def _fit(self, dataset: Any) -> TFModel:
        mode, num_ps = self.getMode(), self.getNumPs()
        if mode == "ps" and num_ps < 1:
            raise ValueError("TFEstimator: mode='ps' needs numPs >= 1 parameter server")
        if mode == "sync" and num_ps:
            raise ValueError(f"TFEstimator: numPs={num_ps} needs mode='ps' (sync mode has no "
                             "parameter servers)")
        if self.getTensorboard() and not self.getLogDir():
            raise ValueError("TFEstimator: tensorboard=True needs a logDir to serve")
        indicator = self._get("validationIndicatorCol")
        columns = self._get("featureCols") or [c for c in dataset.columns if c != indicator]
        missing = [c for c in [*columns, *([indicator] if indicator else [])]
                   if c not in dataset.columns]
        if missing:
            raise ValueError(
                f"TFEstimator: the DataFrame has no columns {missing} (it has {dataset.columns})"
            )
        # Columns by quoted name: a dot in a name is part of it, not a path into a struct.
        selected = [F.col(sql_identifier(c)) for c in columns]
        if indicator:
            is_validation = F.coalesce(F.col(sql_identifier(indicator)).cast("boolean"),
                                       F.lit(False))
            feeds = {
                TRAIN_FEED: (dataset.where(~is_validation).select(*selected),
                             self._get("epochs")),
                VALIDATION_FEED: (dataset.where(is_validation).select(*selected),
                                  self._get("validationEpochs")),
            }
        else:
            feeds = {TRAIN_FEED: (dataset.select(*selected), self._get("epochs"))}

        run_name = f"{self.uid}-{uuid.uuid4().hex[:8]}"
        base = self._get("exportDir") or os.path.join(tempfile.gettempdir(), "tfrecord-io-models")
        export_dir = fs.join(base, run_name)
        fed = self.getInputMode() == "spark"
        data_base = fs.join(base, f"{run_name}-data")
        data_dirs = {} if fed else {name: fs.join(data_base, name) for name in feeds}
        log_base = self._get("logDir")
        args = {
            **self.getArgs(),
            "export_dir": export_dir,
            "epochs": self._get("epochs"),
            "batch_size": self.getBatchSize(),
            "feeds": list(feeds),
            "columns": list(columns),
            "data_dirs": data_dirs,
        }
        # Fed, an uncached DataFrame is read once to count and once per epoch: cache it.
        uncached = fed and dataset.storageLevel == StorageLevel.NONE
        cached = [frame for frame, _ in feeds.values()] if uncached else []
        for frame in cached:
            frame.persist()
        log.info("fitting %s: %s, model to %s", self.uid, args, export_dir)
        timeout = self.getTimeout()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            for name, directory in data_dirs.items():
                save_dataframe(feeds[name][0], directory)
            c = cluster.run(
                dataset.sparkSession, self.train_fn, args,
                num_workers=self.getNumWorkers(), num_ps=self.getNumPs(), mode=self.getMode(),
                keras=self.getKeras(), input_mode=self.getInputMode(),
                max_attempts=self.getMaxAttempts(),
                log_dir=fs.join(log_base, run_name) if log_base else None,
                tensorboard=self.getTensorboard(),
                env=self.getEnv(),
            )
            with c:
                if c.tensorboard_url:
                    log.info("%s: TensorBoard at %s", self.uid, c.tensorboard_url)
                try:
                    if fed:
                        feedings = [c.train(frame, num_epochs=epochs, feed=name, block=False)
                                    for name, (frame, epochs) in feeds.items()]
                        for feeding in feedings:
                            feeding.result(timeout=_left(deadline))
                    result = c.wait(timeout=_left(deadline))
                except TimeoutError:
                    raise TimeoutError(
                        f"{self.uid}: the fit did not finish within timeout={timeout} s: its "
                        "cluster was stopped (raise timeout, or train less)"
                    ) from None
        except BaseException:
            # A failed fit returns no model: what its chief saved (maybe half) is no one's.
            _discard(export_dir)
            raise
        finally:
            for frame in cached:
                frame.unpersist()
            if data_dirs and fs.exists(data_base):
                fs.delete(data_base, recursive=True)
        if not fs.exists(export_dir):
            raise ModelError(
                f"train_fn finished but saved no model at {export_dir}: save it there on the "
                "chief (args['export_dir'])"
            )
        model = TFModel(modelDir=export_dir, batchSize=self.getBatchSize(),
                        signature=self.getSignature())
        model.setSummary(TFTrainingSummary.of(result))
        if self.getInputMapping() is not None:
            model.setInputMapping(self.getInputMapping())
        if self.getOutputMapping() is not None:
            model.setOutputMapping(self.getOutputMapping())
        return model

    def __repr__(self) -> str:
        return f"TFEstimator({self.uid}, {getattr(self.train_fn, '__name__', self.train_fn)})"
