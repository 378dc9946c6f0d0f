"""TensorFlow, imported on first use only: the rest of tfrecord-io never imports it."""

from __future__ import annotations

import os
from typing import Any

from tfrecord_io.extras import require

__all__ = ["import_tensorflow"]


def import_tensorflow() -> Any:
    """The ``tensorflow`` module, imported now (with TensorFlow's C++ INFO logs silenced).

    Raises:
        MissingDependencyError: TensorFlow is not installed (``pip install
            'tfrecord-io[tensorflow]'``).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return require("tensorflow", "tfrecord_io.tf")
