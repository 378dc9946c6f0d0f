"""The site's griffe extension turns the docstrings' Sphinx markup into Markdown."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "griffe_sphinx_markup", ROOT / "docs" / "extensions" / "griffe_sphinx_markup.py"
)
markup = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(markup)


def test_a_role_becomes_code_and_a_tilde_keeps_the_last_name():
    text = "see :func:`tfrecord_io.spark.save_dataframe` and :data:`~tfrecord_io.feed.BATCH_BYTES`"
    assert markup.to_markdown(text) == "see `tfrecord_io.spark.save_dataframe` and `BATCH_BYTES`"


def test_a_role_with_an_explicit_title_shows_the_title():
    text = ":class:`the cluster <tfrecord_io.cluster.Cluster>`"
    assert markup.to_markdown(text) == "`the cluster`"


def test_double_backticks_become_single():
    assert markup.to_markdown('``input_mode="spark"``') == '`input_mode="spark"`'


def test_a_literal_block_marker_ends_its_paragraph_with_a_colon():
    text = "For example::\n\n    x = 1\n\nOr:\n\n::\n\n    y = 2\n"
    assert markup.to_markdown(text) == "For example:\n\n    x = 1\n\nOr:\n\n\n\n    y = 2\n"
