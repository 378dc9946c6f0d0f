"""The Python environment travels with the application: executors and the TensorFlow nodes
they start run the interpreter, tfrecord-io and TensorFlow of the archive YARN unpacked into
their container (``spark.archives=...#environment``), with nothing of this checkout on their
path; the interpreter that environment was made from has neither package."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tfrecord_io import cluster

import manager_programs

ROOT = str(Path(__file__).resolve().parents[2])


def from_checkout(entries: list[str]) -> list[str]:
    """The Python path entries in this checkout (its virtual environments included), but for
    Spark's core jar, which Spark puts on every Python worker's path (no Python in it)."""
    return [p for p in entries
            if (p == ROOT or p.startswith(ROOT + os.sep)) and not p.endswith(".jar")]


@pytest.fixture(scope="module")
def executors(yarn_spark):
    def describe(_):
        import sys

        import pyspark
        import tensorflow

        import tfrecord_io

        yield {"cwd": os.getcwd(), "executable": sys.executable, "base_prefix": sys.base_prefix,
               "tfrecord_io": tfrecord_io.__file__, "tensorflow": tensorflow.__file__,
               "pyspark": pyspark.__file__, "sys_path": sys.path,
               "pythonpath": os.environ.get("PYTHONPATH", ""),
               "container": os.environ.get("CONTAINER_ID")}

    sc = yarn_spark.sparkContext
    return sc.parallelize(range(3), 3).mapPartitions(describe).collect()


@pytest.fixture(scope="module")
def nodes(yarn_spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("yarn-environment")
    with cluster.run(yarn_spark.sparkContext, manager_programs.report_environment,
                     {"out": str(out)}, num_workers=2) as c:
        c.wait(timeout=300)
    return [json.loads((out / f"worker-{i}-environment.json").read_text()) for i in range(2)]


def test_executors_run_python_tfrecord_io_and_tensorflow_of_the_shipped_environment(executors):
    for e in executors:
        environment = os.path.join(e["cwd"], "environment") + os.sep
        assert e["container"] and e["container"] in e["cwd"]
        assert e["executable"].startswith(environment)
        assert e["tfrecord_io"].startswith(environment)
        assert e["tensorflow"].startswith(environment)


def test_executors_take_pyspark_from_the_zip_spark_ships_and_nothing_from_this_checkout(
        executors):
    for e in executors:
        assert e["pyspark"].startswith(os.path.join(e["cwd"], "pyspark.zip"))
        assert from_checkout(e["pythonpath"].split(os.pathsep)) == []
        assert from_checkout(e["sys_path"]) == []


def test_tensorflow_nodes_run_the_shipped_environment_in_their_containers(nodes):
    for node in nodes:
        environment = f"{os.sep}{node['container']}{os.sep}environment{os.sep}"
        assert node["container"] and node["container"].startswith("container_")
        assert environment in node["executable"]
        assert environment in node["tfrecord_io"]
        assert environment in node["tensorflow"]
        assert from_checkout(node["pythonpath"].split(os.pathsep)) == []


@pytest.mark.parametrize("module", ["tfrecord_io", "tensorflow"])
def test_the_interpreter_the_environment_was_made_from_has_neither_package(executors, module):
    base = os.path.join(executors[0]["base_prefix"], "bin", "python3")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run([base, "-c", f"import {module}"], env=env, cwd="/",
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert f"No module named '{module}'" in done.stderr
