"""Compiles ``jvm/src/main/java`` with ``javac --release 11`` into
``tfrecord_io/jars/tfrecord-io.jar``.

The sources are compiled against the jars that the installed pyspark ships (found with
importlib, no network, no Maven); the classes, plus ``jvm/src/main/resources`` if there is one,
are packed with fixed timestamps, so the same classes give the same jar bytes.

Environment:
  JAVA_HOME                  the JDK whose javac is used (else javac on PATH)
  TFRECORD_IO_SPARK_JARS     a directory of jars to compile against instead of pyspark's jars/
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from build_support import BuildError
from build_support.versions import ROOT, package_version

__all__ = ["JAR_RELPATH", "find_javac", "find_spark_jars", "write_jar", "make_jar"]

JAVA_SRC = ROOT / "jvm" / "src" / "main" / "java"
JAVA_RES = ROOT / "jvm" / "src" / "main" / "resources"
JAR_RELPATH = Path("tfrecord_io") / "jars" / "tfrecord-io.jar"
JAVA_RELEASE = 11
# Fixed timestamp for every jar entry, so that the same classes give the same jar bytes.
ZIP_DATE = (2000, 1, 1, 0, 0, 0)


def find_javac() -> str:
    candidates = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidates.append(str(Path(java_home) / "bin" / "javac"))
    on_path = shutil.which("javac")
    if on_path:
        candidates.append(on_path)
    for javac in candidates:
        if os.path.isfile(javac) and os.access(javac, os.X_OK):
            break
    else:
        raise BuildError(
            "tfrecord-io: javac not found, so the Hadoop jar cannot be built. Install a JDK "
            f"(version {JAVA_RELEASE} or newer, e.g. `apt-get install openjdk-17-jdk-headless`) "
            "and put its bin/ on PATH or set JAVA_HOME."
        )
    out = subprocess.run([javac, "-version"], capture_output=True, text=True)
    text = (out.stdout + out.stderr).strip()
    m = re.search(r"javac\s+(\d+)(?:\.(\d+))?", text)
    if not m:
        raise BuildError(f"tfrecord-io: could not tell the version of {javac}: {text!r}")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "javac 1.8.0_x"
        major = int(m.group(2))
    if major < JAVA_RELEASE:
        raise BuildError(
            f"tfrecord-io: {javac} is {text}; a JDK {JAVA_RELEASE} or newer is needed "
            f"(the jar is compiled with --release {JAVA_RELEASE})."
        )
    return javac


def find_spark_jars() -> Path:
    override = os.environ.get("TFRECORD_IO_SPARK_JARS")
    if override:
        jars = Path(override)
        if not any(jars.glob("*.jar")):
            raise BuildError(f"tfrecord-io: TFRECORD_IO_SPARK_JARS={override} holds no *.jar")
        return jars
    spec = importlib.util.find_spec("pyspark")
    if spec is None:
        raise BuildError(
            "tfrecord-io: pyspark is not installed in the Python that runs this build "
            f"({sys.executable}), and its jars (Hadoop's client API) are what the Java code is "
            "compiled against. Install pyspark first (`pip install pyspark`) and build with "
            "--no-build-isolation, or build with isolation, which installs it from "
            "pyproject.toml."
        )
    for location in spec.submodule_search_locations or []:
        jars = Path(location) / "jars"
        if any(jars.glob("hadoop-client-api-*.jar")):
            return jars
    raise BuildError(
        "tfrecord-io: the pyspark at "
        f"{list(spec.submodule_search_locations or [])} has no jars/hadoop-client-api-*.jar"
    )


def _jar_bytes_manifest(version: str) -> bytes:
    lines = [
        "Manifest-Version: 1.0",
        "Created-By: tfrecord-io build_support",
        "Implementation-Title: tfrecord-io",
        f"Implementation-Version: {version}",
        "Implementation-Vendor: tfrecord-io",
        "Automatic-Module-Name: org.tfrecordio",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def _zip_add(zf: zipfile.ZipFile, name: str, data: bytes | None) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    if data is None:  # directory entry
        info.external_attr = (0o40755 << 16) | 0x10
        zf.writestr(info, b"", compress_type=zipfile.ZIP_STORED)
    else:
        info.external_attr = 0o100644 << 16
        zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)


def write_jar(out: Path, trees: list[Path], version: str) -> int:
    """Pack the files under each of ``trees`` into ``out``; returns the number of files."""
    entries: dict[str, Path] = {}
    for tree in trees:
        for path in sorted(tree.rglob("*")):
            if path.is_file():
                name = path.relative_to(tree).as_posix()
                if name.upper() == "META-INF/MANIFEST.MF":
                    continue
                entries[name] = path
    dirs = set()
    for name in entries:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]) + "/")
    dirs.discard("META-INF/")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        # The manifest first, as java.util.jar.JarInputStream expects.
        _zip_add(zf, "META-INF/", None)
        _zip_add(zf, "META-INF/MANIFEST.MF", _jar_bytes_manifest(version))
        for name in sorted(dirs | set(entries)):
            _zip_add(zf, name, None if name.endswith("/") else entries[name].read_bytes())
    os.replace(tmp, out)
    return len(entries)


def make_jar(out: Path) -> Path:
    sources = sorted(JAVA_SRC.rglob("*.java"))
    if not sources:
        raise BuildError(f"tfrecord-io: no Java sources under {JAVA_SRC}")
    javac = find_javac()
    spark_jars = find_spark_jars()
    with tempfile.TemporaryDirectory(prefix="tfrecord-io-javac-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        argfile = Path(tmp) / "sources.txt"
        # One quoted path per line: javac's @argfile syntax.
        argfile.write_text(
            "\n".join('"' + str(s).replace("\\", "\\\\") + '"' for s in sources) + "\n",
            encoding="utf-8",
        )
        cmd = [
            javac,
            "--release", str(JAVA_RELEASE),
            "-encoding", "UTF-8",
            "-g",
            "-proc:none",
            "-Xlint:all,-options,-serial,-processing,-path",
            "-cp", str(spark_jars / "*"),
            "-d", str(classes),
            f"@{argfile}",
        ]
        print(f"tfrecord-io: compiling {len(sources)} Java sources with {javac} "
              f"--release {JAVA_RELEASE} against {spark_jars}", flush=True)
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(
                "tfrecord-io: javac failed:\n" + result.stdout + result.stderr
            )
        if result.stderr.strip():
            print(result.stderr, file=sys.stderr, flush=True)
        trees = [classes] + ([JAVA_RES] if JAVA_RES.is_dir() else [])
        count = write_jar(out, trees, package_version())
    print(f"tfrecord-io: wrote {out} ({count} files)", flush=True)
    return out
