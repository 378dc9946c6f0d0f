"""GPU assignment from Spark's task resources, TensorBoard on the chief, the evaluator node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import psutil

from tfrecord_io import cluster

import cluster_programs
from processes import listening_ports, node_processes


def test_each_node_sees_only_the_gpu_spark_gave_its_task(tmp_path):
    here = Path(__file__).parent
    path = os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    done = subprocess.run([sys.executable, str(here / "gpu_app.py"), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("GPUS=")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    gpus = json.loads(lines[0][len("GPUS="):])
    assert sorted(gpus.values()) == ["0", "1"]  # one each, not both


def test_tensorboard_serves_log_dir_from_the_chief_while_the_cluster_runs(sc, tmp_path):
    flag = tmp_path / "go"
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    c = cluster.run(sc, cluster_programs.wait_for_file, {"out": str(tmp_path), "flag": str(flag)},
                    num_workers=2, tensorboard=True, log_dir=str(log_dir))
    with c:
        url = c.tensorboard_url
        assert url and url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
        flag.write_text("go")
        c.wait(timeout=300)
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    assert port not in listening_ports()
    boards = [p for p in psutil.process_iter(["cmdline"])
              if str(log_dir) in " ".join(p.info["cmdline"] or [])]
    assert boards == []
    assert node_processes(c.name) == []


def test_evaluator_runs_main_fun_beside_the_training_cluster(sc, tmp_path):
    with cluster.run(sc, cluster_programs.record, {"out": str(tmp_path)}, num_workers=2,
                     evaluator=True) as c:
        c.wait(timeout=300)
    evaluator = json.loads((tmp_path / "evaluator-0.json").read_text())
    assert evaluator["job_name"] == "evaluator" and evaluator["is_chief"] is False
    assert evaluator["tf_config"]["task"] == {"type": "evaluator", "index": 0}
    assert list(evaluator["cluster_spec"]) == ["worker"]  # not part of the training cluster
    nodes = sorted(p.stem for p in tmp_path.glob("*.json"))
    assert nodes == ["evaluator-0", "worker-0", "worker-1"]
