"""``spark-submit --deploy-mode cluster`` of python/train_on_yarn.py: the driver runs in the
ApplicationMaster's container from the shipped environment, trains with ``cluster.run`` (sync,
two workers) on HDFS shards and saves the model to HDFS; the application succeeds and leaves no
container. The command is the one docs/deploying.md shows. Runs after test_yarn_teardown (file
order): the test YARN's queue gives ApplicationMasters a tenth of its memory, which the
client-mode application's AM mostly holds while it runs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import psutil
import pytest

from tfrecord_io.testing.miniyarn import SHIPPED_PYTHON

from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "python" / "train_on_yarn.py"
# A driver container of 1 GB (the driver's JVM and its Python, which imports no TensorFlow) and
# two executors of 3 GB, as in the client-mode tests (a sync worker's process tree has reached
# 2 GB).
CONF = {
    "spark.driver.memory": "512m",
    "spark.driver.memoryOverhead": "512m",
    "spark.executor.instances": "2",
    "spark.executor.cores": "2",
    "spark.task.cpus": "2",
    "spark.executor.memory": "512m",
    "spark.executor.memoryOverhead": "2560m",
}


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def submit_command(archive: str, data: str, model: str) -> list[str]:
    """The command of docs/deploying.md (cluster mode), with this session's paths."""
    home = spark_home()
    command = [
        str(home / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", "cluster",
        "--archives", f"{archive}#environment",
        "--conf", f"spark.yarn.appMasterEnv.PYSPARK_PYTHON={SHIPPED_PYTHON}",
        # Spark's jars from the installed pyspark, not uploaded with every application
        "--conf", f"spark.yarn.jars=local:{home / 'jars'}/*",
    ]
    for key, value in CONF.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, str(SCRIPT), data, "--demo", "2000", "--model", model]


def am_log_tail(yarn, app_id: str, lines: int | None = 60) -> str:
    """The last *lines* (all with None) of the ApplicationMaster's (the driver's) stdout and
    stderr."""
    tails = []
    for log in sorted(yarn.base_dir.glob(f"**/{app_id}/container_*_000001/std*")):
        text = log.read_text(errors="replace").splitlines()[-lines if lines else 0:]
        tails.append(f"--- {log.name} of {log.parent.name}:\n" + "\n".join(text))
    return "\n".join(tails) or f"(no ApplicationMaster log of {app_id} under {yarn.base_dir})"


@pytest.fixture(scope="module")
def submitted(yarn, shipped_env):
    data = f"{yarn.hdfs_url}/submit/line"
    model = f"{yarn.hdfs_url}/submit/model"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
    env.update(yarn.env())
    env["SPARK_HOME"] = str(spark_home())
    before = yarn.containers()
    done = subprocess.run(submit_command(shipped_env, data, model), env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    output = done.stdout + done.stderr
    found = re.search(r"application_\d+_\d+", output)
    app_id = found.group(0) if found else None
    if done.returncode != 0:
        pytest.fail(f"spark-submit exited with {done.returncode}:\n{output[-6000:]}\n"
                    f"{am_log_tail(yarn, app_id) if app_id else '(no application id)'}",
                    pytrace=False)
    # NodeManagers clean up after the application ended
    wait_until(lambda: yarn.containers() <= before, timeout=60, every=1)
    left = [p.pid for p in psutil.process_iter(["cmdline"])
            if app_id and any(app_id in part for part in p.info["cmdline"] or [])]
    return {"output": output, "app_id": app_id, "model": model, "left": left,
            "containers": (before, yarn.containers()),
            "driver": am_log_tail(yarn, app_id, lines=None)}


def test_the_application_finishes_succeeded(submitted):
    assert submitted["app_id"]
    assert "final status: SUCCEEDED" in submitted["output"]


def test_the_driver_runs_the_shipped_python_in_the_applicationmasters_container(submitted):
    driver = re.search(r"driver: python (\S+)", submitted["driver"])
    assert driver, submitted["driver"]
    assert f"{submitted['app_id']}/" in driver.group(1)
    assert driver.group(1).endswith("/environment/bin/python")


def test_the_model_on_hdfs_learned_the_line(submitted):
    import tensorflow as tf

    from tfrecord_io import tf as tfr

    tfr.register_filesystems()
    model = tf.saved_model.load(submitted["model"])
    got = model.predict(tf.constant([[-1.0], [0.0], [0.5]])).numpy().ravel()
    assert got == pytest.approx([-1.0, 1.0, 2.0], abs=0.1)


def test_no_container_or_process_of_the_application_is_left(submitted):
    before, after = submitted["containers"]
    assert after == before
    assert submitted["left"] == []
