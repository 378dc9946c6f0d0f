"""When the installed TensorFlow cannot load the bundled ``hdfs://`` plugin (another ABI, another
platform, a damaged file), tfrecord-io says so once, naming the reason, and reads HDFS with its
Python reader: the data is the same.

Each case is the installed package (the wheel, unpacked) with its plugin file replaced, run by
this environment's real TensorFlow in a fresh process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

from tfrecord_io import records

PLUGIN = "tfrecord_io/_native/libtfrecord_io_tf_filesystem.so"

READ_TWICE = textwrap.dedent(
    """
    import logging
    import sys
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import tfrecord_io
    from tfrecord_io import tf as tfr

    assert tfrecord_io.__file__.startswith(sys.argv[1]), tfrecord_io.__file__
    for _ in range(2):
        got = [bytes(r) for r in tfr.dataset(sys.argv[2]).as_numpy_iterator()]
        print("RECORDS", len(got), sum(map(len, got)))
    """
)


def not_a_shared_library(path):
    path.write_bytes(b"this is not an ELF shared object\n")


def a_library_that_is_no_tensorflow_plugin(path):
    # A real shared library of this machine's Python, which has no TF_InitPlugin: what a plugin
    # built for another TensorFlow ABI looks like to TensorFlow's loader.
    import _ctypes

    shutil.copyfile(_ctypes.__file__, path)


@pytest.mark.parametrize(
    "damage, reason",
    [(not_a_shared_library, "file too short"),
     (a_library_that_is_no_tensorflow_plugin, "TF_InitPlugin")],
    ids=["not-a-shared-library", "not-a-tensorflow-plugin"],
)
def test_unloadable_plugin_warns_once_and_reads_with_the_python_reader(
    dist, hdfs, tmp_path, damage, reason
):
    package = tmp_path / "site"
    with zipfile.ZipFile(dist.wheel) as zf:
        zf.extractall(package)
    damage(package / PLUGIN)
    url = f"{hdfs.url}/plugin-fallback/{tmp_path.name}"
    recs = [b"%d:" % i + bytes(i % 97) for i in range(2000)]
    records.write(f"{url}/part-00000.tfrecord", recs)
    script = tmp_path / "read.py"
    script.write_text(READ_TWICE)
    env = dict(os.environ, PYTHONPATH=str(package), TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, str(script), str(package), url],
                            capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-5000:]
    total = sum(map(len, recs))
    assert result.stdout.count(f"RECORDS 2000 {total}") == 2
    warnings = [line for line in result.stderr.splitlines()
                if line.startswith("WARNING tfrecord_io.tf.plugin")]
    assert len(warnings) == 1, result.stderr[-3000:]
    assert "Python reader" in warnings[0]
    assert str(package / PLUGIN) in warnings[0]
    assert reason in warnings[0]
    assert "TensorFlow 2." in warnings[0]
