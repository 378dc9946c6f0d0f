"""cluster.run in sync mode (MultiWorkerMirroredStrategy) on a real local-cluster: start, run,
finish, and leave nothing behind."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

import pytest

from tfrecord_io import cluster

import cluster_programs
from processes import alive, listening_ports, node_processes, spec_ports


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Finished:
    name: str
    control_port: int
    nodes: dict = field(default_factory=dict)
    log_lines: list = field(default_factory=list)
    processes_after: list = field(default_factory=list)
    listening_after: set = field(default_factory=set)


@pytest.fixture(scope="module")
def finished(sc, tmp_path_factory):
    """One two-worker sync cluster run to its end, and what was left afterwards."""
    out = tmp_path_factory.mktemp("sync")
    handler = _Collect()
    logger = logging.getLogger("tfrecord_io.cluster")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        c = cluster.run(
            sc, cluster_programs.record, {"out": str(out), "allreduce": True},
            num_workers=2, env={"CLUSTER_TEST_VAR": "set by the test"}, keras="legacy",
        )
        c.wait(timeout=300)
        c.shutdown()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    result = Finished(c.name, int(c.control_address.rsplit(":", 1)[1]), log_lines=handler.lines)
    for path in out.glob("*.json"):
        result.nodes[path.stem] = json.loads(path.read_text())
    result.processes_after = node_processes(c.name)
    result.listening_after = listening_ports()
    return result


def test_every_worker_runs_main_fun_once(finished):
    assert sorted(finished.nodes) == ["worker-0", "worker-1"]


def test_worker_0_is_the_chief(finished):
    assert finished.nodes["worker-0"]["is_chief"] is True
    assert finished.nodes["worker-1"]["is_chief"] is False


def test_tf_config_names_both_workers_and_is_in_the_environment(finished):
    spec = finished.nodes["worker-0"]["cluster_spec"]
    assert list(spec) == ["worker"] and len(spec["worker"]) == 2
    for index in (0, 1):
        node = finished.nodes[f"worker-{index}"]
        assert node["tf_config"] == {"cluster": spec, "task": {"type": "worker", "index": index}}
        assert node["env_tf_config"] == node["tf_config"]
        assert node["num_workers"] == 2 and node["attempt"] == 0


def test_workers_bind_distinct_ports_on_the_executor_address(finished):
    addresses = finished.nodes["worker-0"]["cluster_spec"]["worker"]
    assert len(set(addresses)) == 2
    assert all(a.startswith("127.0.0.1:") for a in addresses)


def test_strategy_all_reduces_across_the_workers(finished):
    # worker 0 contributes 1, worker 1 contributes 2
    assert finished.nodes["worker-0"]["allreduce"] == 3.0
    assert finished.nodes["worker-1"]["allreduce"] == 3.0


def test_node_environment_has_user_env_and_legacy_keras(finished):
    for node in finished.nodes.values():
        assert node["user_env"] == "set by the test"
        assert node["legacy_keras"] == "1"
        assert node["cuda"] is None  # no GPUs assigned by Spark


def test_a_node_asking_for_legacy_keras_forks_with_tf_keras_as_tf_keras(finished):
    # The executors' daemon preloaded TensorFlow without TF_USE_LEGACY_KERAS, and both Keras
    # packages: the node is a fork of its worker, and tf.keras is tf-keras all the same.
    for node in finished.nodes.values():
        assert "-m tfrecord_io.cluster.node " not in node["command_line"]
        assert node["keras_package"] == "tf_keras"
        assert node["layers_package"] == "tf_keras"


def test_each_node_process_leads_its_own_process_group(finished):
    for node in finished.nodes.values():
        assert node["pgid"] == node["pid"]


def test_node_output_reaches_the_driver_log_prefixed_by_node(finished):
    assert "[worker:0] hello from worker:0" in finished.log_lines
    assert "[worker:1] hello from worker:1" in finished.log_lines


def test_no_node_process_is_left_after_wait(finished):
    pids = [n["pid"] for n in finished.nodes.values()]
    assert finished.processes_after == []
    assert not any(alive(pid) for pid in pids)


def test_no_port_of_the_cluster_listens_after_wait(finished):
    ports = spec_ports(finished.nodes["worker-0"]["cluster_spec"]) | {finished.control_port}
    assert ports & finished.listening_after == set()


def test_the_same_spark_context_starts_another_cluster_at_once(finished, sc, tmp_path):
    c = cluster.run(sc, cluster_programs.record, {"out": str(tmp_path)}, num_workers=2)
    with c:
        c.wait(timeout=300)
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == ["worker-0", "worker-1"]
    assert node_processes(c.name) == []


