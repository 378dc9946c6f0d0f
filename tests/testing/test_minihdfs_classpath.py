"""tfrecord_io.testing.minihdfs.classpath: a classpath of Hadoop's jars alone gets the test
HDFS's own classes compiled from their sources."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tfrecord_io.testing.childjvm import find_java
from tfrecord_io.testing.minihdfs.classpath import MAIN_CLASS, ensure_classpath, find_classpath


def test_a_classpath_without_the_main_class_gets_it_compiled_from_its_sources(
        tmp_path, monkeypatch):
    written = find_classpath()
    assert written is not None, "make setup writes .tools/minihdfs.classpath"
    jars = os.pathsep.join(e for e in written.split(os.pathsep) if e.endswith(".jar"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    classpath = ensure_classpath(jars)

    classes = Path(classpath.split(os.pathsep)[0])
    assert classes.parent == tmp_path / "tfrecord-io" / "minihdfs"
    package = classes / "org" / "tfrecordio" / "minihdfs"
    assert {"MiniHdfs.class", "ServiceMain.class"} <= {p.name for p in package.iterdir()}
    # The compiled classes run: MiniHdfs without arguments says how to call it.
    done = subprocess.run([find_java(), "-cp", classpath, MAIN_CLASS], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert "minihdfs: --base-dir is required" in done.stderr
    assert "usage: MiniHdfs --base-dir DIR" in done.stderr
