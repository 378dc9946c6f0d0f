"""The release artifacts: ``python -m build`` makes an sdist and a wheel; the wheel installs in a
fresh environment with no JDK and no compiler, and everything a user starts with works from it.

The tests run in file order against one venv that grows (conftest.py): the core checks come
before the fixtures that add the ``[spark]`` and ``[tensorflow]`` extras.
"""

from __future__ import annotations

import importlib.metadata
import io
import re
import subprocess
import tarfile
import textwrap
import zipfile
from pathlib import Path

from tfrecord_io import records

ROOT = Path(__file__).resolve().parents[2]
MNIST = ROOT.parent / "shared" / "data" / "mnist"  # the README's ../shared/data/mnist

WHEEL_NAME = re.compile(r"^tfrecord_io-(?P<version>[^-]+)-py3-none-(?P<platform>[a-z0-9_]+)\.whl$")


def class_file_major(data: bytes) -> int:
    assert data[:4] == b"\xca\xfe\xba\xbe"
    return int.from_bytes(data[6:8], "big")


def glibc_versions_needed(so_bytes: bytes, tmp_path) -> tuple[set[str], list[tuple[int, ...]]]:
    so = tmp_path / "plugin.so"
    so.write_bytes(so_bytes)
    dump = subprocess.run(["objdump", "-p", str(so)], capture_output=True, text=True,
                          check=True).stdout
    needed = set(re.findall(r"^\s*NEEDED\s+(\S+)", dump, re.M))
    glibc = [tuple(map(int, v.split("."))) for v in re.findall(r"\sGLIBC_(\d+(?:\.\d+)+)\s*$",
                                                                  dump, re.M)]
    return needed, glibc


# -- the artifacts -----------------------------------------------------------------------------


def test_wheel_carries_the_jar_and_the_plugin_under_a_truthful_platform_tag(dist, tmp_path):
    import tfrecord_io

    m = WHEEL_NAME.match(dist.wheel.name)
    assert m, dist.wheel.name
    assert m["version"] == tfrecord_io.__version__
    with zipfile.ZipFile(dist.wheel) as zf:
        names = set(zf.namelist())
        wheel_file = zf.read(f"tfrecord_io-{m['version']}.dist-info/WHEEL").decode()
        jar = zf.read("tfrecord_io/jars/tfrecord-io.jar")
        plugin = zf.read("tfrecord_io/_native/libtfrecord_io_tf_filesystem.so")
    assert "Root-Is-Purelib: false" in wheel_file
    assert f"Tag: py3-none-{m['platform']}" in wheel_file
    assert not [n for n in names if n.endswith((".java", ".class"))]
    # Java 11 bytecode (class file major version 55), whatever JDK built it.
    with zipfile.ZipFile(io.BytesIO(jar)) as jar_zip:
        classes = [n for n in jar_zip.namelist() if n.endswith(".class")]
        assert "org/tfrecordio/mapreduce/TFRecordInputFormat.class" in classes
        assert {class_file_major(jar_zip.read(n)) for n in classes} == {55}
    # The platform tag claims no more than the plugin needs: a manylinux_2_X tag only if every
    # glibc symbol version it requires is at most 2.X and it links nothing but the C/C++
    # runtime and TensorFlow's framework library.
    needed, glibc = glibc_versions_needed(plugin, tmp_path)
    if m["platform"].startswith("manylinux_"):
        major, minor = map(int, re.match(r"manylinux_(\d+)_(\d+)_x86_64$", m["platform"]).groups())
        assert max(glibc) <= (major, minor)
        assert needed <= {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1",
                          "libtensorflow_framework.so.2"}
    else:
        assert m["platform"] == "linux_x86_64"


def test_the_wheel_installs_wherever_tensorflows_own_wheel_does(dist):
    # What the plugin needs of glibc and libstdc++ must not outgrow the TensorFlow it plugs into
    # (std::thread or std::condition_variable::wait, compiled by GCC 12, would).
    policy = re.compile(r"manylinux_(\d+)_(\d+)_x86_64")
    ours = policy.fullmatch(WHEEL_NAME.match(dist.wheel.name)["platform"])
    wheel_file = importlib.metadata.distribution("tensorflow").read_text("WHEEL") or ""
    theirs = policy.search(wheel_file)
    assert ours, dist.wheel.name
    assert theirs, wheel_file
    assert (int(ours[1]), int(ours[2])) <= (int(theirs[1]), int(theirs[2]))


