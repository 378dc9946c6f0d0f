"""The optional dependencies, each with the extra of ``tfrecord-io`` that installs it.

The core package needs none of them. A feature that needs one imports it through
:func:`require`, which turns its absence into a
:class:`~tfrecord_io.errors.MissingDependencyError` that says what to install
(``pip install 'tfrecord-io[spark]'``) instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from tfrecord_io.errors import MissingDependencyError

__all__ = ["EXTRAS", "require"]

#: The top-level module of each optional dependency, and the extra (setup.py,
#: pyproject.toml) that installs it.
EXTRAS = {
    "pyspark": "spark",
    "tensorflow": "tensorflow",
    "tf_keras": "keras-legacy",
    "tensorboard": "tensorboard",
    "PIL": "images",
}


def require(module: str, feature: str | None = None) -> ModuleType:
    """Import *module* (``"pyspark"``, ``"pyspark.sql"``, ``"tensorflow"``...) and return it.

    Args:
        module: a module of one of the optional dependencies in :data:`EXTRAS`.
        feature: what needs it, for the message (``"tfrecord_io.spark"``).

    Raises:
        MissingDependencyError: the dependency is not installed; names the extra to install.
        ValueError: *module* is not part of an optional dependency.
    """
    top = module.partition(".")[0]
    if top not in EXTRAS:
        raise ValueError(
            f"{module!r} is not an optional dependency of tfrecord-io: {sorted(EXTRAS)}"
        )
    try:
        importlib.import_module(top)
    except ModuleNotFoundError as exc:
        if exc.name == top:
            raise MissingDependencyError(top, EXTRAS[top], feature) from exc
        raise  # something the dependency itself imports is missing: its own error says what
    return importlib.import_module(module)
