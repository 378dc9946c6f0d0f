"""The programs of ``python/images`` as modules, shipped by value to the nodes (as
``spark-submit`` ships a script's own functions): the nodes do not have python/images on their
path."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest
from pyspark import cloudpickle

PROGRAMS = Path(__file__).resolve().parents[2] / "python" / "images"
NAMES = ("cnn", "database", "evaluate", "train_shards", "train_database", "grid_search")


@pytest.fixture(scope="session")
def programs():
    """``cnn``, ``database``, ``evaluate``, ``train_shards``, ``train_database``,
    ``grid_search``."""
    sys.path.insert(0, str(PROGRAMS))
    try:
        modules = {name: importlib.import_module(name) for name in NAMES}
        for module in modules.values():
            cloudpickle.register_pickle_by_value(module)
        yield types.SimpleNamespace(**modules)
    finally:
        sys.path.remove(str(PROGRAMS))