def test_sdist_carries_the_sources_and_no_binaries(dist):
    with tarfile.open(dist.sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    assert "setup.py" in names and "pyproject.toml" in names and "build.sbt" in names
    assert "build_support/jar.py" in names and "build_support/wheel_tags.py" in names
    assert "jvm/src/main/java/org/tfrecordio/mapreduce/TFRecordInputFormat.java" in names
    assert "tfrecord_io/_native/tf_filesystem.cc" in names
    assert not [n for n in names if n.endswith((".jar", ".so", ".class"))]


def test_build_says_which_platform_and_why(dist):
    assert re.search(r"tfrecord-io: wheel platform \S+: libtfrecord_io_tf_filesystem\.so needs",
                     dist.log), dist.log[-3000:]


# -- the core, before any extra ---------------------------------------------------------------


def test_core_installs_and_imports_without_spark_or_tensorflow(wheel_env, tmp_path):
    installed = wheel_env.installed()
    assert "tfrecord-io" in installed
    assert not installed & {"pyspark", "tensorflow", "tensorflow-cpu", "tf-keras", "py4j"}
    script = textwrap.dedent(
        f"""
        import sys
        import tfrecord_io
        from tfrecord_io import records, index, example, fs, cli
        from tfrecord_io.fs import hdfs
        assert tfrecord_io.__file__.startswith({str(wheel_env.venv)!r}), tfrecord_io.__file__
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "tensorflow"))
        assert not heavy, heavy
        print("CORE OK")
        """
    )
    assert "CORE OK" in wheel_env.run(["python", "-c", script], cwd=tmp_path).stdout
    help_text = wheel_env.run(["tfrecord-io", "--help"], cwd=tmp_path).stdout
    assert "mnist" in help_text


def test_mnist_quick_start_runs_from_the_wheel(wheel_env, tmp_path):
    assert (MNIST / "t10k-images-idx3-ubyte.gz").is_file(), f"no MNIST test set in {MNIST}"
    out = tmp_path / "mnist-tfr"
    wheel_env.run(["tfrecord-io", "mnist", str(MNIST), str(out), "--shards", "4"], cwd=tmp_path)
    counted = wheel_env.run(["tfrecord-io", "count", str(out)], cwd=tmp_path).stdout
    assert counted.splitlines()[-1] == "10000\ttotal"
    head = wheel_env.run(["tfrecord-io", "head", "-n", "1", str(out / "test")], cwd=tmp_path)
    assert '"label": [7]' in head.stdout
    wheel_env.run(["tfrecord-io", "verify", str(out)], cwd=tmp_path)


# -- with [spark] -------------------------------------------------------------------------------


SPARK_SCRIPT = textwrap.dedent(
    """
    import sys
    from tfrecord_io import spark as tfs

    spark = tfs.session("local[2]", **{"spark.ui.enabled": "false"})
    assert tfs.jar_path().startswith(sys.argv[1]), tfs.jar_path()
    records = [b"", b"a", bytes(range(256)) * 40] + [b"r%d" % i for i in range(1000)]
    tfs.save_records(spark.sparkContext.parallelize(records, 3), sys.argv[2])
    back = tfs.load_records(spark, sys.argv[2]).collect()
    assert sorted(back) == sorted(records), len(back)
    print("ROUND TRIP", len(back))
    spark.stop()
    """
)


def test_spark_round_trip_on_local_2_from_the_wheel(wheel_env_spark, tmp_path):
    assert {"pyspark", "py4j"} <= wheel_env_spark.installed()
    script = tmp_path / "job.py"
    script.write_text(SPARK_SCRIPT)
    result = wheel_env_spark.run(
        ["python", str(script), str(wheel_env_spark.venv), str(tmp_path / "out")], cwd=tmp_path
    )
    assert "ROUND TRIP 1003" in result.stdout


# -- with [tensorflow] --------------------------------------------------------------------------


TF_SCRIPT = textwrap.dedent(
    """
    import logging
    import sys
    logging.basicConfig(level=logging.WARNING)
    from tfrecord_io import tf as tfr
    from tfrecord_io.tf import filesystem, plugin

    got = [bytes(r) for r in tfr.dataset(sys.argv[2]).as_numpy_iterator()]
    assert plugin.hdfs_in_tensorflow(), "the plugin did not load"
    assert str(filesystem.plugin_path()).startswith(sys.argv[1]), filesystem.plugin_path()
    import tensorflow as tf
    assert tf.io.gfile.exists(sys.argv[2] + "/part-00000.tfrecord")
    print("RECORDS", len(got), sum(map(len, got)))
    """
)


def test_tf_dataset_reads_hdfs_through_the_plugin_from_the_wheel(wheel_env_tensorflow, hdfs,
                                                                 tmp_path):
    url = f"{hdfs.url}/wheel-test/data"
    recs = [b"%d:" % i + bytes(i % 251) for i in range(3000)]
    records.write(f"{url}/part-00000.tfrecord", recs[:1500])
    records.write(f"{url}/part-00001.tfrecord", recs[1500:])
    script = tmp_path / "read.py"
    script.write_text(TF_SCRIPT)
    result = wheel_env_tensorflow.run(
        ["python", str(script), str(wheel_env_tensorflow.venv), url], cwd=tmp_path
    )
    assert f"RECORDS 3000 {sum(map(len, recs))}" in result.stdout
    assert "Python reader" not in result.stderr
