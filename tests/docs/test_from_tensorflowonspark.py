"""``docs/from-tensorflowonspark.md``: its Python snippets are valid Python, the tfrecord-io ones
name only what the package has, and the programs it points to exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "from-tensorflowonspark.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)


def test_the_page_has_a_snippet_for_each_tensorflowonspark_call():
    text = PAGE.read_text()
    for heading in ("## TFCluster.run", "## InputMode.SPARK and TFNode.DataFeed -> ctx.feed",
                    "## TFCluster.inference -> ml.predict", "## shutdown",
                    "## tensorboard_url", "## TFEstimator and TFModel"):
        assert heading in text
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_each_python_snippet_compiles(index):
    compile(BLOCKS[index], f"{PAGE.name} block {index}", "exec")


def test_the_tfrecord_io_names_the_snippets_use_exist():
    from tfrecord_io import cluster, ml

    used = set()
    for block in BLOCKS:
        if "tensorflowonspark" in block:
            continue
        for node in ast.walk(ast.parse(block)):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in ("cluster", "ml")):
                used.add((node.value.id, node.attr))
    assert used  # the snippets do use the package
    modules = {"cluster": cluster, "ml": ml}
    missing = [f"{module}.{name}" for module, name in sorted(used)
               if not hasattr(modules[module], name)]
    assert missing == []


def test_the_programs_it_points_to_exist():
    named = set(re.findall(r"`(python/[\w/]+\.py)`", PAGE.read_text()))
    assert named
    assert [p for p in sorted(named) if not (ROOT / p).is_file()] == []
