"""TensorFlow and Keras, imported on first use only: the rest of tfrecord-io never imports them
(the import contracts in pyproject.toml check it)."""

from __future__ import annotations

import os
from typing import Any

from tfrecord_io.extras import require

__all__ = ["import_tensorflow", "import_keras"]


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
    import keras  # noqa: PLC0415

    return keras
