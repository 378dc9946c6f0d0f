"""A trained model ready for batch inference: :class:`ServingModel`, loaded once per process.

Two kinds of model are understood, told apart by what is at the location:

* a **SavedModel** directory (it holds ``saved_model.pb``), as ``tf.saved_model.save``,
  Keras 3's ``model.export`` and tf-keras's ``model.save(dir)`` write it: one of its
  signatures (``serving_default`` unless told otherwise) is called, with its named inputs and
  outputs (Keras exports name outputs ``output_0``, ...; tf-keras names them after the last
  layer, e.g. ``dense_1``);
* a **Keras file** (``.keras``, ``.h5``, ``.hdf5``), loaded with Keras 3
  (``keras.saving.load_model(..., compile=False)``): inputs are named after the model's
  ``Input`` layers, outputs after the keys of a dict output, else after the layers that
  produce them. Keras 3 may give several outputs one name (the three outputs of
  ``LSTM(..., return_state=True, name="lstm")``, the two outputs of a layer called twice): they
  are told apart in order, as Keras numbers layers, the first keeping the name and the next
  ``lstm_1``, ``lstm_2``, ... (a number that another output's name already has is passed over).

The location is a local path or any URL of :mod:`tfrecord_io.fs`. SavedModels on ``hdfs://``,
``webhdfs://`` and ``s3://`` are read by TensorFlow itself through tfrecord-io's file system plugin
(:func:`tfrecord_io.tf.register_filesystems`); Keras files on remote file systems are copied to
a local temporary file first (Keras reads them as zip archives). A relative local path is
relative to this process's working directory: :func:`absolute` makes it absolute, so that
other processes (Spark's executors, which run in working directories of their own) find it too.

:func:`cached` keeps each loaded model for the life of the process (keyed by location,
signature and the :func:`fingerprint` of its files), which is what makes a Spark Python worker
(reused across tasks with ``spark.python.worker.reuse``, Spark's default) load a model once; when
a new version of a location is loaded, the older ones of that location are let go.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecord_io import fs
from tfrecord_io.errors import ModelError

__all__ = [
    "DEFAULT_SIGNATURE",
    "KERAS_SUFFIXES",
    "TensorInfo",
    "ServingModel",
    "load",
    "cached",
    "absolute",
    "fingerprint",
    "load_counts",
]

#: The signature of a SavedModel that is called unless another is named.
DEFAULT_SIGNATURE = "serving_default"
#: File names ending so are Keras models.
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")

_lock = threading.Lock()
_cache: dict[tuple[str, str, str], ServingModel] = {}
_loads: dict[str, int] = {}


@dataclass(frozen=True)
class TensorInfo:
    """One named input or output of a model.

    Attributes:
        name: the name the model gives it.
        dtype: TensorFlow's name of its type (``"float32"``, ``"int64"``, ``"string"``, ...).
        shape: its shape, batch dimension first; ``None`` for an unknown size, and ``None``
            instead of a tuple when even the rank is unknown.
    """

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None


class ServingModel:
    """A model loaded for inference. Make one with :func:`load` or :func:`cached`.

    Attributes:
        location: where it was loaded from.
        kind: ``"saved_model"`` or ``"keras"``.
        signature: the SavedModel signature called (None for Keras files).
        inputs: its inputs by name, in the model's order.
        outputs: its outputs by name, in the model's order.
    """

    def __init__(
        self,
        location: str,
        kind: str,
        signature: str | None,
        inputs: dict[str, TensorInfo],
        outputs: dict[str, TensorInfo],
        call: Any,
    ) -> None:
        self.location = location
        self.kind = kind
        self.signature = signature
        self.inputs = inputs
        self.outputs = outputs
        self._call = call

    def predict(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Runs the model on one batch.

        Args:
            inputs: an array for each of :attr:`inputs` (batch dimension first), of its type
                and shape.

        Returns:
            An array for each of :attr:`outputs`, batch dimension first.

        Raises:
            ModelError: an input is missing or unknown, or TensorFlow rejects the batch.
        """
        missing = [name for name in self.inputs if name not in inputs]
        unknown = [name for name in inputs if name not in self.inputs]
        if missing or unknown:
            raise ModelError(
                f"the model at {self.location} takes the inputs {list(self.inputs)}; "
                f"missing: {missing}, unknown: {unknown}"
            )
        return self._call(inputs)

    def __repr__(self) -> str:
        return (
            f"ServingModel({self.location!r}, {self.kind}, inputs={list(self.inputs)}, "
            f"outputs={list(self.outputs)})"
        )


def absolute(location: str | os.PathLike[str]) -> str:
    """*location* as every process names it: a relative local path made absolute (from this
    process's working directory); absolute paths and URLs as given."""
    location = os.fspath(location)
    if fs.is_local(location) and not os.path.isabs(fs.split_url(location)[1]):
        return os.path.abspath(location)
    return location


