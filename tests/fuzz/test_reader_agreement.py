"""The Python and JVM readers agree on every fuzz variant (issue 12, item 6).

The JVM side is the jar's ``org.tfrecordio.tools.ReadFiles`` (the reader the InputFormats
use), run once per policy over all the variant files; it prints one JSON line per file. Both
must return the same records (SHA-256 over each as an 8-byte little-endian length + its
bytes), the same skip counters, and under ``fail`` the same error offset. Messages may differ.
``TFRECORD_IO_TEST_JAR`` checks another build of the jar instead of the bundled one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import zipfile

import pytest

from tfrecord_io import records, spark
from tfrecord_io.errors import CorruptRecordError
from tfrecord_io.records import RecordReader

MAIN_CLASS = "org.tfrecordio.tools.ReadFiles"


@pytest.fixture(scope="module")
def read_files_classpath() -> str:
    """The classpath holding ReadFiles: the jar and pyspark's jars (the Hadoop client)."""
    jar = os.environ.get("TFRECORD_IO_TEST_JAR") or spark.jar_path()
    with zipfile.ZipFile(jar) as z:
        if MAIN_CLASS.replace(".", "/") + ".class" not in z.namelist():
            pytest.fail(
                f"{jar} has no {MAIN_CLASS}, the JVM side of this check: rebuild the jar from "
                "the current sources (`make jar`), or point TFRECORD_IO_TEST_JAR at one that has it"
            )
    import pyspark

    return os.pathsep.join([jar, os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")])


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not found or not os.path.exists(found):
        pytest.fail("no java: set JAVA_HOME or put java on PATH (a JDK 17 is what make setup uses)")
    return found


def jvm_results(classpath: str, policy: str, paths: list[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for i in range(0, len(paths), 1500):
        run = subprocess.run(
            [java(), "-Xmx512m", "-cp", classpath, MAIN_CLASS, "--policy", policy,
             *paths[i:i + 1500]],
            capture_output=True, text=True, timeout=900,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        for line in run.stdout.splitlines():
            result = json.loads(line)
            out[result["path"]] = result
    return out


def python_result(path: str, policy: str) -> dict:
    sha = hashlib.sha256()
    count = 0
    error = None
    reader = RecordReader(path, on_corrupt=policy, on_skip=lambda e: None)
    with reader:
        try:
            for record in reader:
                sha.update(struct.pack("<Q", len(record)))
                sha.update(record)
                count += 1
        except CorruptRecordError as exc:
            error = {"offset": exc.offset}
    return {"records": count, "sha256": sha.hexdigest(), "skipped_records": reader.skipped_records,
            "skipped_bytes": reader.skipped_bytes, "error": error}


def comparable(result: dict) -> dict:
    error = result["error"]
    return {
        "records": result["records"],
        "sha256": result["sha256"],
        "skipped_records": result["skipped_records"],
        "skipped_bytes": result["skipped_bytes"],
        "error_offset": None if error is None else error["offset"],
    }


@pytest.mark.parametrize("policy", ["fail", "skip"])
def test_python_and_jvm_readers_agree_on_every_variant(read_files_classpath, fuzz_files, policy):
    paths = list(fuzz_files)
    jvm = jvm_results(read_files_classpath, policy, paths)
    assert set(jvm) == set(paths)
    disagreements = []
    for path in paths:
        ours, theirs = comparable(python_result(path, policy)), comparable(jvm[path])
        if ours != theirs:
            disagreements.append(f"{fuzz_files[path].name}: python {ours}, jvm {theirs} "
                                 f"({jvm[path]['error']})")
    assert not disagreements, (f"{len(disagreements)} of {len(paths)} variants differ:\n"
                               + "\n".join(disagreements[:20]))


def test_the_agreement_check_sees_the_originals_alike(read_files_classpath, fuzz_sources,
                                                      fuzz_originals, tmp_path):
    sha = hashlib.sha256()
    for record in fuzz_originals:
        sha.update(struct.pack("<Q", len(record)) + record)
    path = str(tmp_path / "originals.tfrecord")
    with open(path, "wb") as f:
        f.write(fuzz_sources["none"])
    [line] = jvm_results(read_files_classpath, "fail", [path]).values()
    assert (line["records"], line["sha256"], line["error"]) == (
        len(fuzz_originals), sha.hexdigest(), None)
    assert list(records.read(path)) == fuzz_originals
