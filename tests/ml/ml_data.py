"""Data of the ml tests."""

from __future__ import annotations

import numpy as np


def rows(count: int, seed: int = 0) -> list[tuple[int, list[float]]]:
    """``(id, image)`` rows of 4 random floats each."""
    rng = np.random.default_rng(seed)
    return [(i, [float(v) for v in rng.normal(size=4).astype(np.float32)]) for i in range(count)]
