"""The JVM classpaths that the project's setup resolves for the tests (``make setup``: sbt
writes ``.tools/<name>.classpath``, one ``:``-separated line), or that an environment variable
gives instead."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TOOLS", "find_jars"]

#: Where ``make setup`` writes the classpaths: ``.tools/`` at the repository root.
TOOLS = Path(__file__).resolve().parents[2] / ".tools"


def find_jars(env: str, tools_file: str) -> list[str] | None:
    """The jar files of a classpath: from ``$env`` (the classpath itself, or a file holding
    one), else from ``.tools/<tools_file>``; None when neither exists or it names no jar."""
    named = os.environ.get(env)
    if named:
        text = Path(named).read_text() if Path(named).is_file() else named
    elif (TOOLS / tools_file).is_file():
        text = (TOOLS / tools_file).read_text()
    else:
        return None
    jars = [p for p in text.strip().split(os.pathsep) if p.endswith(".jar")]
    return jars or None