def fingerprint(location: str) -> str:
    """A short digest of the names, sizes and modification times of the files at *location*
    (a file or a directory tree): it changes when the model there is replaced.

    Raises:
        ModelError: nothing exists at *location*.
    """
    try:
        info = fs.stat(location)
    except FileNotFoundError as e:
        raise ModelError(f"no model at {location}: {e}") from e
    digest = hashlib.sha1(usedforsecurity=False)
    if info.is_dir:
        for _directory, _dirs, files in fs.walk(location, detail=True):
            for f in files:
                digest.update(f"{f.url[len(location):]}\0{f.size}\0{f.mtime}\n".encode())
    else:
        digest.update(f"{info.size}\0{info.mtime}".encode())
    return digest.hexdigest()[:16]


def load(location: str | os.PathLike[str], signature: str = DEFAULT_SIGNATURE) -> ServingModel:
    """Loads the model at *location* (no caching: see :func:`cached`).

    Raises:
        ModelError: nothing at *location*, neither a SavedModel nor a Keras file there, no such
            signature, or TensorFlow/Keras could not load it (its message is included).
    """
    location = os.fspath(location)
    try:
        info = fs.stat(location)
    except FileNotFoundError as e:
        raise ModelError(f"no model at {location}: {e}") from e
    if info.is_dir:
        names = ("saved_model.pb", "saved_model.pbtxt")
        if not any(fs.exists(fs.join(location, name)) for name in names):
            raise ModelError(
                f"{location} is a directory without saved_model.pb: give a SavedModel directory "
                f"or a Keras file ({', '.join(KERAS_SUFFIXES)})"
            )
        model = _load_saved_model(location, signature)
    elif location.rstrip("/").lower().endswith(KERAS_SUFFIXES):
        model = _load_keras(location)
    else:
        raise ModelError(
            f"{location} is neither a SavedModel directory nor a Keras file "
            f"({', '.join(KERAS_SUFFIXES)})"
        )
    with _lock:
        _loads[location] = _loads.get(location, 0) + 1
    return model


def cached(
    location: str | os.PathLike[str],
    signature: str = DEFAULT_SIGNATURE,
    version: str = "",
    *,
    verify: bool = False,
) -> ServingModel:
    """The model at *location*, loaded on the first call in this process and kept.

    One version of each location is kept: loading a new *version* lets go of the models of
    that location's other versions (every signature), so a model retrained again and again at
    one location does not pile up in memory.

    Args:
        location: as for :func:`load`.
        signature: as for :func:`load`.
        version: part of the cache key; pass :func:`fingerprint` (computed once, by the caller)
            so that a model replaced at the same location is loaded again.
        verify: when the model is not cached yet, check that the files at *location* still
            have the fingerprint *version* (before and after loading them), so that what is
            loaded is the version asked for: :func:`tfrecord_io.ml.predict`'s executors
            take the fingerprint the driver took, and must not score rows with a model that
            replaced it since.

    Raises:
        ModelError: as :func:`load`; with *verify*, the model at *location* is not the
            version *version* any more.
    """
    location = os.fspath(location)
    key = (location, signature, version)
    with _lock:
        model = _cache.get(key)
    if model is None:
        if verify:
            _check_version(location, version)
        model = load(location, signature)
        if verify:
            _check_version(location, version)
        with _lock:
            for old in [k for k in _cache if k[0] == location and k[2] != version]:
                del _cache[old]
            model = _cache.setdefault(key, model)
    return model


def _check_version(location: str, version: str) -> None:
    """Raises ModelError unless the files at *location* have the fingerprint *version*."""
    if fingerprint(location) != version:
        raise ModelError(
            f"the model at {location} changed since predict() was called (its files are not "
            "the ones the driver fingerprinted then): call predict() again to score with the "
            "model now there"
        )


def load_counts() -> dict[str, int]:
    """How many times each location was loaded in this process (a diagnostic)."""
    with _lock:
        return dict(_loads)


def _for_tensorflow(location: str) -> str:
    """A local path for local locations (also ``file://`` URLs), else the URL."""
    return fs.split_url(location)[1] if fs.is_local(location) else location


# -- SavedModel ---------------------------------------------------------------------------------


def _spec_info(name: str, spec: Any) -> TensorInfo:
    shape = spec.shape
    dims = None if shape.rank is None else tuple(shape.as_list())
    return TensorInfo(name, spec.dtype.name, dims)


