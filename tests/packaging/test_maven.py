"""The JVM library as a Maven artifact: ``bin/sbt core/publishM2`` writes
``org.tfrecordio:tfrecord-io:VERSION`` (jar, sources jar, POM) into a Maven repository, with no
runtime dependency: Spark and Hadoop are ``provided``.

The artifact goes to a temporary repository (``-Dmaven.repo.local``), and a Java program that
uses the formats compiles against the published jar, as a Maven user's build would.
"""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pyspark
import pytest

import tfrecord_io

ROOT = Path(__file__).resolve().parents[2]
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}

USER_CODE = """
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.InputFormat;
import org.tfrecordio.mapreduce.TFRecordInputFormat;

public class UsesTheArtifact {
    public static void main(String[] args) {
        InputFormat<BytesWritable, NullWritable> format = new TFRecordInputFormat();
        System.out.println(format.getClass().getName());
    }
}
"""


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """The artifact's directory in a fresh Maven repository written by publishM2."""
    repo = tmp_path_factory.mktemp("m2")
    env = dict(os.environ, SBT_OPTS=f"{os.environ.get('SBT_OPTS', '')} -Dmaven.repo.local={repo}")
    result = subprocess.run([str(ROOT / "bin" / "sbt"), "core/publishM2"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    return repo / "org" / "tfrecordio" / "tfrecord-io" / tfrecord_io.__version__


def test_publish_writes_jar_sources_and_pom_under_the_documented_coordinates(published):
    version = tfrecord_io.__version__
    for suffix in (".jar", "-sources.jar", ".pom"):
        assert (published / f"tfrecord-io-{version}{suffix}").is_file(), suffix
    pom = ET.parse(published / f"tfrecord-io-{version}.pom").getroot()
    assert pom.findtext("m:groupId", namespaces=POM_NS) == "org.tfrecordio"
    assert pom.findtext("m:artifactId", namespaces=POM_NS) == "tfrecord-io"
    assert pom.findtext("m:version", namespaces=POM_NS) == version


def test_pom_has_no_runtime_dependency_only_provided_spark_and_hadoop(published):
    pom = ET.parse(published / f"tfrecord-io-{tfrecord_io.__version__}.pom").getroot()
    deps = {
        (d.findtext("m:groupId", namespaces=POM_NS), d.findtext("m:artifactId", namespaces=POM_NS)):
            (d.findtext("m:version", namespaces=POM_NS), d.findtext("m:scope", namespaces=POM_NS))
        for d in pom.iterfind("m:dependencies/m:dependency", POM_NS)
    }
    assert set(deps) == {("org.apache.spark", "spark-sql_2.13"),
                         ("org.apache.hadoop", "hadoop-client-api")}
    assert {scope for _, scope in deps.values()} == {"provided"}
    # Hadoop at the version the jar is compiled against (pyspark's bundled client).
    hadoop_jars = list((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert deps[("org.apache.hadoop", "hadoop-client-api")][0] == \
        hadoop_jars[0].name[len("hadoop-client-api-"):-len(".jar")]


def test_sources_jar_holds_every_java_source(published):
    sources = sorted(p.relative_to(ROOT / "jvm" / "src" / "main" / "java").as_posix()
                     for p in (ROOT / "jvm" / "src" / "main" / "java").rglob("*.java"))
    with zipfile.ZipFile(published / f"tfrecord-io-{tfrecord_io.__version__}-sources.jar") as zf:
        names = set(zf.namelist())
    assert sources and set(sources) <= names


def test_java_code_compiles_and_runs_against_the_published_jar(published, tmp_path):
    jar = published / f"tfrecord-io-{tfrecord_io.__version__}.jar"
    hadoop = str(Path(pyspark.__file__).parent / "jars" / "*")  # the provided dependency
    source = tmp_path / "UsesTheArtifact.java"
    source.write_text(USER_CODE)
    classpath = os.pathsep.join([str(jar), hadoop])
    subprocess.run(["javac", "-d", str(tmp_path), "-cp", classpath, str(source)], check=True,
                   timeout=300)
    result = subprocess.run(["java", "-cp", os.pathsep.join([str(tmp_path), classpath]),
                             "UsesTheArtifact"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "org.tfrecordio.mapreduce.TFRecordInputFormat"
