"""The database tests use the session fixtures ``postgres``, ``images_db`` and ``jdbc`` of
tests/conftest.py (the docs' snippets use them too); here, their node programs."""

from __future__ import annotations

from pyspark import cloudpickle

import image_programs

# Node programs travel by value: executors and node processes do not have tests/ on their path.
cloudpickle.register_pickle_by_value(image_programs)
