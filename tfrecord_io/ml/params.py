"""The Spark ML params shared by :class:`~tfrecord_io.ml.TFEstimator` and
:class:`~tfrecord_io.ml.TFModel`, with their type converters.

Param names follow Spark ML's camelCase (``inputMapping``, ``batchSize``); each has a
``getX`` getter here and a ``setX`` setter on the classes that may change it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.ml.param import Param, Params, TypeConverters

from tfrecord_io.ml.inference import DEFAULT_BATCH_SIZE
from tfrecord_io.ml.loading import DEFAULT_SIGNATURE

__all__ = [
    "to_mapping",
    "to_positive_int",
    "to_non_negative_int",
    "to_positive_float",
    "InferenceParams",
]


def to_mapping(value: Any) -> dict[str, str]:
    """A param value that maps names to names (``{"image": "image"}``)."""
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError(f"expected a dict of str to str, not {value!r}")
    return dict(value)


def to_positive_int(value: Any) -> int:
    """A param value that is an int >= 1."""
    number = TypeConverters.toInt(value)
    if number < 1:
        raise ValueError(f"expected an int >= 1, not {value!r}")
    return number


def to_non_negative_int(value: Any) -> int:
    """A param value that is an int >= 0."""
    number = TypeConverters.toInt(value)
    if number < 0:
        raise ValueError(f"expected an int >= 0, not {value!r}")
    return number


def to_positive_float(value: Any) -> float:
    """A param value that is a number > 0 (seconds, for instance)."""
    number = TypeConverters.toFloat(value)
    if not number > 0:
        raise ValueError(f"expected a number > 0, not {value!r}")
    return number


class InferenceParams(Params):
    """What inference needs: where the model is read from and how columns meet its tensors
    (the arguments of :func:`tfrecord_io.ml.predict`)."""

    inputMapping: Param[dict[str, str]] = Param(
        Params._dummy(), "inputMapping",
        "DataFrame column -> model input name (default: each model input from the column of "
        "its name)", typeConverter=to_mapping,
    )
    outputMapping: Param[dict[str, str]] = Param(
        Params._dummy(), "outputMapping",
        "model output name -> new column name (default: every output, named as in the model)",
        typeConverter=to_mapping,
    )
    batchSize: Param[int] = Param(
        Params._dummy(), "batchSize", "rows per model call in inference",
        typeConverter=to_positive_int,
    )
    signature: Param[str] = Param(
        Params._dummy(), "signature", "the SavedModel signature called in inference",
        typeConverter=TypeConverters.toString,
    )

    def __init__(self) -> None:
        super().__init__()
        self._setDefault(batchSize=DEFAULT_BATCH_SIZE, signature=DEFAULT_SIGNATURE)

    def getInputMapping(self) -> dict[str, str] | None:
        """The value of :attr:`inputMapping`, or None (unset)."""
        return self.getOrDefault(self.inputMapping) if self.isDefined(self.inputMapping) else None

    def getOutputMapping(self) -> dict[str, str] | None:
        """The value of :attr:`outputMapping`, or None (unset)."""
        if self.isDefined(self.outputMapping):
            return self.getOrDefault(self.outputMapping)
        return None

    def getBatchSize(self) -> int:
        """The value of :attr:`batchSize`."""
        return self.getOrDefault(self.batchSize)

    def getSignature(self) -> str:
        """The value of :attr:`signature`."""
        return self.getOrDefault(self.signature)

    def setInputMapping(self, value: Mapping[str, str]) -> Any:
        """Sets :attr:`inputMapping`."""
        return self._set(inputMapping=value)

    def setOutputMapping(self, value: Mapping[str, str]) -> Any:
        """Sets :attr:`outputMapping`."""
        return self._set(outputMapping=value)

    def setBatchSize(self, value: int) -> Any:
        """Sets :attr:`batchSize`."""
        return self._set(batchSize=value)

    def setSignature(self, value: str) -> Any:
        """Sets :attr:`signature`."""
        return self._set(signature=value)
