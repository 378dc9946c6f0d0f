"""The JVM classpath of the test HDFS: finding it, building it, and compiling its main class.

The classpath comes from, in order: the ``classpath`` argument, the environment variable
``TFRECORD_IO_MINIHDFS_CLASSPATH`` (a classpath string, or the path of a file holding one), or
``.tools/minihdfs.classpath`` at the repository root (written by the project's setup). When none
exists, :func:`ensure_classpath` can build one with Maven (``build=True``), through the
test-only helper ``build_support/minihdfs_maven.py`` of a source checkout (not installed).
If the classpath lacks :data:`MAIN_CLASS`, its Java sources (``MiniHdfs`` and the
``ServiceMain`` it extends) are compiled with javac into the user's cache directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tfrecord_io.errors import MiniHdfsError

__all__ = ["CLASSPATH_ENV", "MAIN_CLASS", "find_classpath", "ensure_classpath"]

CLASSPATH_ENV = "TFRECORD_IO_MINIHDFS_CLASSPATH"
MAIN_CLASS = "org.tfrecordio.minihdfs.MiniHdfs"
_CLASS_FILE = MAIN_CLASS.replace(".", "/") + ".class"
# tfrecord_io/testing/minihdfs/classpath.py -> the repository root (a source checkout's).
_REPO_ROOT = Path(__file__).resolve().parents[3]
# The package's sources: MAIN_CLASS and what it is built on.
_JAVA_DIR = _REPO_ROOT / "jvm" / "minihdfs" / "src" / "main" / "java" / (
    MAIN_CLASS.rsplit(".", 1)[0].replace(".", "/")
)


def _tools_dir() -> Path:
    return _REPO_ROOT / ".tools"


def _cache_dir() -> Path:
    """Where fallbacks go (outside the work tree): ``$XDG_CACHE_HOME/tfrecord-io/minihdfs``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tfrecord-io" / "minihdfs"


def find_classpath(classpath: str | None = None) -> str | None:
    """Returns the JVM classpath for MiniHdfs, or None when none is configured.

    Looks at ``classpath``, then ``$TFRECORD_IO_MINIHDFS_CLASSPATH`` (a classpath, or a file
    holding one), then ``.tools/minihdfs.classpath`` at the repository root, then the Maven
    fallback of :func:`ensure_classpath` in the user's cache directory.
    """
    for candidate in (classpath, os.environ.get(CLASSPATH_ENV)):
        if candidate:
            text = candidate.strip()
            if os.pathsep not in text and os.path.isfile(text) and not text.endswith(".jar"):
                text = _read_classpath_file(Path(text))
            return text
    for file in (_tools_dir() / "minihdfs.classpath", _cache_dir() / "maven" / "classpath"):
        if file.is_file():
            text = _read_classpath_file(file)
            if text:
                return text
    return None


def _read_classpath_file(file: Path) -> str:
    """A classpath file: entries separated by the path separator and/or newlines."""
    lines = file.read_text(encoding="utf-8").splitlines()
    return os.pathsep.join(line.strip() for line in lines if line.strip())


def _has_main_class(classpath: str) -> bool:
    for entry in classpath.split(os.pathsep):
        if not entry:
            continue
        p = Path(entry)
        if p.is_dir() and (p / _CLASS_FILE).is_file():
            return True
        if p.is_file() and p.suffix == ".jar":
            try:
                with zipfile.ZipFile(p) as zf:
                    zf.getinfo(_CLASS_FILE)
                    return True
            except (KeyError, zipfile.BadZipFile, OSError):
                continue
    return False


def _java_sources() -> list[Path]:
    return sorted(_JAVA_DIR.glob("*.java"))


def _compile_main_class(classpath: str, out_dir: Path) -> None:
    """Compiles MiniHdfs's sources with javac into ``out_dir`` (if out of date)."""
    target = out_dir / _CLASS_FILE
    sources = _java_sources()
    if not sources:
        raise MiniHdfsError(
            f"the classpath has no {MAIN_CLASS} and its sources in {_JAVA_DIR} are not there "
            "to compile; build the minihdfs project of the sbt build first"
        )
    newest = max(source.stat().st_mtime for source in sources)
    if target.is_file() and target.stat().st_mtime >= newest:
        return
    javac = shutil.which("javac")
    if javac is None:
        raise MiniHdfsError(f"javac is needed to compile {_JAVA_DIR}'s sources and is not on PATH")
    out_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [javac, "-nowarn", "-d", str(out_dir), "-cp", classpath, *map(str, sources)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise MiniHdfsError(f"javac failed on {_JAVA_DIR}'s sources:\n{proc.stderr[-4000:]}")


def ensure_classpath(classpath: str | None = None, *, build: bool = False) -> str:
    """Returns a classpath that runs MiniHdfs, compiling its sources if needed.

    If no classpath is configured (see :func:`find_classpath`) and ``build`` is true, resolves
    the Hadoop test jars with ``mvn dependency:build-classpath``
    (``build_support/minihdfs_maven.py`` of a source checkout, from a pom generated in
    ``~/.cache/tfrecord-io/minihdfs/maven``, outside the work tree). If the classpath lacks the
    MiniHdfs class, its sources are compiled with javac into that cache.
    Raises :class:`MiniHdfsError` with what to do when that is not possible.
    """
    cp = find_classpath(classpath)
    if cp is None:
        if not build:
            raise MiniHdfsError(
                "no classpath for the mini HDFS: run the project's setup (it writes "
                f"{_tools_dir() / 'minihdfs.classpath'}), or set {CLASSPATH_ENV}"
            )
        cp = _build_with_maven(_cache_dir() / "maven")
    if not _has_main_class(cp):
        digest = hashlib.sha256()
        for source in _java_sources():
            digest.update(source.read_bytes())
        classes = _cache_dir() / f"classes-{digest.hexdigest()[:16]}"
        _compile_main_class(cp, classes)
        cp = str(classes) + os.pathsep + cp
    return cp


def _build_with_maven(work: Path) -> str:
    """The Maven fallback of a source checkout (``build_support/minihdfs_maven.py``)."""
    helper = _REPO_ROOT / "build_support" / "minihdfs_maven.py"
    if not helper.is_file():
        raise MiniHdfsError(
            "no classpath for the mini HDFS, and no build_support/ (a source checkout's) to "
            f"build one with Maven: set {CLASSPATH_ENV}"
        )
    sys.path.insert(0, str(_REPO_ROOT))
    try:
        from build_support import BuildError  # noqa: PLC0415 - only in a source checkout
        from build_support.minihdfs_maven import build_classpath  # noqa: PLC0415 - only in a source checkout
    finally:
        sys.path.remove(str(_REPO_ROOT))
    try:
        return build_classpath(work)
    except BuildError as exc:
        raise MiniHdfsError(
            f"{exc} (or run the project's setup, which writes "
            f"{_tools_dir() / 'minihdfs.classpath'}, or set {CLASSPATH_ENV})"
        ) from None
