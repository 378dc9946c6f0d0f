"""Test-only: the test HDFS's JVM classpath resolved with Maven, when sbt did not write one.

``make setup`` writes ``.tools/minihdfs.classpath`` with sbt; this is the fallback that
``tfrecord_io.testing.minihdfs.ensure_classpath(build=True)`` uses in a source checkout without
it. It resolves Hadoop's HDFS test jars at the build's Hadoop version (``build.sbt``) into
``~/.cache/tfrecord-io/minihdfs/maven`` (outside the work tree). Not part of the installed
package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from build_support import BuildError
from build_support.versions import hadoop_version

__all__ = ["maven_dependencies", "build_classpath"]


def maven_dependencies() -> tuple[tuple[str, str, str, str | None], ...]:
    """What MiniHdfs needs at run time, as Maven ``(groupId, artifactId, version, classifier)``.

    ``hadoop-hdfs-client`` is listed because ``hadoop-hdfs`` declares it ``provided``.
    """
    v = hadoop_version()
    return (
        ("org.apache.hadoop", "hadoop-common", v, None),
        ("org.apache.hadoop", "hadoop-common", v, "tests"),
        ("org.apache.hadoop", "hadoop-hdfs", v, None),
        ("org.apache.hadoop", "hadoop-hdfs", v, "tests"),
        ("org.apache.hadoop", "hadoop-hdfs-client", v, None),
    )


def _maven_pom() -> str:
    deps = []
    for group, artifact, version, classifier in maven_dependencies():
        extra = f"<classifier>{classifier}</classifier>" if classifier else ""
        deps.append(
            f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version>{extra}</dependency>"
        )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>org.tfrecordio</groupId><artifactId>minihdfs-classpath</artifactId>"
        "<version>0</version>\n"
        "  <dependencies>\n" + "\n".join(deps) + "\n  </dependencies>\n</project>\n"
    )


def build_classpath(work: Path) -> str:
    """Resolves the classpath into *work* with `mvn dependency:build-classpath`; returns it."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BuildError("no classpath for the mini HDFS and no `mvn` to build one")
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(_maven_pom(), encoding="utf-8")
    out = work / "classpath.tmp"
    proc = subprocess.run(
        [mvn, "-q", "-B", "-f", str(work / "pom.xml"), "dependency:build-classpath",
         f"-Dmdep.outputFile={out}"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not out.is_file():
        raise BuildError(
            "mvn could not resolve the mini HDFS dependencies:\n"
            + (proc.stdout + proc.stderr)[-4000:]
        )
    final = work / "classpath"
    os.replace(out, final)
    return final.read_text(encoding="utf-8").strip()


