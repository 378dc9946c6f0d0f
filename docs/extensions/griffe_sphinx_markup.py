"""A griffe extension for the documentation site (mkdocs.yml): the docstrings' Sphinx markup as
Markdown, so the API reference reads as the docstrings do in an editor.

* roles: ``:func:`~tfrecord_io.spark.save_dataframe``` -> `` `save_dataframe` `` (``~`` keeps
  the last name, as Sphinx shows it), ``:mod:`tfrecord_io.records``` -> `` `tfrecord_io.records` ``;
* literal blocks: a paragraph ending in ``::`` ends in ``:`` (a lone ``::`` goes); the indented
  block after it is a Markdown code block already;
* inline literals: ````x```` -> `` `x` ``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`<]+?)(?:\s*<[^>]+>)?`")
_LONE_LITERAL = re.compile(r"^[ \t]*::[ \t]*$", re.MULTILINE)
_LITERAL_END = re.compile(r"(\S)::[ \t]*$", re.MULTILINE)
_DOUBLE_BACKTICKS = re.compile(r"``([^`]+)``")


def to_markdown(text: str) -> str:
    """*text* (a docstring) with Sphinx roles, ``::`` and double backticks made Markdown."""

    def role(match: re.Match[str]) -> str:
        target = match.group(2).strip()
        return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"

    text = _DOUBLE_BACKTICKS.sub(r"`\1`", text)
    text = _ROLE.sub(role, text)
    text = _LONE_LITERAL.sub("", text)
    return _LITERAL_END.sub(r"\1:", text)


class SphinxMarkup(griffe.Extension):
    """Rewrites every docstring griffe loads (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
