"""TensorFlow and Keras, imported on first use only: the rest of tfrecord-io never imports them
(the import contracts in pyproject.toml check it)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Mapping
from typing import Any

from tfrecord_io.extras import require

__all__ = [
    "import_tensorflow",
    "import_keras",
    "wants_legacy_keras",
    "preload_keras",
    "keras_available",
    "point_keras_imports",
    "tensorflow_running",
]

#: The Keras packages, by whether ``TF_USE_LEGACY_KERAS`` asks for the legacy one, and the
#: package ``tensorflow.keras`` is imported from with each (as TensorFlow's ``__init__`` sets it).
_KERAS = {False: ("keras", "keras.api._v2.keras"), True: ("tf_keras", "tf_keras.api._v2.keras")}


def import_tensorflow() -> Any:
    """The ``tensorflow`` module, imported now (with TensorFlow's C++ INFO logs silenced).

    Raises:
        MissingDependencyError: TensorFlow is not installed (``pip install
            'tfrecord-io[tensorflow]'``).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return require("tensorflow", "tfrecord_io.tf")


def import_keras() -> Any:
    """The ``keras`` module, imported now, after TensorFlow (whose logging is then set up)."""
    import_tensorflow()
    import keras  # noqa: PLC0415 - after TensorFlow's import

    return keras


def wants_legacy_keras(environ: Mapping[str, str]) -> bool:
    """Whether *environ* asks TensorFlow for tf-keras (``TF_USE_LEGACY_KERAS``, with the values
    TensorFlow itself takes)."""
    return environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1")


def preload_keras() -> None:
    """Imports both Keras packages that are installed (``keras``, ``tf_keras``), their
    optimizers registered as TensorFlow's import registers its own, without binding ``tf.keras``
    to either: a process forked afterwards can still choose (:func:`point_keras_imports`)."""
    import_tensorflow()
    for package, _ in _KERAS.values():
        try:
            importlib.import_module(f"{package}.src.optimizers")
        except ImportError:
            pass


def keras_available(legacy: bool) -> bool:
    """Whether a process forked from this one can still have the Keras *legacy* names: it is
    imported and ``tf.keras`` is unbound, or ``tf.keras`` is bound to it already."""
    tf = sys.modules["tensorflow"]
    if "tensorflow.keras" in sys.modules or getattr(tf.keras, "_tfll_initialized", True):
        return legacy == wants_legacy_keras(os.environ)
    return _KERAS[legacy][0] in sys.modules


def tensorflow_running() -> bool:
    """Whether TensorFlow has run anything in this process: its eager context exists, and with
    it the runtime's thread pools. A process forked from such a one lacks those threads, and its
    first TensorFlow op can wait for them forever; TensorFlow merely imported is safe to fork."""
    context = sys.modules.get("tensorflow.python.eager.context")  # loaded with TensorFlow
    if context is None:
        return False
    current = context.context_safe()
    return current is not None and current._context_handle is not None  # noqa: SLF001 - no public API tells it


def point_keras_imports(legacy: bool) -> None:
    """Makes ``import tensorflow.keras`` find the Keras package *legacy* names, as TensorFlow's
    import does from ``TF_USE_LEGACY_KERAS``. ``tf.keras`` itself reads the variable when first
    used, so the variable must say the same."""
    tf = sys.modules["tensorflow"]
    directories = {flavour: _parent_directory(package) for flavour, (_, package) in _KERAS.items()}
    wanted = directories[legacy]
    if wanted is not None:
        tf.__path__[:] = [wanted, *(p for p in tf.__path__ if p not in directories.values())]


def _parent_directory(name: str) -> str | None:
    """The directory holding the last part of the dotted *name*, found from its top-level
    package without importing anything (what TensorFlow's ``module_util`` computes)."""
    top, *parts = name.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(spec.submodule_search_locations[0], *parts[:-1])
