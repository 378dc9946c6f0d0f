"""Each version stated once, read from where it is stated.

* The package's own version: ``__version__`` in ``tfrecord_io/__init__.py`` (pyproject.toml
  reads it as a dynamic version, build.sbt reads it for the jar, the jar's manifest gets it).
* Hadoop's version: ``val hadoopVersion`` in ``build.sbt`` (what the JVM build compiles and
  tests against; the test HDFS's Maven fallback resolves the same).
"""

from __future__ import annotations

import re
from pathlib import Path

from build_support import BuildError

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["ROOT", "package_version", "hadoop_version"]


def _read(path: Path, pattern: str, what: str) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BuildError(f"tfrecord-io: cannot read {path} for {what}: {exc}") from None
    m = re.search(pattern, text, re.M)
    if not m:
        raise BuildError(f"tfrecord-io: {path} does not state {what}")
    return m.group(1)


def package_version() -> str:
    """tfrecord-io's version, from ``tfrecord_io/__init__.py``."""
    return _read(
        ROOT / "tfrecord_io" / "__init__.py", r'^__version__\s*=\s*"([^"]+)"', "__version__"
    )


def hadoop_version() -> str:
    """The Hadoop version of the build, from ``build.sbt``."""
    return _read(ROOT / "build.sbt", r'^val hadoopVersion\s*=\s*"([^"]+)"', "hadoopVersion")
