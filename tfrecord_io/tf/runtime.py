"""TensorFlow, imported on first use only: the rest of tfrecord-io never imports it."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["import_tensorflow"]


def import_tensorflow() -> Any:
    """The ``tensorflow`` module, imported now (with TensorFlow's C++ INFO logs silenced)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # noqa: PLC0415 - TensorFlow is imported only when needed

    return tf
