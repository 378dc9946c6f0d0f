"""Where the tests' real data lives, for ``conftest.py`` and the tests alike (a test module
cannot import ``conftest``: several conftest modules share that name)."""

from __future__ import annotations

from pathlib import Path

#: The real MNIST test set (IDX files; see its README.md), beside the project.
MNIST = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
#: How many MNIST test images the PNG tree fixture ``mnist_png_tree`` holds (a prefix of the
#: set: enough for every class to have about 100, quick to write and convert).
MNIST_PNG_LIMIT = 1000
