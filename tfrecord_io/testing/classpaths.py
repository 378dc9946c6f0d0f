"""The JVM classpaths that the project's setup resolves for the tests (``make setup``: sbt
writes ``.tools/<name>.classpath``, one ``:``-separated line), or that an environment variable
gives instead."""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["TOOLS", "find_hadoop_connector", "find_jars"]

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


def find_hadoop_connector(env: str, tools_file: str, artifact: str) -> str | None:
    """The ``:``-separated classpath of one of Hadoop's connectors (:func:`find_jars`), for
    ``spark.driver.extraClassPath`` and ``spark.executor.extraClassPath``; None when there is
    none, or when its jar *artifact* (``hadoop-aws``, ``hadoop-azure``) is not of the Hadoop
    that the installed pyspark bundles (pyspark 3.5 bundles Hadoop 3.3.4, the setup fetches
    the connectors of 4.x's)."""
    from tfrecord_io.spark.object_stores import hadoop_version  # noqa: PLC0415 - pyspark's

    jars = find_jars(env, tools_file)
    if jars is None:
        return None
    pattern = re.compile(rf"{re.escape(artifact)}-(\d+\.\d+\.\d+)\.jar$")
    versions = {m.group(1) for m in map(pattern.search, jars) if m}
    if versions != {hadoop_version()}:
        return None
    return os.pathsep.join(jars)