def _load_saved_model(location: str, signature: str) -> ServingModel:
    from tfrecord_io.tf import register_filesystems  # noqa: PLC0415 - TensorFlow on demand
    from tfrecord_io.tf.plugin import SCHEMES  # noqa: PLC0415 - TensorFlow on demand
    from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415 - TensorFlow on demand

    tf = import_tensorflow()
    if fs.split_url(location)[0] in SCHEMES:
        register_filesystems()
    try:
        loaded = tf.saved_model.load(_for_tensorflow(location))
    except (tf.errors.OpError, ValueError, OSError) as e:
        raise ModelError(f"TensorFlow could not load the SavedModel at {location}: {e}") from e
    signatures = dict(loaded.signatures)
    if signature not in signatures:
        raise ModelError(
            f"the SavedModel at {location} has no signature {signature!r}; it has "
            f"{sorted(signatures)}"
        )
    function = signatures[signature]
    args, kwargs = function.structured_input_signature
    if args:
        raise ModelError(
            f"signature {signature!r} of {location} takes positional inputs; only named "
            "inputs (a signature's usual form) are supported"
        )
    inputs = {name: _spec_info(name, spec) for name, spec in kwargs.items()}
    outputs_struct = function.structured_outputs
    if not isinstance(outputs_struct, Mapping):
        raise ModelError(f"signature {signature!r} of {location} does not name its outputs")
    outputs = {name: _spec_info(name, spec) for name, spec in outputs_struct.items()}

    def call(batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        tensors = {
            name: tf.convert_to_tensor(batch[name], dtype=inputs[name].dtype) for name in inputs
        }
        try:
            result = function(**tensors)
        except (tf.errors.OpError, ValueError, TypeError) as e:
            raise ModelError(f"the model at {location} failed on a batch: {e}") from e
        return {name: result[name].numpy() for name in outputs}

    # The loaded object owns the signature's variables: keep it alive with the function.
    call.loaded = loaded  # type: ignore[attr-defined]
    return ServingModel(location, "saved_model", signature, inputs, outputs, call)


# -- Keras --------------------------------------------------------------------------------------


def _keras_outputs(model: Any) -> tuple[list[str], list[Any]]:
    """The names and symbolic tensors of a Keras model's outputs, in the model's order; names
    made unique as :func:`_unique` does."""
    try:
        struct = model.output
    except (AttributeError, ValueError):
        struct = model.outputs
    if isinstance(struct, Mapping):
        return list(struct), list(struct.values())
    tensors = list(struct) if isinstance(struct, (list, tuple)) else [struct]
    names = list(getattr(model, "output_names", None) or [])
    if len(names) != len(tensors):
        names = [model.layers[-1].name] if len(tensors) == 1 else [
            f"output_{i}" for i in range(len(tensors))
        ]
    return _unique(names), tensors


def _unique(names: list[str]) -> list[str]:
    """*names* in order, each repeat of a name numbered as Keras numbers layers: ``["lstm",
    "lstm", "lstm"]`` -> ``["lstm", "lstm_1", "lstm_2"]`` (Keras 3 gives the outputs of one
    layer, or of a layer called twice, one name). A number that names another output already
    is passed over: ``["a", "a", "a_1"]`` -> ``["a", "a_2", "a_1"]``."""
    given = set(names)
    taken: set[str] = set()
    unique = []
    for name in names:
        new, k = name, 0
        while new in taken or (new != name and new in given):
            k += 1
            new = f"{name}_{k}"
        taken.add(new)
        unique.append(new)
    return unique


def _keras_info(name: str, tensor: Any) -> TensorInfo:
    shape = getattr(tensor, "shape", None)
    dims = None if shape is None else tuple(None if d is None else int(d) for d in shape)
    return TensorInfo(name, str(tensor.dtype), dims)


def _load_keras(location: str) -> ServingModel:
    from tfrecord_io.tf.runtime import import_keras  # noqa: PLC0415 - TensorFlow on demand

    keras = import_keras()

    try:
        if fs.is_local(location):
            model = keras.saving.load_model(_for_tensorflow(location), compile=False)
        else:
            suffix = "." + location.rstrip("/").rsplit(".", 1)[-1]
            with tempfile.TemporaryDirectory(prefix="tfrecord-io-model-") as scratch:
                local = os.path.join(scratch, "model" + suffix)
                with fs.open(location, "rb") as src, open(local, "wb") as dst:
                    while chunk := src.read(1 << 22):
                        dst.write(chunk)
                model = keras.saving.load_model(local, compile=False)
    except (ValueError, OSError, TypeError, zipfile.BadZipFile) as e:
        raise ModelError(f"Keras could not load the model at {location}: {e}") from e
    inputs = {t.name: _keras_info(t.name, t) for t in model.inputs}
    names, tensors = _keras_outputs(model)
    outputs = {name: _keras_info(name, t) for name, t in zip(names, tensors, strict=True)}
    input_names = list(inputs)

    def call(batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x: Any = batch[input_names[0]] if len(input_names) == 1 else dict(batch)
        try:
            result = model.predict_on_batch(x)
        except (ValueError, TypeError) as e:
            raise ModelError(f"the model at {location} failed on a batch: {e}") from e
        if isinstance(result, Mapping):
            return {name: np.asarray(result[name]) for name in names}
        if not isinstance(result, (list, tuple)):
            result = [result]
        return {name: np.asarray(value) for name, value in zip(names, result, strict=True)}

    return ServingModel(location, "keras", None, inputs, outputs, call)
