"""The JVM classpath of the test YARN: ``$TFRECORD_IO_MINIYARN_CLASSPATH`` (a classpath, or a file
holding one), else ``.tools/miniyarn.classpath`` at the repository root, which ``make setup``
(``bin/sbt miniyarn/exportClasspath``) writes, with the compiled MiniYarn class on it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CLASSPATH_ENV", "MAIN_CLASS", "find_classpath"]

CLASSPATH_ENV = "TFRECORD_IO_MINIYARN_CLASSPATH"
MAIN_CLASS = "org.tfrecordio.miniyarn.MiniYarn"
# tfrecord_io/testing/miniyarn/classpath.py -> the repository root (a source checkout's).
_REPO_ROOT = Path(__file__).resolve().parents[3]


def _read(file: Path) -> str:
    lines = file.read_text(encoding="utf-8").splitlines()
    return os.pathsep.join(line.strip() for line in lines if line.strip())


def find_classpath(classpath: str | None = None) -> str | None:
    """Returns the JVM classpath for MiniYarn (``classpath``, the environment, or the file
    that setup writes), or None when none is configured."""
    for candidate in (classpath, os.environ.get(CLASSPATH_ENV)):
        if candidate:
            text = candidate.strip()
            if os.pathsep not in text and os.path.isfile(text) and not text.endswith(".jar"):
                text = _read(Path(text))
            return text
    file = _REPO_ROOT / ".tools" / "miniyarn.classpath"
    if file.is_file():
        return _read(file) or None
    return None
